/** The JSON the console reads (docs/console.md lists the routes; the brief's contract names them). */

export interface Session {
  auth: boolean;
  caller: string;
}

export interface Parts {
  orchestrator: boolean;
  vss: { admin: boolean; serving: boolean };
  reference: boolean;
}

export interface Problem {
  path: string;
  message: string;
}

export type ConfigState = 'live' | 'rejected' | 'invalid' | 'removed';

export interface ModelSummary {
  model_config_id: string;
  state: ConfigState;
  version?: string;
  loaded_at?: string;
  rejected?: { version: string; at: string; error: string; problems?: Problem[] };
  changed_at?: string;
  revisions?: number;
}

export interface ModelDetail {
  model_config_id: string;
  state: ConfigState;
  document: unknown;
  live_document?: unknown;
  version?: string;
  rejected?: ModelSummary['rejected'];
  /** The newest revision recorded: sent back as `expected_revision`, so a change made meanwhile is refused. */
  revision?: number;
}

export interface Revision {
  revision: number;
  at: string;
  author: string;
  comment: string;
  action: 'apply' | 'clone' | 'rollback' | 'delete' | 'external';
  document: unknown;
}

export type NodeKind = 'retriever' | 'feature_init' | 'feature' | 'model' | 'compute';

export interface DagNode {
  id: string;
  kind: NodeKind;
  inputs: string[];
  outputs: string[];
  deadline_ms?: number;
  endpoint?: string;
  required: boolean;
  /** Retrievers: the vss entity, model and variant searched, candidates asked (k) and kept (quota). */
  entity?: string;
  vss_model?: string;
  variant?: string;
  k?: number;
  quota?: number;
}

export interface Dag {
  nodes: DagNode[];
  edges: { from: string; to: string }[];
}

export interface RateStats {
  requests_per_s: number;
  error_rate: number;
  p50_ms: number;
  p99_ms: number;
}

export interface ModelStats extends RateStats {
  model_config_id: string;
  errors_per_s: number;
  components: (RateStats & { name: string; kind: string })[];
  /** With a sticky A/B split: what each arm's config served of this config's requests. */
  arms?: (RateStats & { model_config_id: string; errors_per_s: number })[];
}

/** GET /api/v1/models/{id}/shadows/{shadow}: the comparison figures of a shadow pair. */
export interface ShadowFigures {
  primary: string;
  shadow: string;
  active: boolean;
  percentage: number | null;
  k: number | null;
  sampled: number;
  dropped: { queue_full: number; unknown_shadow: number };
  failed: number;
  compared: number;
  window: number;
  overlap_at_k: number | null;
  kendall_tau: number | null;
  mean_abs_diff: number | null;
  max_abs_diff: number | null;
  latency_diff_ms: Record<string, number>;
}

/** The parts of a config document the config page shows besides its DAG. */
export interface ShadowConfig {
  model_config_id: string;
  percentage: number;
  k?: number;
}
export interface SplitConfig {
  key: string;
  salt?: string;
  arms: { model_config_id: string; weight: number }[];
}

export interface StatsAnswer {
  window_s: number;
  models: ModelStats[];
}

export interface Validation {
  valid: boolean;
  problems: Problem[];
}

// vss admin API (src/vss/admin/api/representations.ts)

export interface VersionCounts {
  version: number;
  status: string;
  ingested_count: number;
  failed_count: number;
  indexed_count: number;
}

export interface VssVariant {
  entity: string;
  model_name: string;
  variant: string;
  vss_filter: unknown;
  vectordb_type: string;
  state: string;
  failure_reason: string | null;
  read_version: number | null;
  write_version: number | null;
  min_recall: number;
  cluster: string;
  ef_search: number | null;
  read_counts: VersionCounts | null;
  write_counts: VersionCounts | null;
  rollback?: unknown;
  served_index?: { points: number; indexed_points: number; degraded?: boolean };
}

/** A registered store, as the admin API's GET /stores lists it. */
export interface VssStore {
  store_id: number;
  entity: string;
  db_conf_id: string;
  embeddings_table: string;
  aggregator_table: string;
  created_at: string;
}

export interface VssModel {
  entity: string;
  model_name: string;
  store_id: number;
  model_config: { distance_function: string; vector_dimension: number };
  training_data_path: string;
  state: string;
  failure_reason: string | null;
  cluster: string;
  variants: VssVariant[];
  updated_at: string | null;
}

export interface VssVersion extends VersionCounts {
  failure_reason: string | null;
  recall: unknown;
  created_at: string | null;
  indexed_at: string | null;
}

export interface VssOperation {
  operation_id: string;
  kind: string;
  entity: string;
  model_name: string;
  variant: string | null;
  status: string;
  step: string | null;
  progress: unknown;
  attempts: number;
  last_error: string | null;
  result: unknown;
  payload: unknown;
  created_at: string | null;
  updated_at: string | null;
  finished_at: string | null;
}

export interface VssModelDetail extends VssModel {
  versions: VssVersion[];
  operations: VssOperation[];
}
