/**
 * The similarity result cache: an in-process LRU first, then the distributed `Cache` port (Redis
 * across replicas). Keys hold entity, model, variant and read version in clear, and a hash of the
 * query, filters, attributes, page size and page cursor; a read-version flip therefore changes every
 * key and no stale page is served. TTLs come from the variant, shortened by a random share of up to
 * `ttlJitter` so entries written together do not expire together. A failing distributed cache is a
 * miss, never an error.
 */
import type { Cache } from '../../platform/cache/index.js';
import { MemoryCache } from '../../platform/cache/index.js';
import type { CacheSettings } from '../store/index.js';
import { digest } from './page-token.js';

export interface CachedPage {
  candidates: { id: string; score: number; attributes: Record<string, string> }[];
  nextPageToken: string;
}

export interface ResultKeyParts {
  entity: string;
  modelName: string;
  variant: string;
  readVersion: number;
  /** Hash of the query (candidate id or vector). */
  query: string;
  /** Hash of the effective filters. */
  filters: string;
  attributes: readonly string[];
  pageSize: number;
  /** The incoming page token, or '' for the first page. */
  pageToken: string;
}

export type CacheLevel = 'memory' | 'distributed';

export interface ResultCacheOptions {
  /** The distributed level; absent: memory only. */
  distributed?: Cache;
  /** Bytes the in-memory level holds; default 64 MiB. */
  memoryMaxBytes?: number;
  random?: () => number;
}

export function resultKey(parts: ResultKeyParts): string {
  const rest = digest(
    JSON.stringify([
      parts.query,
      parts.filters,
      [...parts.attributes].sort(),
      parts.pageSize,
      parts.pageToken,
    ]),
  );
  return `vss:r:${parts.entity}:${parts.modelName}:${parts.variant}:v${parts.readVersion}:${rest}`;
}

export class ResultCache {
  private readonly memory: MemoryCache;
  private readonly distributed: Cache | undefined;
  private readonly random: () => number;

  constructor(options: ResultCacheOptions = {}) {
    this.memory = new MemoryCache(
      options.memoryMaxBytes === undefined ? {} : { maxBytes: options.memoryMaxBytes },
    );
    this.distributed = options.distributed;
    this.random = options.random ?? Math.random;
  }

  /** Whether a variant with these settings caches at all (false: skip keys, look-ups and encoding). */
  enabled(settings: CacheSettings): boolean {
    return (
      settings.memoryTtlSeconds > 0 || (this.distributed !== undefined && settings.distributedTtlSeconds > 0)
    );
  }

  /** The cached page and the level that had it; on a distributed hit the memory level is filled. */
  async get(
    key: string,
    settings: CacheSettings,
  ): Promise<{ page: CachedPage; level: CacheLevel } | undefined> {
    if (settings.memoryTtlSeconds > 0) {
      const value = await this.memory.get(key);
      if (value) return { page: decode(value), level: 'memory' };
    }
    if (this.distributed && settings.distributedTtlSeconds > 0) {
      let value: Uint8Array | undefined;
      try {
        value = await this.distributed.get(key);
      } catch {
        return undefined;
      }
      if (value) {
        if (settings.memoryTtlSeconds > 0) {
          await this.memory.set(key, value, this.ttlMs(settings.memoryTtlSeconds, settings.ttlJitter));
        }
        return { page: decode(value), level: 'distributed' };
      }
    }
    return undefined;
  }

  async set(key: string, page: CachedPage, settings: CacheSettings): Promise<void> {
    if (!this.enabled(settings)) return;
    const value = new TextEncoder().encode(JSON.stringify(page));
    if (settings.memoryTtlSeconds > 0) {
      await this.memory.set(key, value, this.ttlMs(settings.memoryTtlSeconds, settings.ttlJitter));
    }
    if (this.distributed && settings.distributedTtlSeconds > 0) {
      try {
        await this.distributed.set(
          key,
          value,
          this.ttlMs(settings.distributedTtlSeconds, settings.ttlJitter),
        );
      } catch {
        // A cache is an optimisation: the page was answered, only not shared.
      }
    }
  }

  async close(): Promise<void> {
    await this.memory.close();
  }

  private ttlMs(seconds: number, jitter: number): number {
    const share = Math.min(Math.max(jitter, 0), 1) * this.random();
    return Math.max(1, Math.round(seconds * 1000 * (1 - share)));
  }
}

function decode(value: Uint8Array): CachedPage {
  return JSON.parse(new TextDecoder().decode(value)) as CachedPage;
}
