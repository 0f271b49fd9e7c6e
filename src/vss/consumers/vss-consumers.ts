/**
 * The vss consumers component (`lattice vss consumers`, and inside `lattice vss` / `lattice up`):
 * ensures the vss topics, then runs the consumer runner on each, in one durable group,
 *
 * - the ingestion topic: embedding events and EOF markers (IngestionHandler over the embedding and
 *   EOF processors, which share one model catalog);
 * - the real-time topic: attribute events (RealtimeProcessor);
 *
 * and the periodic sweep of expired embedding-store rows. Built from adapters the caller owns (the
 * composition root opens and closes them): `stop()` drains the runners and the sweep, nothing more.
 */
import type { Logger } from '../../platform/logging/index.js';
import type { Metrics } from '../../platform/metrics/index.js';
import type { Queue } from '../../platform/queue/index.js';
import type { SqlClient } from '../../platform/sql/index.js';
import type { VectorDb } from '../../platform/vectordb/index.js';
import { ClusterVectorDbs } from '../model/index.js';
import { type IngestionRecord, openVssStore, type VectorDbType } from '../store/index.js';
import { ConsumerRunner } from './consumer-runner.js';
import { EmbeddingProcessor } from './embedding-processor.js';
import { EofProcessor } from './eof-processor.js';
import { ExpirySweep } from './expiry-sweep.js';
import { IngestionHandler } from './ingestion-handler.js';
import { IngestionProgress } from './ingestion-progress.js';
import { ModelCatalog } from './model-catalog.js';
import { RealtimeProcessor } from './realtime-processor.js';
import { type ConsumerSettings, ensureVssTopics, retrySettings } from './vss-topics.js';

export interface VssConsumersOptions {
  sql: SqlClient;
  /** The experiment cluster's vector DB. */
  vectorDb: VectorDb;
  /**
   * Vector DBs by cluster: each variant's points are written to its cluster's (a variant being
   * promoted to production too). Absent: `vectorDb` alone, as experiment.
   */
  vectorDbs?: ClusterVectorDbs;
  /**
   * How long the consumers use a model's registration (variants, clusters) before reading it again,
   * ms; default 5,000. Admin's promotion waits longer than this (its `promoteSettleMs`) before it
   * relies on every consumer seeing a change.
   */
  catalogTtlMs?: number;
  /** Which kind `vectorDb` is, as variants name it: points of variants on another kind are not written here. */
  vectorDbType: VectorDbType;
  queue: Queue;
  /** `vss.consumers` of the settings: topics, group, partitions, batching, retries. */
  settings: ConsumerSettings;
  metrics: Metrics;
  logger: Logger;
  /** Time between sweeps of expired embedding-store rows, ms; default 60,000. */
  sweepIntervalMs?: number;
  /** Told of each ingestion job completed here (after its completion is committed). */
  onJobComplete?: (record: IngestionRecord) => void;
  /**
   * The partitions of each topic this process consumes; default all. Processes of one group must
   * split the partitions between them (a partition consumed twice at once loses its order).
   */
  partitions?: readonly number[];
}

export interface VssConsumers {
  /** The topics consumed: ingestion, then real-time. */
  readonly topics: readonly string[];
  readonly group: string;
  /** Partitions of each topic. */
  readonly partitions: number;
  /** The partitions this process consumes, ascending. */
  readonly ownPartitions: readonly number[];
  /**
   * Stops taking messages, lets the batches being applied settle (what was not yet applied goes
   * back to the queue for redelivery) and stops the sweep. The adapters stay open.
   */
  stop(): Promise<void>;
}

export async function startVssConsumers(options: VssConsumersOptions): Promise<VssConsumers> {
  const { sql, vectorDb, vectorDbType, queue, settings, metrics, logger } = options;
  const store = await openVssStore(sql);
  const [ingestionTopic] = await ensureVssTopics(queue, settings);
  const progress = new IngestionProgress(metrics);
  const catalog = new ModelCatalog(
    store,
    options.catalogTtlMs === undefined ? {} : { ttlMs: options.catalogTtlMs },
  );
  const vectorDbs = options.vectorDbs === undefined ? {} : { vectorDbs: options.vectorDbs };
  const ingestion = new IngestionHandler(
    new EmbeddingProcessor({ store, vectorDb, ...vectorDbs, vectorDbType, catalog, logger }),
    new EofProcessor({
      store,
      // The topic's own count: fixed when it was created, and ensureVssTopics refuses another.
      partitions: ingestionTopic!.partitions,
      catalog,
      logger,
      onComplete: (record) => {
        progress.completed(record);
        options.onJobComplete?.(record);
      },
    }),
  );
  const common = {
    queue,
    group: settings.group,
    batchSize: settings.batchSize,
    lingerMs: settings.lingerMs,
    retry: retrySettings(settings),
    metrics,
    logger,
    ...(options.partitions === undefined ? {} : { partitions: options.partitions }),
  };
  const runners: { close(): Promise<void>; readonly partitions: number[] }[] = [];
  const sweep = new ExpirySweep(store, {
    vectorDbs: options.vectorDbs ?? ClusterVectorDbs.single(vectorDb),
    intervalMs: options.sweepIntervalMs,
    logger,
    onSwept: sweptCounter(metrics),
  });
  try {
    runners.push(
      await ConsumerRunner.start({
        ...common,
        topic: settings.embeddingsTopic,
        handler: progress.track(ingestion),
      }),
    );
    runners.push(
      await ConsumerRunner.start({
        ...common,
        topic: settings.realtimeTopic,
        handler: new RealtimeProcessor({ store, vectorDb, ...vectorDbs, logger }),
      }),
    );
  } catch (err) {
    await Promise.all(runners.map((runner) => runner.close()));
    throw err;
  }
  sweep.start();
  let stopping: Promise<void> | undefined;
  return {
    topics: [settings.embeddingsTopic, settings.realtimeTopic],
    group: settings.group,
    partitions: ingestionTopic!.partitions,
    ownPartitions: runners[0]!.partitions,
    stop: () => {
      stopping ??= (async () => {
        await Promise.all(runners.map((runner) => runner.close()));
        await sweep.stop();
      })();
      return stopping;
    },
  };
}

function sweptCounter(metrics: Metrics): (deleted: number) => void {
  const expired = metrics.counter(
    'vss_embeddings_expired_total',
    'vss embedding-store rows past their TTL deleted by the periodic sweep',
  );
  return (deleted) => {
    if (deleted > 0) expired.inc(undefined, deleted);
  };
}
