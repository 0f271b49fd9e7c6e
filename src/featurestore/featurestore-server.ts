import { FeatureWriterServiceService } from '../gen/featurestore/v1/writer.js';
import { FeatureServiceService } from '../gen/retrieve/retrieve.js';
import {
  type AdmissionLimits,
  type CallerAuthOptions,
  GrpcServer,
  type LocalChannel,
} from '../platform/grpc/index.js';
import { createLogger, type Logger } from '../platform/logging/index.js';
import { Metrics } from '../platform/metrics/index.js';
import { FeatureRetriever } from './feature-retriever.js';
import { featureWriterHandlers } from './feature-writer-service.js';
import { FeatureRegistry } from './registry.js';
import { ServedRegistry } from './served-registry.js';
import type { FeatureStore } from './store.js';

export interface FeatureStoreServerOptions {
  /** What is served; a ServedRegistry when registered entities are kept across restarts. */
  registry: FeatureRegistry | ServedRegistry;
  store: FeatureStore;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port, returned by `startFeatureStore`. */
  port?: number;
  /** Unknown keys get the registry defaults instead of an empty `columns` list. */
  fillDefaults?: boolean;
  /**
   * Caller-token auth: caller id → token and the metadata header names (default `caller-id` /
   * `caller-token`). Off when absent or when `tokens` is empty.
   */
  auth?: { tokens: Record<string, string>; idHeader?: string; tokenHeader?: string };
  /** Most keys one query may ask for (default 10,000). */
  maxKeysPerQuery?: number;
  logger?: Logger;
  metrics?: Metrics;
  maxMessageBytes?: number;
  /** How long `stop()` lets in-flight calls finish (default 10 s). */
  shutdownGraceMs?: number;
  /** Deadline of calls that carry none (GrpcServer's default when unset). */
  defaultDeadlineMs?: number;
  /** Unary calls in flight before RESOURCE_EXHAUSTED (GrpcServer's default when unset). */
  maxInFlightCalls?: number;
  /** Per-class concurrency and queues (settings `grpc.admission`; GrpcServer's defaults when unset). */
  admission?: AdmissionLimits;
  /** Also close the store on `stop()` (default false: the caller owns it). */
  closeStore?: boolean;
}

export interface RunningFeatureStore {
  /** The bound port. */
  port: number;
  /** `host:port` to dial. */
  address: string;
  /** Its methods for callers in this process, without the network (undefined with caller-token auth). */
  local: LocalChannel | undefined;
  /** Stops taking calls, drains in-flight ones, then (with `closeStore`) closes the store. */
  stop(): Promise<void>;
}

/**
 * Serves `retrieve.FeatureService` (RetrieveFeatures, RetrieveDecodedResult) over `store` with the
 * semantics of `FeatureRetriever`, `featurestore.v1.FeatureWriterService` (loads into this store,
 * entities registered live), plus health and reflection, in this process.
 */
export async function startFeatureStore(options: FeatureStoreServerOptions): Promise<RunningFeatureStore> {
  const host = options.host ?? '127.0.0.1';
  const logger = options.logger ?? createLogger('featurestore', { level: 'warn' });
  const metrics = options.metrics ?? new Metrics();
  const auth: CallerAuthOptions | undefined = options.auth && {
    tokens: options.auth.tokens,
    idHeader: options.auth.idHeader ?? 'caller-id',
    tokenHeader: options.auth.tokenHeader ?? 'caller-token',
  };
  const served =
    options.registry instanceof FeatureRegistry ? new ServedRegistry(options.registry) : options.registry;
  const retriever = new FeatureRetriever(() => served.current, options.store, {
    fillDefaults: options.fillDefaults,
    maxKeys: options.maxKeysPerQuery,
    metrics,
    onUnreadableValue: (problem) =>
      logger.warn({ problem }, 'unreadable stored feature value served as default'),
  });
  const server = new GrpcServer({
    name: 'featurestore',
    host,
    port: options.port ?? 0,
    logger,
    metrics,
    auth,
    maxMessageBytes: options.maxMessageBytes,
    reflectionProtos: ['retrieve/retrieve.proto', 'featurestore/v1/writer.proto'],
    shutdownGraceMs: options.shutdownGraceMs,
    defaultDeadlineMs: options.defaultDeadlineMs,
    maxInFlightCalls: options.maxInFlightCalls,
    admission: options.admission,
  });
  server.addUnaryService(FeatureServiceService, {
    retrieveFeatures: (query) => retriever.retrieve(query),
    retrieveDecodedResult: (query) => retriever.retrieveDecoded(query),
  });
  server.addUnaryService(FeatureWriterServiceService, featureWriterHandlers(served, options.store));
  const port = await server.start();
  let stopping: Promise<void> | undefined;
  return {
    port,
    address: `${host.includes(':') ? `[${host}]` : host}:${port}`,
    local: server.localChannel(),
    stop: () => {
      stopping ??= (async () => {
        await server.stop();
        if (options.closeStore) await options.store.close();
      })();
      return stopping;
    },
  };
}
