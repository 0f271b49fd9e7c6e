/**
 * The vss admin operations engine (inside `lattice vss admin`, `lattice vss` and `lattice up`):
 * the ModelLifecycle the HTTP API calls, the outbox relay, the admin consumers with their waiter,
 * and the reset scheduler, over adapters the caller owns (the composition root opens and closes
 * them: `stop()` stops this engine's loops and consumers, nothing more).
 *
 * Operation kinds run by their registered plans (step-registry.ts): RESET_MODEL, DELTA_MODEL,
 * TRIGGER_MODEL_MACHINE, FILL_VARIANT, PROMOTE_VARIANT and PROMOTE_MODEL here; more through
 * `plans`. An operation of a kind without a plan is accepted and waits (PENDING) for one.
 * Promotion needs `productionVectorDb` (the production cluster's vector DB); without it a promotion
 * is refused with FAILED_PRECONDITION naming the setting.
 */
import { describeError, isLatticeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { Metrics } from '../../../platform/metrics/index.js';
import type { Queue } from '../../../platform/queue/index.js';
import type { SqlClient } from '../../../platform/sql/index.js';
import type { VectorDb } from '../../../platform/vectordb/index.js';
import { collectionName, type LiveRecallSource } from '../../model/index.js';
import { openVssStore, type Variant, type VectorDbType, type VssStore } from '../../store/index.js';
import type { JobRunner } from '../jobs/index.js';
import { AdminMetrics } from './admin-metrics.js';
import { OperationWorker, type StepEvent } from './operation-worker.js';
import { type AdminLifecycle, OperationsLifecycle } from './operations-lifecycle.js';
import { OutboxRelay } from './outbox-relay.js';
import type { RecallGateSettings } from './recall-gate.js';
import { AUTO_ROLLBACK_DEFAULTS, type AutoRollbackSettings, watchLiveRecall } from './recall-watch.js';
import { ResetScheduler } from './reset-scheduler.js';
import { RetiredVersionSweeper } from './retired-versions.js';
import { type OperationPlan, StepRegistry } from './step-registry.js';
import { deltaModelPlan } from './steps/delta-model.js';
import { fillVariantPlan } from './steps/fill-variant.js';
import { promoteModelPlan } from './steps/promote-model.js';
import { promoteVariantPlan } from './steps/promote-variant.js';
import { resetModelPlan } from './steps/reset-model.js';
import { triggerModelMachinePlan } from './steps/trigger-model-machine.js';
import { VectorDbs } from './vector-dbs.js';

export interface AdminEngineOptions {
  /** The SQL database (the vss store is migrated and opened on it); or `store`, already open. */
  sql?: SqlClient;
  store?: VssStore;
  queue: Queue;
  /** This process's vector database, and the kind variants name it by. */
  vectorDb: VectorDb;
  vectorDbType: VectorDbType;
  /** Further vector databases this admin reaches (variants on them get their collections there). */
  otherVectorDbs?: Partial<Record<VectorDbType, VectorDb>>;
  /**
   * The production cluster's vector DB (`vss.clusters.production`): promoted variants' collections
   * live there. Absent: promotion is refused (FAILED_PRECONDITION).
   */
  productionVectorDb?: VectorDb;
  /**
   * How long a promotion waits for the consumers and serving to see a change of the variants
   * before relying on it, ms: longer than the consumers' `catalogTtlMs` (5,000) and serving's
   * configuration reload. Default 10,000.
   */
  promoteSettleMs?: number;
  jobRunner: JobRunner;
  /** `vss.consumers.embeddingsTopic` and `.partitions`: where ingestion jobs publish. */
  embeddingsTopic: string;
  partitions: number;
  /** `vss.admin.operationsTopic` and `.group`. */
  operationsTopic: string;
  group: string;
  /** `vss.admin.pollIntervalMs`: outbox relay and waiting steps. */
  pollIntervalMs: number;
  /** `vss.admin.scheduleIntervalMs`; 0 turns scheduled resets off. */
  scheduleIntervalMs: number;
  /** Partitions of the operations topic when this engine creates it; default 4. */
  operationsPartitions?: number;
  metrics: Metrics;
  logger: Logger;
  /** The scheduler's clock, ms since the epoch; default Date.now. */
  now?: () => number;
  /** Test seam: told after each committed transition of an operation (awaited). */
  onStep?: (event: StepEvent) => void | Promise<void>;
  /** Plans of further operation kinds (promotion). */
  plans?: readonly OperationPlan[];
  /** Indexed share of the points at which indexing is complete; default 0.95 (vss.md). */
  indexedThreshold?: number;
  /** The reset's recall gate (`vss.admin.recallSampleSize`, `.recallK`); default RECALL_GATE_DEFAULTS. */
  recallGate?: RecallGateSettings;
  /**
   * `vss.admin.rollbackGraceMs`: how long a version is kept after its variants flipped away from it,
   * so rollback-model can serve it again; then the engine's sweep drops it. Default 0 here (no
   * rollback window: dropped once page walks are done with it); the service's setting defaults to 1 h.
   */
  rollbackGraceMs?: number;
  /** How often the sweep of retired versions (and the live recall watch) runs, ms; default max(pollIntervalMs, 1,000). */
  sweepIntervalMs?: number;
  /**
   * Serving's live recall samples (storeLiveRecall: as every serving process records them in SQL):
   * with them, a model whose live recall stays below a variant's `min_recall` is rolled back by
   * itself (recall-watch.ts). Absent: no watch.
   */
  liveRecall?: LiveRecallSource;
  /** `vss.admin.autoRollback`; default AUTO_ROLLBACK_DEFAULTS. */
  autoRollback?: AutoRollbackSettings;
}

export interface AdminEngine {
  readonly lifecycle: AdminLifecycle;
  readonly registry: StepRegistry;
  /** One scheduler round now: the reset operation ids it queued. */
  scheduleNow(): Promise<string[]>;
  /** One waiter round now: nudges every unfinished operation. */
  pollNow(): Promise<void>;
  /** One sweep of retired versions now: those whose rollback grace period is over are dropped. */
  sweepNow(): Promise<string[]>;
  /** One look of the live recall watch now: the models it rolled back (none without `liveRecall`). */
  watchNow(): Promise<string[]>;
  /**
   * The index of the collection a READY variant serves: its points, how many are indexed, and whether
   * that is below the indexed threshold (the variant is degraded). Undefined for a variant that is not
   * READY, or whose collection or vector DB this admin cannot see.
   */
  servedIndex(variant: Variant): Promise<ServedIndex | undefined>;
  /** Stops the scheduler, the relay and the admin consumers (running steps settle). */
  stop(): Promise<void>;
}

export interface ServedIndex {
  points: number;
  indexedPoints: number;
  degraded: boolean;
}

/** The default plans: every operation kind. */
export function defaultPlans(): OperationPlan[] {
  return [
    resetModelPlan,
    deltaModelPlan,
    triggerModelMachinePlan,
    fillVariantPlan,
    promoteVariantPlan,
    promoteModelPlan,
  ];
}

export async function startAdminEngine(options: AdminEngineOptions): Promise<AdminEngine> {
  const store = options.store ?? (options.sql === undefined ? undefined : await openVssStore(options.sql));
  if (store === undefined) throw new TypeError('startAdminEngine needs `sql` or `store`');
  const { queue, logger } = options;
  const registry = new StepRegistry();
  // A caller's plan of a kind replaces the default one.
  const extra = options.plans ?? [];
  for (const plan of defaultPlans()) if (!extra.some((p) => p.kind === plan.kind)) registry.register(plan);
  for (const plan of extra) registry.register(plan);
  const vectorDbs = new VectorDbs(
    options.vectorDbType,
    options.vectorDb,
    options.otherVectorDbs,
    options.productionVectorDb,
  );
  const metrics = new AdminMetrics(options.metrics);
  await queue.ensureTopic(options.operationsTopic, { partitions: options.operationsPartitions ?? 4 });

  const relay = new OutboxRelay({ store, queue, pollIntervalMs: options.pollIntervalMs, logger });
  const onQueued = () => void relay.relay();
  const rollbackGraceMs = options.rollbackGraceMs ?? 0;
  const lifecycle = new OperationsLifecycle({
    store,
    vectorDbs,
    registry,
    operationsTopic: options.operationsTopic,
    onQueued,
    rollbackGraceMs,
    metrics,
  });
  const sweepIntervalMs = options.sweepIntervalMs ?? Math.max(options.pollIntervalMs, 1_000);
  const liveRecall = options.liveRecall;
  let watching: Promise<string[]> | undefined;
  const watchNow = (): Promise<string[]> => {
    if (liveRecall === undefined) return Promise.resolve([]);
    watching ??= watchLiveRecall({
      ...AUTO_ROLLBACK_DEFAULTS,
      ...options.autoRollback,
      store,
      lifecycle,
      source: liveRecall,
      logger,
    })
      .catch((err: unknown) => {
        logger.warn({ err: describeError(err) }, 'vss admin: live recall watch failed; trying again later');
        return [] as string[];
      })
      .finally(() => {
        watching = undefined;
      });
    return watching;
  };
  const watchTimer =
    liveRecall === undefined || rollbackGraceMs <= 0
      ? undefined
      : setInterval(() => void watchNow(), sweepIntervalMs);
  watchTimer?.unref();
  const sweeper = new RetiredVersionSweeper({
    store,
    vectorDbs,
    graceMs: rollbackGraceMs,
    logger,
    intervalMs: sweepIntervalMs,
  });
  const indexedThreshold = options.indexedThreshold ?? 0.95;
  const worker = new OperationWorker({
    services: {
      store,
      vectorDbs,
      jobRunner: options.jobRunner,
      embeddingsTopic: options.embeddingsTopic,
      partitions: options.partitions,
      metrics,
      logger,
      indexedThreshold,
      startedJobs: new Set(),
      promoteSettleMs: options.promoteSettleMs ?? 10_000,
      ...(options.recallGate === undefined ? {} : { recallGate: options.recallGate }),
      rollbackGraceMs,
    },
    registry,
    queue,
    topic: options.operationsTopic,
    group: options.group,
    pollIntervalMs: options.pollIntervalMs,
    logger,
    ...(options.onStep === undefined ? {} : { onStep: options.onStep }),
  });
  const scheduler = new ResetScheduler({
    store,
    vectorDbs,
    operationsTopic: options.operationsTopic,
    intervalMs: options.scheduleIntervalMs,
    logger,
    now: options.now ?? Date.now,
    onQueued,
  });
  const servedIndex = async (variant: Variant): Promise<ServedIndex | undefined> => {
    if (variant.state !== 'READY' || variant.readVersion === null) return undefined;
    try {
      const info = await vectorDbs
        .forVariant(variant)
        .collectionInfo(collectionName(variant.entity, variant.modelName, variant.readVersion));
      const { points, indexedPoints } = info;
      return { points, indexedPoints, degraded: points > 0 && indexedPoints / points < indexedThreshold };
    } catch (err) {
      if (isLatticeError(err, 'NOT_FOUND') || isLatticeError(err, 'FAILED_PRECONDITION')) return undefined;
      throw err;
    }
  };
  await worker.start();
  relay.start();
  scheduler.start();
  sweeper.start();
  let stopping: Promise<void> | undefined;
  return {
    lifecycle,
    registry,
    scheduleNow: () => scheduler.tick(),
    pollNow: () => worker.poll(),
    sweepNow: () => sweeper.sweep(),
    watchNow,
    servedIndex,
    stop: () => {
      stopping ??= (async () => {
        await scheduler.stop();
        if (watchTimer !== undefined) clearInterval(watchTimer);
        await watching;
        await sweeper.stop();
        await relay.stop();
        await worker.stop();
      })();
      return stopping;
    },
  };
}
