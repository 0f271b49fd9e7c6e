/**
 * Cache port: `createCache` picks the adapter from configuration alone (in-process LRU embedded,
 * Redis distributed); services see only `Cache`.
 */
import type { Cache } from './cache.js';
import { MemoryCache } from './memory/memory-cache.js';
import { RedisCache } from './redis/redis-cache.js';

export type { Cache, CacheEntry } from './cache.js';
export { MemoryCache } from './memory/memory-cache.js';

export type CacheOptions =
  | {
      kind: 'memory';
      /** Upper bound on bytes held (default 64 MiB). */
      maxBytes?: number;
    }
  | {
      kind: 'redis';
      url: string;
      keyPrefix?: string;
      connectTimeoutMs?: number;
      commandTimeoutMs?: number;
    };

/** Opens the configured cache; for Redis, rejects with UNAVAILABLE (naming the address) when it cannot. */
export async function createCache(options: CacheOptions): Promise<Cache> {
  switch (options.kind) {
    case 'memory':
      return new MemoryCache(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes });
    case 'redis': {
      const { kind: _kind, ...redis } = options;
      return RedisCache.connect(redis);
    }
  }
}
