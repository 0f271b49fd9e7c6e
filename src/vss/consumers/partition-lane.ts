/**
 * One partition of the consumer runner: the messages the queue handed over, kept in sequence order,
 * cut into batches (full at `maxBatch`, or after `lingerMs` since the oldest arrived), one batch at
 * a time. A batch starts only once the previous one is entirely settled, and only while the
 * partition's ordering gate is open, so events apply in publish order across batches, retries,
 * crashes and restarts.
 *
 * The queue's handler returns as soon as the lane took the message (auto-ack off): the queue's own
 * bound on unsettled messages per partition is the lane's window, and no promise per message waits
 * for its batch.
 */
import { describeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { QueueMessage } from '../../platform/queue/index.js';
import type { BatchApplier, BatchSettler } from './batch-applier.js';
import type { OrderingGate } from './ordering-gate.js';

interface Held {
  message: QueueMessage;
  arrivedAt: number;
  touchedAt: number;
}

export interface PartitionLaneOptions<E> {
  partition: number;
  applier: BatchApplier<E>;
  gate: OrderingGate;
  maxBatch: number;
  lingerMs: number;
  /** Aborted when the runner closes: retries stop waiting. */
  signal: AbortSignal;
  /** A settle failed: the partition's state on the queue is unknown (the runner re-joins). */
  onSettleFailure: (err: unknown) => void;
  logger: Logger;
}

export class PartitionLane<E> {
  readonly partition: number;
  readonly gate: OrderingGate;
  readonly #options: PartitionLaneOptions<E>;
  /** Waiting for a batch, by ascending sequence. */
  #held: Held[] = [];
  /** The running batch, by sequence. */
  readonly #inBatch = new Map<number, Held>();
  /** Deliveries of a message of the running batch that arrived again while it ran. */
  #lateCopies: Held[] = [];
  #running: Promise<void> | undefined;
  /** Highest sequence this lane settled: a later copy of it or anything below was already handled. */
  #settledThrough = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #aborted = false;
  readonly #settler: BatchSettler;

  constructor(options: PartitionLaneOptions<E>) {
    this.partition = options.partition;
    this.gate = options.gate;
    this.#options = options;
    // Once aborted (a crash, as far as the queue can tell), nothing more is settled.
    this.#settler = {
      ack: (message) => (this.#aborted ? Promise.resolve() : message.ack()),
      term: (message, reason, field) =>
        this.#aborted ? Promise.resolve() : message.term(reason, field === undefined ? undefined : { field }),
    };
  }

  /** Messages the lane holds unsettled (waiting or in the running batch). */
  get held(): number {
    return this.#held.length + this.#inBatch.size;
  }

  /** The queue's handler: takes the message; the lane settles it later. */
  receive(message: QueueMessage): void {
    if (this.#stopped) {
      // Arrived as the runner stopped: back at once when closing, left to the ack wait when aborted.
      if (!this.#aborted) void this.#giveBack(message);
      return;
    }
    const { sequence } = message;
    this.gate.received(sequence);
    if (sequence <= this.#settledThrough) {
      // A copy of a message this lane applied and settled (the queue raced the ack): settle it again.
      message.ack().catch((err: unknown) => this.#settleFailed(err));
      return;
    }
    const now = Date.now();
    const entry: Held = { message, arrivedAt: now, touchedAt: now };
    if (this.#inBatch.has(sequence)) {
      this.#lateCopies.push(entry);
      return;
    }
    this.#insert(entry);
    this.schedule();
  }

  /** Starts a batch when one is due, else arms the linger timer. */
  schedule(): void {
    if (this.#stopped || this.#running || !this.gate.open || this.#held.length === 0) return;
    const { maxBatch, lingerMs } = this.#options;
    const waited = Date.now() - this.#held[0]!.arrivedAt;
    if (this.#held.length >= maxBatch || waited >= lingerMs) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#start(this.#held.splice(0, maxBatch));
    } else if (!this.#timer) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.schedule();
      }, lingerMs - waited);
    }
  }

  /** Restarts the ack-wait clock of every message held longer than `everyMs` since its last report. */
  heartbeat(now: number, everyMs: number): void {
    if (this.#stopped) return;
    const touch = (entry: Held) => {
      if (now - entry.touchedAt < everyMs) return;
      entry.touchedAt = now;
      entry.message
        .inProgress()
        .catch((err: unknown) =>
          this.#options.logger.warn(
            { partition: this.partition, sequence: entry.message.sequence, err: describeError(err) },
            'could not extend the ack wait of a held vss message; it may be redelivered',
          ),
        );
    };
    for (const entry of this.#held) touch(entry);
    for (const entry of this.#inBatch.values()) touch(entry);
  }

  /**
   * Stops taking batches, lets the running one finish (its retries cut short), and hands what the
   * lane still holds back to the queue for immediate redelivery.
   */
  async close(): Promise<void> {
    this.#stop();
    await this.#running;
    const left = this.#held.splice(0);
    await Promise.all(left.map((entry) => this.#giveBack(entry.message)));
    this.#lateCopies = [];
  }

  /** Stops at once without settling anything more: the queue redelivers what was held, as after a crash. */
  abort(): void {
    this.#aborted = true;
    this.#stop();
    this.#held = [];
    this.#lateCopies = [];
  }

  #stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #start(batch: Held[]): void {
    for (const entry of batch) this.#inBatch.set(entry.message.sequence, entry);
    const messages = batch.map((entry) => entry.message);
    this.#running = this.#options.applier
      .run(messages, this.#settler, this.#options.signal)
      .then(
        async ({ unsettled }) => {
          if (this.#aborted) return;
          if (unsettled.length === 0) {
            this.#settledThrough = Math.max(this.#settledThrough, messages[messages.length - 1]!.sequence);
          }
          const left = new Set(unsettled.map((m) => m.sequence));
          const copies = this.#lateCopies.splice(0);
          await Promise.all([
            ...unsettled.map((message) => this.#giveBack(message)),
            // The original was settled, so its copy is done with too.
            ...copies
              .filter((entry) => !left.has(entry.message.sequence))
              .map((entry) => entry.message.ack().catch((err: unknown) => this.#settleFailed(err))),
          ]);
        },
        (err: unknown) => this.#settleFailed(err),
      )
      .finally(() => {
        this.#inBatch.clear();
        this.#running = undefined;
        this.schedule();
      });
  }

  /** Back to the queue for immediate redelivery (to this runner's successor). */
  #giveBack(message: QueueMessage): Promise<void> {
    return message
      .nak(0)
      .catch((err: unknown) =>
        this.#options.logger.warn(
          { partition: this.partition, sequence: message.sequence, err: describeError(err) },
          'could not hand a vss message back to the queue; it is redelivered after the ack wait',
        ),
      );
  }

  #settleFailed(err: unknown): void {
    if (this.#aborted) return;
    this.#options.onSettleFailure(err);
  }

  /** Inserts by sequence (deliveries come nearly in order: appending is the common case). */
  #insert(entry: Held): void {
    const held = this.#held;
    const sequence = entry.message.sequence;
    let index = held.length;
    while (index > 0 && held[index - 1]!.message.sequence > sequence) index--;
    if (index > 0 && held[index - 1]!.message.sequence === sequence) {
      // A new delivery of a message still waiting: keep the newest (its settle is the current one).
      held[index - 1] = entry;
      return;
    }
    held.splice(index, 0, entry);
  }
}
