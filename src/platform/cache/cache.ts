/**
 * The cache port: bytes by key with a time to live, for the feature cache and the similarity result
 * cache. Adapters: `memory-cache.ts` (in-process LRU) and `redis-cache.ts` (shared by replicas).
 * Values are bytes so callers choose the encoding (typed-array codecs, protobuf); every value a cache
 * returns is a fresh copy whose buffer starts at offset 0, so `new Float32Array(v.buffer)` is safe.
 * A cache is an optimisation: callers treat UNAVAILABLE as a miss and go to the source.
 */
import { LatticeError } from '../errors.js';

export interface CacheEntry {
  key: string;
  value: Uint8Array;
  /** Time to live in milliseconds; a positive number. */
  ttlMs: number;
}

export interface Cache {
  /** The value stored under `key`, or undefined when absent or expired. */
  get(key: string): Promise<Uint8Array | undefined>;

  /** Values for many keys in one round trip; result `i` belongs to `keys[i]` (undefined for a miss). */
  getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]>;

  /**
   * In-process caches only: `getMany` without the copies, answered synchronously. The values are the
   * cache's own (the same object for as long as the entry lives), so a caller may keep derived data
   * per value object, and must never modify one.
   */
  getManyShared?(keys: readonly string[]): (Uint8Array | undefined)[];

  /** Stores a copy of `value` under `key` for `ttlMs` milliseconds, replacing any previous value. */
  set(key: string, value: Uint8Array, ttlMs: number): Promise<void>;

  /** Stores many entries in one round trip, each with its own TTL. */
  setMany(entries: readonly CacheEntry[]): Promise<void>;

  /** Removes the keys; absent keys are ignored. */
  delete(keys: readonly string[]): Promise<void>;

  /** Releases the connection (or the memory); further calls fail with UNAVAILABLE. Idempotent. */
  close(): Promise<void>;
}

/** The TTL rule both adapters enforce, so a bad TTL fails the same way everywhere. */
export function assertValidTtl(ttlMs: number, key: string): void {
  if (!(Number.isFinite(ttlMs) && ttlMs > 0)) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `ttlMs must be a positive number of milliseconds, got ${ttlMs} for "${key}"`,
      {
        field: 'ttlMs',
      },
    );
  }
}

export function closedCacheError(): LatticeError {
  return new LatticeError('UNAVAILABLE', 'cache is closed');
}
