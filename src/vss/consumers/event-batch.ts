/**
 * The contract between the vss consumer runner (which takes messages from the `Queue` port in
 * batches, acknowledges, retries and dead-letters them) and the processors of each event kind
 * (embedding events, EOF markers, real-time events). A processor never touches the queue: it parses
 * and applies; the runner decides what happens to each message from the outcome.
 *
 * - `parse` throws {@link RejectedEvent} for a message that can never succeed (unparseable JSON, a
 *   missing or mistyped field, a wrong dimension, an unknown operation): the runner sends it straight
 *   to the dead-letter topic with the reason in its headers, and the rest of the batch goes on.
 * - `apply` writes a batch of parsed events, in the order given (publish order within a partition).
 *   It resolves to one entry per event: `undefined` when the event was applied, a reason string when
 *   that event can never succeed (an unknown model or variant found only against the store); those
 *   are dead-lettered like parse rejections. It throws when the failure is transient (SQL or the
 *   vector DB unavailable): the runner retries the events with backoff and jitter, a bounded number
 *   of times, then dead-letters them.
 * - Every write is an idempotent upsert or delete by key, so a batch applied twice (redelivery
 *   after a crash before the acknowledgement was recorded) has the effect of applying it once. The
 *   runner acknowledges a message only after `apply` resolved, that is, after its writes are durable.
 */

/** A message that can never succeed; `field` names the offending field (`index_space.embedding`). */
export class RejectedEvent extends Error {
  override readonly name = 'RejectedEvent';
  constructor(
    readonly reason: string,
    readonly field?: string,
  ) {
    super(reason);
  }
}

/** What became of one event of a batch: applied (undefined), or rejected for good with a reason. */
export type EventOutcome = string | undefined;

export interface EventBatchHandler<E> {
  /** The event kind, as the metrics label it: `embedding`, `eof`, `realtime`. */
  readonly kind: string;
  /** Parses and validates one message's payload; throws {@link RejectedEvent} when it never can succeed. */
  parse(payload: Uint8Array, headers: Readonly<Record<string, string>>): E;
  /** Applies the events in order; one outcome per event. Throws for a transient failure (retry). */
  apply(events: readonly E[]): Promise<EventOutcome[]>;
}
