/**
 * Publishes with bounded concurrency: up to `limit` publishes in flight (throughput on a queue whose
 * publish waits for durability), while messages with the same key are still published one after
 * the other, in the order they were added (the consumers apply a candidate's events in publish
 * order). A publish failing for a transient reason (UNAVAILABLE, DEADLINE_EXCEEDED) is retried with
 * backoff under the same message id, so one that did land is stored once; a message too large for
 * the topic is the caller's bad row; anything else stops the window.
 */
import { describeError, isLatticeError, LatticeError } from '../../../platform/errors.js';
import { MessageTooLargeError, type PublishOptions, type Queue } from '../../../platform/queue/index.js';
import { backoffDelay } from '../../../platform/scheduling/index.js';

export interface PublishRetry {
  /** Attempts per message, the first included. */
  attempts: number;
  baseMs: number;
  maxMs: number;
}

/** How a message ended: stored (or found already stored), or refused for being too large. */
export type PublishOutcome = { stored: true } | { stored: false; reason: string };

export class PublishWindow {
  readonly #queue: Queue;
  readonly #topic: string;
  readonly #limit: number;
  readonly #retry: PublishRetry;
  readonly #signal: AbortSignal | undefined;
  readonly #byKey = new Map<string, Promise<void>>();
  readonly #waiting: (() => void)[] = [];
  #inFlight = 0;
  #idle: (() => void)[] = [];
  #failure: LatticeError | undefined;

  constructor(queue: Queue, topic: string, limit: number, retry: PublishRetry, signal?: AbortSignal) {
    this.#queue = queue;
    this.#topic = topic;
    this.#limit = limit;
    this.#retry = retry;
    this.#signal = signal;
  }

  /**
   * Resolves once `add` would start publishing at once (there is room, or the window failed);
   * undefined when it already would, so a caller checks whether to go on just before it adds.
   */
  room(): Promise<void> | undefined {
    if (this.#inFlight < this.#limit || this.#failure !== undefined) return undefined;
    return this.#waitForRoom();
  }

  async #waitForRoom(): Promise<void> {
    while (this.#inFlight >= this.#limit && this.#failure === undefined) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  /**
   * Waits for room in the window, then starts publishing; `onDone` is told how the message ended.
   * Throws the failure that stopped the window, if one did.
   */
  async add(
    payload: Uint8Array,
    options: PublishOptions,
    onDone: (outcome: PublishOutcome) => void,
  ): Promise<void> {
    const room = this.room();
    if (room !== undefined) await room;
    if (this.#failure !== undefined) throw this.#failure;
    this.#inFlight++;
    const key = options.key;
    const before = key === undefined ? undefined : this.#byKey.get(key);
    const run = (before ?? Promise.resolve()).then(async () => {
      try {
        onDone(await this.#publish(payload, options));
      } catch (err) {
        this.#fail(err);
      } finally {
        this.#inFlight--;
        this.#waiting.shift()?.();
        if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
      }
    });
    if (key !== undefined) {
      this.#byKey.set(key, run);
      void run.then(() => {
        if (this.#byKey.get(key) === run) this.#byKey.delete(key);
      });
    }
  }

  /** Waits until nothing is in flight; throws the failure that stopped the window, if one did. */
  async drain(): Promise<void> {
    if (this.#inFlight > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
    if (this.#failure !== undefined) throw this.#failure;
  }

  async #publish(payload: Uint8Array, options: PublishOptions): Promise<PublishOutcome> {
    for (let attempt = 1; ; attempt++) {
      if (this.#failure !== undefined) throw this.#failure;
      try {
        await this.#queue.publish(this.#topic, payload, options);
        return { stored: true };
      } catch (err) {
        if (err instanceof MessageTooLargeError) return { stored: false, reason: err.message };
        const transient = isLatticeError(err, 'UNAVAILABLE') || isLatticeError(err, 'DEADLINE_EXCEEDED');
        if (!transient || attempt >= this.#retry.attempts || this.#signal?.aborted) {
          throw new LatticeError(
            isLatticeError(err) ? err.code : 'UNAVAILABLE',
            `publishing to queue topic "${this.#topic}" failed${transient ? ` after ${attempt} attempts` : ''}: ${describeError(err)}`,
            { cause: err },
          );
        }
        const delay = backoffDelay(
          { initialMs: this.#retry.baseMs, maxMs: this.#retry.maxMs, jitter: 'half' },
          attempt,
        );
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  #fail(err: unknown): void {
    this.#failure ??= isLatticeError(err)
      ? err
      : new LatticeError('INTERNAL', describeError(err), { cause: err });
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
