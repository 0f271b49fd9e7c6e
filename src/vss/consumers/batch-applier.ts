/**
 * Applies one batch of a partition's messages through a processor (`EventBatchHandler`) and decides
 * each message's fate:
 *
 * - `parse` throws → the message can never succeed: dead-lettered at once with the reason (and the
 *   field, for a `RejectedEvent`), without holding up the others.
 * - `apply` resolves → each event is acknowledged, or dead-lettered with the reason its outcome gives.
 * - `apply` throws → a transient failure: the same events are applied again, in the same order,
 *   after an exponential backoff with jitter, up to the attempt bound. Meanwhile the partition waits
 *   (its runner starts no later batch), so no newer event can overtake a failing older one. This is
 *   the retry "topic" of the design done in place: a separate retry topic would let later events of
 *   the same key be applied before the retried one comes back, unless every consumer also kept a
 *   durable list of keys with a retry pending; waiting in place keeps per-key order with no extra
 *   state, and the bound keeps a failure from blocking the partition forever.
 * - Still failing after the last attempt → the batch is bisected, each half applied once, to find
 *   the events that fail on their own; the others are applied and acknowledged, the failing ones
 *   dead-lettered. A later event of a dead-lettered event's key in the same batch is dead-lettered
 *   with it (not applied), so that replaying the dead letters in order cannot put the older event
 *   over a newer one applied in between.
 *
 * Acknowledgements and dead letters of a batch are all recorded before `run` resolves, and the
 * runner starts a partition's next batch only then: an older event is never redelivered after a
 * newer one of its partition was applied.
 */
import { describeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { QueueMessage } from '../../platform/queue/index.js';
import { pause } from '../../platform/scheduling/index.js';
import type { ConsumerSeries } from './consumer-metrics.js';
import { type EventBatchHandler, type EventOutcome, RejectedEvent } from './event-batch.js';
import type { RetryBackoff } from './retry-backoff.js';

/** How the applier settles messages; the runner's lane supplies it (and mutes it once aborted). */
export interface BatchSettler {
  ack(message: QueueMessage): Promise<void>;
  term(message: QueueMessage, reason: string, field?: string): Promise<void>;
}

interface Parsed<E> {
  readonly message: QueueMessage;
  readonly event: E;
}

/** What became of a batch: the messages left unsettled because the runner is closing. */
export interface BatchResult {
  readonly unsettled: readonly QueueMessage[];
}

export class BatchApplier<E> {
  readonly #handler: EventBatchHandler<E>;
  readonly #backoff: RetryBackoff;
  readonly #series: ConsumerSeries;
  readonly #logger: Logger;
  readonly #topic: string;

  constructor(
    handler: EventBatchHandler<E>,
    backoff: RetryBackoff,
    series: ConsumerSeries,
    logger: Logger,
    topic: string,
  ) {
    this.#handler = handler;
    this.#backoff = backoff;
    this.#series = series;
    this.#logger = logger;
    this.#topic = topic;
  }

  /**
   * Parses, applies (with retries) and settles `messages`, given in publish order. Rejects only when
   * a settle failed (the queue did not record an ack or a dead letter). When `signal` aborts, stops
   * retrying and reports what it left unsettled.
   */
  async run(
    messages: readonly QueueMessage[],
    settler: BatchSettler,
    signal: AbortSignal,
  ): Promise<BatchResult> {
    const started = performance.now();
    const settles: Promise<void>[] = [];
    const parsed: Parsed<E>[] = [];
    let rejected = 0;
    for (const message of messages) {
      try {
        parsed.push({ message, event: this.#handler.parse(message.payload, message.headers) });
      } catch (err) {
        rejected++;
        const { reason, field } = rejection(err);
        if (!(err instanceof RejectedEvent)) {
          this.#logger.error(
            {
              topic: this.#topic,
              partition: message.partition,
              sequence: message.sequence,
              err: describeError(err),
            },
            'vss event parser threw something other than RejectedEvent; dead-lettering the event',
          );
        }
        settles.push(settler.term(message, reason, field));
      }
    }
    this.#series.events('rejected', rejected);
    this.#series.deadLetters('rejected', rejected);
    const unsettled =
      parsed.length === 0 ? [] : await this.#applyWithRetries(parsed, settler, settles, signal);
    await Promise.all(settles);
    this.#series.batchMs(performance.now() - started);
    return { unsettled: unsettled.map((p) => p.message) };
  }

  /** Returns the events left unsettled (only when `signal` aborted). */
  async #applyWithRetries(
    parsed: Parsed<E>[],
    settler: BatchSettler,
    settles: Promise<void>[],
    signal: AbortSignal,
  ): Promise<Parsed<E>[]> {
    const schedule = this.#backoff.schedule();
    let lastError: unknown;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return parsed;
      try {
        this.#settleOutcomes(parsed, await this.#apply(parsed), settler, settles);
        return [];
      } catch (err) {
        lastError = err;
        if (attempt >= this.#backoff.attempts) break;
        const delayMs = schedule.next();
        this.#series.retry();
        this.#series.events('retried', parsed.length);
        this.#logger.warn(
          {
            topic: this.#topic,
            partition: parsed[0]!.message.partition,
            events: parsed.length,
            attempt,
            delayMs,
            err: describeError(err),
          },
          'vss batch failed; retrying it after a backoff (its partition waits)',
        );
        await pause(delayMs, signal);
      }
    }
    if (signal.aborted) return parsed;
    this.#logger.error(
      {
        topic: this.#topic,
        partition: parsed[0]!.message.partition,
        events: parsed.length,
        attempts: this.#backoff.attempts,
        err: describeError(lastError),
      },
      'vss batch still failing after its last attempt; finding the failing events to dead-letter them',
    );
    return this.#isolate(parsed, lastError, settler, settles, signal);
  }

  async #apply(parsed: Parsed<E>[]): Promise<EventOutcome[]> {
    const outcomes = await this.#handler.apply(parsed.map((p) => p.event));
    if (!Array.isArray(outcomes) || outcomes.length !== parsed.length) {
      throw new Error(
        `the ${this.#handler.kind} processor returned ${Array.isArray(outcomes) ? outcomes.length : 'no'} ` +
          `outcomes for ${parsed.length} events`,
      );
    }
    return outcomes;
  }

  #settleOutcomes(
    parsed: Parsed<E>[],
    outcomes: EventOutcome[],
    settler: BatchSettler,
    settles: Promise<void>[],
  ): void {
    let applied = 0;
    let rejected = 0;
    for (let i = 0; i < parsed.length; i++) {
      const outcome = outcomes[i];
      if (outcome === undefined) {
        applied++;
        settles.push(settler.ack(parsed[i]!.message));
      } else {
        rejected++;
        settles.push(settler.term(parsed[i]!.message, String(outcome)));
      }
    }
    this.#series.events('applied', applied);
    this.#series.events('rejected', rejected);
    this.#series.deadLetters('rejected', rejected);
  }

  /**
   * Bisects a batch that keeps failing: each half is applied once, in order; a failing half is split
   * again, down to single events, which are dead-lettered. Keys of dead-lettered events divert their
   * later events. Returns what is left unsettled when `signal` aborts.
   */
  async #isolate(
    parsed: Parsed<E>[],
    cause: unknown,
    settler: BatchSettler,
    settles: Promise<void>[],
    signal: AbortSignal,
  ): Promise<Parsed<E>[]> {
    const failedKeys = new Set<string>();
    const unsettled: Parsed<E>[] = [];
    const deadLetter = (item: Parsed<E>, reason: string) => {
      if (item.message.key !== undefined) failedKeys.add(item.message.key);
      settles.push(settler.term(item.message, reason));
      this.#series.events('dead_lettered', 1);
      this.#series.deadLetters('exhausted', 1);
    };
    const exhausted = (err: unknown) =>
      `transient failure persisted after ${this.#backoff.attempts} attempts: ${describeError(err)}`;
    // `group` is known to fail as a whole, with `error`.
    const visit = async (group: Parsed<E>[], error: unknown): Promise<void> => {
      if (group.length === 1) {
        deadLetter(group[0]!, exhausted(error));
        return;
      }
      const middle = Math.ceil(group.length / 2);
      for (const half of [group.slice(0, middle), group.slice(middle)]) {
        if (signal.aborted) {
          unsettled.push(...half);
          continue;
        }
        const runnable: Parsed<E>[] = [];
        for (const item of half) {
          const key = item.message.key;
          if (key !== undefined && failedKeys.has(key)) {
            deadLetter(
              item,
              `not applied: an earlier event of key "${key}" in its batch was dead-lettered ` +
                '(replay them together, in order)',
            );
          } else {
            runnable.push(item);
          }
        }
        if (runnable.length === 0) continue;
        try {
          this.#settleOutcomes(runnable, await this.#apply(runnable), settler, settles);
        } catch (err) {
          await visit(runnable, err);
        }
      }
    };
    await visit(parsed, cause);
    return unsettled;
  }
}

function rejection(err: unknown): { reason: string; field: string | undefined } {
  if (err instanceof RejectedEvent) return { reason: err.reason, field: err.field };
  return { reason: `could not parse the event: ${describeError(err)}`, field: undefined };
}
