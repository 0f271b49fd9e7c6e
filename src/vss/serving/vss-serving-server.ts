/**
 * The vss serving component: `vss.v1.SimilaritySearch` over gRPC (with health, reflection, metrics
 * and optional caller-token auth from GrpcServer), on a SQL store, a vector DB and, optionally, a
 * distributed cache. The caller owns `sql`, `vectorDb` and `cache` (they are not closed by `stop()`).
 */
import type { Cache } from '../../platform/cache/index.js';
import {
  type AdmissionLimits,
  type CallerAuthOptions,
  GrpcServer,
  type LocalChannel,
} from '../../platform/grpc/index.js';
import { createLogger, type Logger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import type { SqlClient } from '../../platform/sql/index.js';
import type { VectorDb } from '../../platform/vectordb/index.js';
import { ClusterVectorDbs } from '../model/index.js';
import { openVssStore, VSS_CONFIG_CHANNEL } from '../store/index.js';
import { classifySimilaritySearch } from './admission-class.js';
import { ServingConfigRepository } from './config-repository.js';
import { PageTokens } from './page-token.js';
import { RecallSampler } from './recall-sampler.js';
import { ResultCache } from './result-cache.js';
import { ServedIndexHealth } from './served-index-health.js';
import { ServingMetrics } from './serving-metrics.js';
import { similaritySearchHandlers } from './similarity-search-handlers.js';
import { SimilaritySearchAnswers } from './similarity-search-service.js';
import { VectorDbGuard, type VectorDbGuardOptions } from './vector-db-guard.js';

export interface VssServingOptions {
  sql: SqlClient;
  /** The experiment cluster's vector DB (the one vector DB when `vectorDbs` is absent). */
  vectorDb: VectorDb;
  /**
   * Vector DBs by cluster: a variant is searched on its `cluster`'s (promoted ones on production).
   * Absent: `vectorDb` alone, as experiment.
   */
  vectorDbs?: ClusterVectorDbs;
  /** The distributed result cache level; absent: in-process only. */
  cache?: Cache;
  host: string;
  /** 0 picks a free port. */
  port: number;
  logger?: Logger;
  metrics?: Metrics;
  auth?: CallerAuthOptions;
  maxMessageBytes?: number;
  shutdownGraceMs?: number;
  /** Deadline of calls that carry none (GrpcServer's default when unset). */
  defaultDeadlineMs?: number;
  /** Unary calls in flight before RESOURCE_EXHAUSTED (GrpcServer's default when unset). */
  maxInFlightCalls?: number;
  /** Per-class concurrency and queues (settings `grpc.admission`; GrpcServer's defaults when unset). */
  admission?: AdmissionLimits;
  /**
   * Safety poll of the configuration, ms: changes arrive by LISTEN/NOTIFY from the SQL store, so the
   * default is 30,000 (1,000 if the store cannot LISTEN); 0: notifications and explicit refresh only.
   */
  refreshIntervalMs?: number;
  /** A configuration reload not finished by then fails, is logged and retried; default 10,000 ms. */
  refreshTimeoutMs?: number;
  /** HMAC key of page tokens; replicas behind one address must share it. Default: random per process. */
  pageTokenSecret?: string;
  /** Share of first-page queries re-run exactly for `avg_recall`; default 0.01. */
  recallSampleRate?: number;
  /** Timeout and circuit breaker around vector DB calls. */
  vectorDbGuard?: VectorDbGuardOptions;
  /** Bytes of the in-process result cache; default 64 MiB. */
  memoryCacheBytes?: number;
  /** How often READY variants' indexed shares are read (served-index-health.ts), ms; default 5,000. */
  indexHealthIntervalMs?: number;
  /**
   * Listen at once but answer UNAVAILABLE until `open()`: the process starts its other parts meanwhile
   * (GrpcServerOptions.startClosed).
   */
  startClosed?: boolean;
}

export interface VssServing {
  readonly port: number;
  readonly config: ServingConfigRepository;
  readonly servingMetrics: ServingMetrics;
  readonly recall: RecallSampler;
  /** READY variants whose served collection is indexed below the threshold (degraded). */
  readonly indexHealth: ServedIndexHealth;
  /**
   * Its methods for callers in this process without the network (an orchestrator beside it in
   * `lattice up`); undefined with caller tokens on, so no token check is skipped.
   */
  readonly local: LocalChannel | undefined;
  /** Serves calls after a `startClosed` start. */
  open(): void;
  /** Stops taking calls, drains in-flight ones, stops polling the config. */
  stop(): Promise<void>;
}

export async function startVssServing(options: VssServingOptions): Promise<VssServing> {
  const logger = options.logger ?? createLogger('vss-serving');
  const metrics = options.metrics ?? new Metrics();
  const store = await openVssStore(options.sql);
  const config = new ServingConfigRepository(store, {
    refreshIntervalMs: options.refreshIntervalMs,
    refreshTimeoutMs: options.refreshTimeoutMs,
    changes: (onChange, onError) => options.sql.listen(VSS_CONFIG_CHANNEL, onChange, onError),
    onRefreshError: (err) =>
      logger.warn({ err }, 'vss serving: configuration reload failed; keeping the last one, retrying'),
  });
  await config.start();
  const servingMetrics = new ServingMetrics(metrics);
  const recall = new RecallSampler(options.vectorDb, servingMetrics, {
    sampleRate: options.recallSampleRate,
    onError: (err) => logger.debug({ err }, 'vss serving: recall sample failed'),
    // Into SQL, where the admin's automatic rollback reads every serving process's samples.
    record: (labels, version, value) =>
      store.liveRecall.record(
        { entity: labels.entity, modelName: labels.model, variant: labels.variant },
        version,
        value,
      ),
  });
  // Every distributed-cache failure is counted; logged at most once per 10 s (a Redis outage fails
  // every look-up, and one line per call would flood the log).
  let lastCacheLog = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  const cache = new ResultCache({
    distributed: options.cache,
    memoryMaxBytes: options.memoryCacheBytes,
    onError: (failure, err) => {
      servingMetrics.cacheError(failure);
      unlogged++;
      const now = Date.now();
      if (now - lastCacheLog < 10_000) return;
      logger.warn(
        { err, failure, failures: unlogged },
        'vss serving: distributed result cache failed; answering without it',
      );
      lastCacheLog = now;
      unlogged = 0;
    },
  });
  const grpc = new GrpcServer({
    name: 'vss-serving',
    host: options.host,
    port: options.port,
    logger,
    metrics,
    auth: options.auth,
    maxMessageBytes: options.maxMessageBytes,
    reflectionProtos: ['vss/v1/vss.proto'],
    shutdownGraceMs: options.shutdownGraceMs,
    defaultDeadlineMs: options.defaultDeadlineMs,
    maxInFlightCalls: options.maxInFlightCalls,
    admission: options.admission,
    startClosed: options.startClosed ?? false,
  });
  const vectorDbs = options.vectorDbs ?? ClusterVectorDbs.single(options.vectorDb);
  const indexHealth = new ServedIndexHealth({
    store,
    vectorDbs,
    metrics,
    logger,
    ...(options.indexHealthIntervalMs === undefined ? {} : { intervalMs: options.indexHealthIntervalMs }),
  });
  grpc.addUnaryService(
    SimilaritySearchAnswers,
    similaritySearchHandlers({
      store,
      config,
      vectorDbs,
      guard: new VectorDbGuard(options.vectorDbGuard),
      cache,
      tokens: new PageTokens(options.pageTokenSecret),
      metrics: servingMetrics,
      recall,
      maxMessageBytes: options.maxMessageBytes,
    }),
    classifySimilaritySearch,
  );
  let port: number;
  try {
    await indexHealth.start();
    port = await grpc.start();
  } catch (err) {
    indexHealth.stop();
    await config.stop();
    await cache.close();
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    port,
    config,
    servingMetrics,
    recall,
    indexHealth,
    local: grpc.localChannel(),
    open: () => grpc.open(),
    stop: () => {
      indexHealth.stop();
      stopping ??= grpc.stop().then(async () => {
        await config.stop();
        await recall.whenIdle();
        await cache.close();
      });
      return stopping;
    },
  };
}
