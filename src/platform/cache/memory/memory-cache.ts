/**
 * The embedded cache: an in-process LRU bounded by bytes (`lru-cache`), each entry with its own TTL.
 * Values are copied in and out so that no caller shares memory with the cache or with another caller,
 * except through `getManyShared`, for callers that only read.
 */
import { LRUCache } from 'lru-cache';
import { LatticeError } from '../../errors.js';
import { assertValidTtl, type Cache, type CacheEntry, closedCacheError } from '../cache.js';

export interface MemoryCacheOptions {
  /** Upper bound on the bytes held, keys and bookkeeping included (default 64 MiB). */
  maxBytes?: number;
}

/** Rough per-entry bookkeeping of the LRU (its slots, the TTL arrays, the Uint8Array object). */
const ENTRY_OVERHEAD_BYTES = 64;

/** What an entry is charged against `maxBytes`: value, key (UTF-16) and bookkeeping. */
export function memoryEntrySize(key: string, value: Uint8Array): number {
  return value.byteLength + 2 * key.length + ENTRY_OVERHEAD_BYTES;
}

export class MemoryCache implements Cache {
  readonly #lru: LRUCache<string, Uint8Array>;
  #closed = false;

  constructor(options: MemoryCacheOptions = {}) {
    const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    if (!(Number.isInteger(maxBytes) && maxBytes > 0)) {
      throw new LatticeError('INVALID_ARGUMENT', `maxBytes must be a positive integer, got ${maxBytes}`, {
        field: 'maxBytes',
      });
    }
    // An entry larger than maxBytes is not stored (and replaces, i.e. removes, an older value).
    this.#lru = new LRUCache<string, Uint8Array>({
      maxSize: maxBytes,
      sizeCalculation: (v, k) => memoryEntrySize(k, v),
    });
  }

  /** Bytes currently charged against `maxBytes`. */
  get sizeBytes(): number {
    return this.#lru.calculatedSize;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    this.#assertOpen();
    return this.#read(key);
  }

  async getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    this.#assertOpen();
    return keys.map((key) => this.#read(key));
  }

  getManyShared(keys: readonly string[]): (Uint8Array | undefined)[] {
    this.#assertOpen();
    return keys.map((key) => this.#lru.get(key));
  }

  async set(key: string, value: Uint8Array, ttlMs: number): Promise<void> {
    this.#assertOpen();
    assertValidTtl(ttlMs, key);
    this.#write(key, value, ttlMs);
  }

  async setMany(entries: readonly CacheEntry[]): Promise<void> {
    this.#assertOpen();
    for (const entry of entries) assertValidTtl(entry.ttlMs, entry.key);
    for (const entry of entries) this.#write(entry.key, entry.value, entry.ttlMs);
  }

  async delete(keys: readonly string[]): Promise<void> {
    this.#assertOpen();
    for (const key of keys) this.#lru.delete(key);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#lru.clear();
  }

  #read(key: string): Uint8Array | undefined {
    const stored = this.#lru.get(key);
    return stored === undefined ? undefined : new Uint8Array(stored);
  }

  #write(key: string, value: Uint8Array, ttlMs: number): void {
    // new Uint8Array(x) copies; Buffer#slice would not.
    this.#lru.set(key, new Uint8Array(value), { ttl: Math.ceil(ttlMs) });
  }

  #assertOpen(): void {
    if (this.#closed) throw closedCacheError();
  }
}
