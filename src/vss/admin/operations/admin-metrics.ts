/**
 * Metrics of the vss admin operations engine, on /metrics and StatsD like every platform metric:
 *
 * - `vss_admin_operations_started_total{kind}`: operations started (PENDING → RUNNING) and retried.
 * - `vss_admin_operations_succeeded_total{kind}`, `vss_admin_operations_failed_total{kind}`.
 * - `vss_admin_operation_progress{entity,model,kind}`: the latest progress (0..1) of the model's
 *   operation of that kind, as the engine records it.
 * - `vss_indexed_vector_ratio{entity,model,variant}`: indexed vectors ÷ points of the collection the
 *   variant reads (serves), from the vector DB's collection info, refreshed periodically. The spec's
 *   alert fires below 0.95: a served collection whose index fell behind.
 * - `vss_admin_indexing_ratio{entity,model,variant}`: the same ratio for the version an operation is
 *   indexing (not yet served), while it waits: progress, not an alert (a long build is normal).
 * - `vss_admin_step_seconds{kind,step}`: one run of a step (a waiting step's check counts as a run).
 * - `vss_version_recall{entity,model,variant,bucket}`: recall@k the reset's recall gate last measured
 *   on a new version, per filter-selectivity bucket (recall-gate.ts); the flip waits for every
 *   bucket to reach the variant's `min_recall`.
 * - `vss_recall_gate_failures_total{entity,model,variant}`: resets whose new version the gate refused.
 * - `vss_rollbacks_total{entity,model,reason}`: rollbacks to the previous version, `reason` `manual`
 *   (POST /rollback-model) or `live_recall` (the live recall stayed below `min_recall`).
 *
 * Label values come from the registered catalog (entity, model, variant names) and the code (kinds,
 * steps), never from request bodies.
 */
import type { CounterMetric, GaugeMetric, Metrics, TimingMetric } from '../../../platform/metrics/index.js';
import type { OperationKind } from '../../store/index.js';

export const ADMIN_METRIC_NAMES = {
  started: 'vss_admin_operations_started_total',
  succeeded: 'vss_admin_operations_succeeded_total',
  failed: 'vss_admin_operations_failed_total',
  progress: 'vss_admin_operation_progress',
  indexedRatio: 'vss_indexed_vector_ratio',
  indexingRatio: 'vss_admin_indexing_ratio',
  stepSeconds: 'vss_admin_step_seconds',
  versionRecall: 'vss_version_recall',
  recallGateFailures: 'vss_recall_gate_failures_total',
  rollbacks: 'vss_rollbacks_total',
} as const;

type VariantLabels = { entity: string; modelName: string; variant: string };

const stepBuckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class AdminMetrics {
  readonly #started: CounterMetric;
  readonly #succeeded: CounterMetric;
  readonly #failed: CounterMetric;
  readonly #progress: GaugeMetric;
  readonly #ratio: GaugeMetric;
  readonly #indexing: GaugeMetric;
  readonly #step: TimingMetric;
  readonly #versionRecall: GaugeMetric;
  readonly #gateFailures: CounterMetric;
  readonly #rollbacks: CounterMetric;

  constructor(metrics: Metrics) {
    this.#started = metrics.counter(ADMIN_METRIC_NAMES.started, 'vss admin operations started or retried', [
      'kind',
    ]);
    this.#succeeded = metrics.counter(ADMIN_METRIC_NAMES.succeeded, 'vss admin operations succeeded', [
      'kind',
    ]);
    this.#failed = metrics.counter(ADMIN_METRIC_NAMES.failed, 'vss admin operations failed', ['kind']);
    this.#progress = metrics.gauge(
      ADMIN_METRIC_NAMES.progress,
      'vss admin operation progress (0..1), latest operation of the kind per model',
      ['entity', 'model', 'kind'],
    );
    this.#ratio = metrics.gauge(
      ADMIN_METRIC_NAMES.indexedRatio,
      'vss indexed vectors / points of the collection a variant reads',
      ['entity', 'model', 'variant'],
    );
    this.#indexing = metrics.gauge(
      ADMIN_METRIC_NAMES.indexingRatio,
      'vss indexed vectors / points of the version an operation is indexing for a variant',
      ['entity', 'model', 'variant'],
    );
    this.#step = metrics.timing(
      ADMIN_METRIC_NAMES.stepSeconds,
      'vss admin operation step run time',
      ['kind', 'step'],
      stepBuckets,
    );
    this.#versionRecall = metrics.gauge(
      ADMIN_METRIC_NAMES.versionRecall,
      'vss recall@k of the version a reset last measured, per filter-selectivity bucket',
      ['entity', 'model', 'variant', 'bucket'],
    );
    this.#gateFailures = metrics.counter(
      ADMIN_METRIC_NAMES.recallGateFailures,
      'vss resets whose new version the recall gate refused (recall below min_recall)',
      ['entity', 'model', 'variant'],
    );
    this.#rollbacks = metrics.counter(
      ADMIN_METRIC_NAMES.rollbacks,
      'vss rollbacks of a model to its previous version, by reason (manual, live_recall)',
      ['entity', 'model', 'reason'],
    );
  }

  versionRecall(key: VariantLabels, bucket: string, recall: number): void {
    this.#versionRecall.set(
      { entity: key.entity, model: key.modelName, variant: key.variant, bucket },
      recall,
    );
  }

  recallGateFailed(key: VariantLabels): void {
    this.#gateFailures.inc({ entity: key.entity, model: key.modelName, variant: key.variant });
  }

  rolledBack(key: { entity: string; modelName: string }, reason: 'manual' | 'live_recall'): void {
    this.#rollbacks.inc({ entity: key.entity, model: key.modelName, reason });
  }

  started(kind: OperationKind): void {
    this.#started.inc({ kind });
  }

  succeeded(kind: OperationKind): void {
    this.#succeeded.inc({ kind });
  }

  failed(kind: OperationKind): void {
    this.#failed.inc({ kind });
  }

  progress(op: { entity: string; modelName: string; kind: OperationKind }, progress: number): void {
    this.#progress.set({ entity: op.entity, model: op.modelName, kind: op.kind }, progress);
  }

  indexedRatio(key: { entity: string; modelName: string; variant: string }, ratio: number): void {
    this.#ratio.set({ entity: key.entity, model: key.modelName, variant: key.variant }, ratio);
  }

  /** Progress of the version being indexed for a variant (not what it serves). */
  indexingRatio(key: { entity: string; modelName: string; variant: string }, ratio: number): void {
    this.#indexing.set({ entity: key.entity, model: key.modelName, variant: key.variant }, ratio);
  }

  stepMs(kind: OperationKind, step: string, ms: number): void {
    this.#step.observeMs({ kind, step }, ms);
  }
}
