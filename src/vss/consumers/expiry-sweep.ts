/**
 * The periodic sweep of expired embeddings. Reads never return an expired row (the store filters
 * them) and Search never returns an expired point (serving filters on `embedding_expires_at`), so
 * the sweep is about space and the index: every `intervalMs` it takes the expired rows of every
 * store's embeddings table in bounded chunks, deletes their points from the model version's
 * collection on every cluster this process reaches (a point re-written with a later expiry since is
 * kept), then the rows. Points first: a crash between the two leaves rows the next sweep finds again.
 */
import { describeError, isLatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { VectorDb } from '../../platform/vectordb/index.js';
import { type ClusterVectorDbs, collectionName, EXPIRES_AT_FIELD, expiryOf } from '../model/index.js';
import type { ExpiredKey, VssStore } from '../store/index.js';

export interface ExpirySweepOptions {
  /** Time between the end of one sweep and the start of the next, ms. Default 60,000. */
  intervalMs?: number;
  /** Rows deleted per statement. Default 10,000. */
  chunkSize?: number;
  logger?: Logger;
  /** Called after each sweep with the rows it deleted (metrics). */
  onSwept?: (deleted: number) => void;
  /** Where the expired rows' points are deleted; absent: rows only. */
  vectorDbs?: ClusterVectorDbs;
}

export class ExpirySweep {
  readonly #intervalMs: number;
  readonly #chunkSize: number;
  readonly #logger: Logger | undefined;
  readonly #onSwept: ((deleted: number) => void) | undefined;
  readonly #vectorDbs: ClusterVectorDbs | undefined;
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
    this.#vectorDbs = options.vectorDbs;
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

  /** Deletes every expired row, and its points, now; resolves to how many rows. */
  async sweepOnce(): Promise<number> {
    let deleted = 0;
    for (const { entity, embeddingsTable } of await this.store.stores.list()) {
      for (;;) {
        const keys = await this.store.embeddings.expiredKeys(embeddingsTable, this.#chunkSize);
        await this.#deletePoints(entity, keys);
        deleted += await this.store.embeddings.deleteExpired(embeddingsTable, keys);
        if (keys.length < this.#chunkSize) break;
      }
    }
    return deleted;
  }

  /** The expired points of `keys`, from each version's collection on each cluster reached. */
  async #deletePoints(entity: string, keys: readonly ExpiredKey[]): Promise<void> {
    if (this.#vectorDbs === undefined || keys.length === 0) return;
    const byCollection = new Map<string, string[]>();
    for (const key of keys) {
      const collection = collectionName(entity, key.modelName, key.version);
      const ids = byCollection.get(collection);
      if (ids === undefined) byCollection.set(collection, [key.id]);
      else ids.push(key.id);
    }
    const vectorDbs = (['experiment', 'production'] as const)
      .filter((cluster) => this.#vectorDbs!.has(cluster))
      .map((cluster) => this.#vectorDbs!.of(cluster));
    for (const vectorDb of vectorDbs) {
      for (const [collection, ids] of byCollection) await deleteExpiredPoints(vectorDb, collection, ids);
    }
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

/**
 * Deletes those of `ids` whose point has expired now: a point re-written with a later expiry since
 * the rows were read stays; one with no expiry (written before points carried it) goes with its row.
 */
async function deleteExpiredPoints(vectorDb: VectorDb, collection: string, ids: readonly string[]) {
  let points: Awaited<ReturnType<VectorDb['getPoints']>>;
  try {
    points = await vectorDb.getPoints(collection, ids, {
      withVector: false,
      withPayload: [EXPIRES_AT_FIELD],
    });
  } catch (err) {
    if (isLatticeError(err, 'NOT_FOUND')) return; // the version was dropped, or lives elsewhere
    throw err;
  }
  const now = Date.now();
  const expired = points.flatMap((point) => {
    if (point === undefined) return [];
    const expiry = expiryOf(point.payload);
    return expiry === undefined || expiry <= now ? [point.id] : [];
  });
  if (expired.length > 0) await vectorDb.delete(collection, expired);
}
