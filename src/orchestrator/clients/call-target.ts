/** The external services the orchestrator calls; a metric label. */
export type ExternalService = 'feature_store' | 'model_server' | 'numerix' | 'vss';

/** One outbound call: which service, which endpoint (`host:port`), which RPC (e.g. `ModelInfer`). */
export interface CallTarget {
  service: ExternalService;
  target: string;
  method: string;
}
