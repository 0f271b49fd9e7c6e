/**
 * Ingestion progress per model version, on /metrics and StatsD beside the runner's own metrics
 * (consumer-metrics.ts):
 *
 * - `vss_ingestion_events_total{entity,model,version,operation}`: embedding events applied (`A`,
 *   `D`, `P`), counted once per apply (a redelivery after a crash counts again: the job's exact
 *   counts are the ledger's, below);
 * - `vss_ingestion_jobs_completed_total{entity,model,version}`: jobs whose EOF markers all arrived;
 * - `vss_ingestion_job_events{entity,model,version,count}`: the completed job's exact counts from the
 *   ingestion ledger (`events`, `applied`, `rejected`, `points_written`).
 *
 * Labels name registered models only (an applied event's model exists), so their number is bounded
 * by the catalog; each reset adds a version.
 */
import type { CounterMetric, GaugeMetric, Metrics } from '../../platform/metrics/index.js';
import type { IngestionRecord } from '../store/index.js';
import type { EmbeddingEvent } from './embedding-event.js';
import type { EventBatchHandler, EventOutcome } from './event-batch.js';
import type { IngestionMessage } from './ingestion-message.js';

export class IngestionProgress {
  readonly #events: CounterMetric;
  readonly #jobs: CounterMetric;
  readonly #jobCounts: GaugeMetric;

  constructor(metrics: Metrics) {
    this.#events = metrics.counter(
      'vss_ingestion_events_total',
      'vss embedding events applied, by model version and operation (A, D, P)',
      ['entity', 'model', 'version', 'operation'],
    );
    this.#jobs = metrics.counter(
      'vss_ingestion_jobs_completed_total',
      'vss ingestion jobs completed (every partition delivered its EOF marker), by model version',
      ['entity', 'model', 'version'],
    );
    this.#jobCounts = metrics.gauge(
      'vss_ingestion_job_events',
      'exact counts of the last completed ingestion job of a model version: events, applied, rejected, points_written',
      ['entity', 'model', 'version', 'count'],
    );
  }

  /** The ingestion handler, counting the events each batch applied. */
  track(handler: EventBatchHandler<IngestionMessage>): EventBatchHandler<IngestionMessage> {
    return {
      kind: handler.kind,
      parse: (payload, headers) => handler.parse(payload, headers),
      apply: async (messages) => {
        const outcomes = await handler.apply(messages);
        this.#applied(messages, outcomes);
        return outcomes;
      },
    };
  }

  /** The EOF processor's `onComplete`. */
  completed(record: IngestionRecord): void {
    const labels = { entity: record.entity, model: record.modelName, version: String(record.version) };
    this.#jobs.inc(labels);
    const counts = record.counts;
    if (counts === null) return;
    this.#jobCounts.set({ ...labels, count: 'events' }, counts.events);
    this.#jobCounts.set({ ...labels, count: 'applied' }, counts.applied);
    this.#jobCounts.set({ ...labels, count: 'rejected' }, counts.rejected);
    this.#jobCounts.set({ ...labels, count: 'points_written' }, counts.pointsWritten);
  }

  #applied(messages: readonly IngestionMessage[], outcomes: readonly EventOutcome[]): void {
    // One increment per (model version, operation) of the batch, not per event; runs of events of
    // the same model version and operation (the usual batch) build their key once.
    const counts = new Map<string, number>();
    let last: EmbeddingEvent | undefined;
    let key = '';
    messages.forEach((message, i) => {
      if (message.kind !== 'embedding' || outcomes[i] !== undefined) return;
      const event = message.event;
      if (
        last === undefined ||
        event.entity !== last.entity ||
        event.modelName !== last.modelName ||
        event.version !== last.version ||
        event.operation !== last.operation
      ) {
        key = JSON.stringify([event.entity, event.modelName, event.version, event.operation]);
        last = event;
      }
      counts.set(key, (counts.get(key) ?? 0) + 1);
    });
    for (const [key, count] of counts) {
      const [entity, model, version, operation] = JSON.parse(key) as [string, string, number, string];
      this.#events.inc({ entity, model, version: String(version), operation }, count);
    }
  }
}
