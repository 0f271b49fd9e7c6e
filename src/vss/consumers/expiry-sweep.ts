/**
 * The periodic sweep of expired embedding-store rows. Reads never return an expired row (the store
 * filters them), so the sweep is only about space: every `intervalMs` it deletes the expired rows of
 * every store's embeddings table, in bounded chunks so no statement holds locks for long.
 */
import { describeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { VssStore } from '../store/index.js';

export interface ExpirySweepOptions {
  /** Time between the end of one sweep and the start of the next, ms. Default 60,000. */
  intervalMs?: number;
  /** Rows deleted per statement. Default 10,000. */
  chunkSize?: number;
  logger?: Logger;
  /** Called after each sweep with the rows it deleted (metrics). */
  onSwept?: (deleted: number) => void;
}

export class ExpirySweep {
  readonly #intervalMs: number;
  readonly #chunkSize: number;
  readonly #logger: Logger | undefined;
  readonly #onSwept: ((deleted: number) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #started = false;

  constructor(
    private readonly store: VssStore,
    options: ExpirySweepOptions = {},
  ) {
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#chunkSize = options.chunkSize ?? 10_000;
    if (!(this.#intervalMs > 0)) throw new RangeError(`intervalMs must be positive, got ${this.#intervalMs}`);
    if (!Number.isInteger(this.#chunkSize) || this.#chunkSize < 1) {
      throw new RangeError(`chunkSize must be a positive integer, got ${this.#chunkSize}`);
    }
    this.#logger = options.logger;
    this.#onSwept = options.onSwept;
  }

  /** Starts sweeping every `intervalMs` (the first sweep after one interval). Idempotent. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#schedule();
  }

  /** Stops sweeping and waits for a sweep in progress to finish. Idempotent. */
  async stop(): Promise<void> {
    this.#started = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Deletes every expired row now; resolves to how many. */
  async sweepOnce(): Promise<number> {
    let deleted = 0;
    for (const { embeddingsTable } of await this.store.stores.list()) {
      for (;;) {
        const chunk = await this.store.embeddings.purgeExpired(embeddingsTable, this.#chunkSize);
        deleted += chunk;
        if (chunk < this.#chunkSize) break;
      }
    }
    return deleted;
  }

  #schedule(): void {
    // A chain of timeouts, not an interval: sweeps never overlap, however long one takes.
    this.#timer = setTimeout(() => {
      this.#running = this.sweepOnce()
        .then(
          (deleted) => {
            this.#onSwept?.(deleted);
            if (deleted > 0) this.#logger?.info({ deleted }, `deleted ${deleted} expired embedding rows`);
          },
          (err: unknown) =>
            this.#logger?.warn({ err }, `expired embedding rows sweep failed: ${describeError(err)}`),
        )
        .finally(() => {
          this.#running = undefined;
          if (this.#started) this.#schedule();
        });
    }, this.#intervalMs);
    this.#timer.unref();
  }
}
