/**
 * Metrics of the vss consumer runner, on /metrics and StatsD like every platform metric:
 *
 * - `vss_consumer_events_total{topic,kind,outcome}`: events by outcome — `applied`, `rejected`
 *   (can never succeed: dead-lettered at once), `retried` (counted once per event per retry of its
 *   batch), `dead_lettered` (still failing after the last attempt). Events/s is its rate.
 * - `vss_consumer_batch_seconds{topic,kind}`: a batch from its start to its last settle (parse,
 *   apply with retries, acknowledgements).
 * - `vss_consumer_retries_total{topic,kind}`: retries of a batch after `apply` threw.
 * - `vss_consumer_dead_letters_total{topic,kind,reason}`: dead letters, `reason` `rejected` or
 *   `exhausted` (transient failures past the attempt bound).
 * - `vss_consumer_lag{topic,group,partition}`: messages of a partition the group has not settled
 *   (not yet delivered plus unsettled), refreshed periodically from the queue.
 *
 * Label values come from configuration (topic, group, the processor's kind), never from events.
 * The retry and dead-letter series of a (topic, kind) are exported at 0 from the start: an alert on
 * `increase(...) > 0` (ops/prometheus/vss-alerts.yml) needs a sample before the first dead letter,
 * or the series would appear already at 1 and that first one would go unseen.
 */
import type { BoundCounter, BoundTiming, GaugeMetric, Metrics } from '../../platform/metrics/index.js';

export type EventOutcomeLabel = 'applied' | 'rejected' | 'retried' | 'dead_lettered';
export type DeadLetterReason = 'rejected' | 'exhausted';

/** The bound series of one (topic, kind): label checks done once, off the hot path. */
export interface ConsumerSeries {
  events(outcome: EventOutcomeLabel, count: number): void;
  batchMs(ms: number): void;
  retry(): void;
  deadLetters(reason: DeadLetterReason, count: number): void;
}

export class ConsumerMetrics {
  readonly #metrics: Metrics;
  readonly #lag: GaugeMetric;

  constructor(metrics: Metrics) {
    this.#metrics = metrics;
    this.#lag = metrics.gauge(
      'vss_consumer_lag',
      'vss consumer lag: messages of a partition the group has not settled (pending plus unsettled)',
      ['topic', 'group', 'partition'],
    );
  }

  series(topic: string, kind: string): ConsumerSeries {
    const labels = { topic, kind };
    const events = this.#metrics.counter(
      'vss_consumer_events_total',
      'vss consumer events by outcome: applied, rejected, retried (per retry), dead_lettered',
      ['topic', 'kind', 'outcome'],
    );
    const byOutcome = new Map<EventOutcomeLabel, BoundCounter>();
    const batch: BoundTiming = this.#metrics
      .timing('vss_consumer_batch_seconds', 'vss consumer batch latency, parse to last settle', [
        'topic',
        'kind',
      ])
      .bind(labels);
    const retries = this.#metrics
      .counter('vss_consumer_retries_total', 'vss consumer batch retries after a transient failure', [
        'topic',
        'kind',
      ])
      .bind(labels);
    const deadLetters = this.#metrics.counter(
      'vss_consumer_dead_letters_total',
      'vss consumer dead letters by reason: rejected, exhausted (transient failures past the bound)',
      ['topic', 'kind', 'reason'],
    );
    const byReason = new Map<DeadLetterReason, BoundCounter>();
    retries.inc(0);
    for (const reason of ['rejected', 'exhausted'] as const) {
      const counter = deadLetters.bind({ ...labels, reason });
      counter.inc(0);
      byReason.set(reason, counter);
    }
    return {
      events: (outcome, count) => {
        if (count === 0) return;
        let counter = byOutcome.get(outcome);
        if (!counter) {
          counter = events.bind({ ...labels, outcome });
          byOutcome.set(outcome, counter);
        }
        counter.inc(count);
      },
      batchMs: (ms) => batch.observeMs(ms),
      retry: () => retries.inc(),
      deadLetters: (reason, count) => {
        if (count === 0) return;
        let counter = byReason.get(reason);
        if (!counter) {
          counter = deadLetters.bind({ ...labels, reason });
          byReason.set(reason, counter);
        }
        counter.inc(count);
      },
    };
  }

  lag(topic: string, group: string, partition: number, messages: number): void {
    this.#lag.set({ topic, group, partition: String(partition) }, messages);
  }
}
