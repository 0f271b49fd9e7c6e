/**
 * The similarity result cache: an in-process LRU first, then the distributed `Cache` port (Redis
 * across replicas). Keys hold entity, model, variant and read version in clear, and a hash of the
 * query, filters, attributes, page size and page cursor; a read-version flip therefore changes every
 * key and no stale page is served. TTLs come from the variant, shortened by a random share of up to
 * `ttlJitter` so entries written together do not expire together. A failing distributed cache is a
 * miss, never an error, but each failure is reported (`onError`: counted and logged by serving), and
 * an entry read back is checked before it is served: one that is not a page this code wrote
 * (truncated, written by another version, tampered with) is a miss, reported as `invalid`.
 */
import type { Cache } from '../../platform/cache/index.js';
import { MemoryCache } from '../../platform/cache/index.js';
import type { CacheSettings } from '../store/index.js';
import { digest } from './page-token.js';

export interface CachedPage {
  candidates: { id: string; score: number; attributes: Record<string, string> }[];
  nextPageToken: string;
  /** When its first candidate's embedding expires (epoch ms): past it the page is not served. */
  expiresAt?: number;
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
  /** The HNSW width searched: a wider search may answer other candidates. */
  searchWidth: number;
  /** The incoming page token, or '' for the first page. */
  pageToken: string;
  /** The variant's cluster's key prefix (ClusterVectorDbs.cacheKeyPrefix); '' for experiment. */
  clusterPrefix?: string;
}

export type CacheLevel = 'memory' | 'distributed';

/** What went wrong with the distributed level: a failed read or write, or an entry that is not a page. */
export type CacheFailure = 'get' | 'set' | 'invalid';

export interface ResultCacheOptions {
  /** The distributed level; absent: memory only. */
  distributed?: Cache;
  /** Bytes the in-memory level holds; default 64 MiB. */
  memoryMaxBytes?: number;
  random?: () => number;
  /** Told of every distributed-cache failure (the call itself goes on as a miss). */
  onError?: (failure: CacheFailure, err: unknown) => void;
}

export function resultKey(parts: ResultKeyParts): string {
  const rest = digest(
    JSON.stringify([
      parts.query,
      parts.filters,
      [...parts.attributes].sort(),
      parts.pageSize,
      parts.searchWidth,
      parts.pageToken,
    ]),
  );
  return `${parts.clusterPrefix ?? ''}vss:r:${parts.entity}:${parts.modelName}:${parts.variant}:v${parts.readVersion}:${rest}`;
}

export class ResultCache {
  private readonly memory: MemoryCache;
  private readonly distributed: Cache | undefined;
  private readonly random: () => number;
  private readonly onError: (failure: CacheFailure, err: unknown) => void;

  constructor(options: ResultCacheOptions = {}) {
    this.onError = options.onError ?? (() => {});
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
      const page = value && decode(value);
      if (page && !expired(page)) return { page, level: 'memory' };
    }
    if (this.distributed && settings.distributedTtlSeconds > 0) {
      let value: Uint8Array | undefined;
      try {
        value = await this.distributed.get(key);
      } catch (err) {
        this.onError('get', err);
        return undefined;
      }
      if (value) {
        const page = decode(value);
        if (!page) {
          this.onError('invalid', new Error(`cached entry ${key} is not a result page`));
          return undefined;
        }
        if (expired(page)) return undefined;
        if (settings.memoryTtlSeconds > 0) {
          await this.memory.set(key, value, this.ttlMs(settings.memoryTtlSeconds, settings.ttlJitter));
        }
        return { page, level: 'distributed' };
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
      } catch (err) {
        // A cache is an optimisation: the page was answered, only not shared.
        this.onError('set', err);
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

/** A page holding a candidate whose embedding has expired since is a miss: Search never serves one. */
function expired(page: CachedPage): boolean {
  return page.expiresAt !== undefined && page.expiresAt <= Date.now();
}

/** The page in `value`, or undefined when it is not one (see the module comment). */
function decode(value: Uint8Array): CachedPage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(value));
  } catch {
    return undefined;
  }
  return isPage(parsed) ? parsed : undefined;
}

function isPage(value: unknown): value is CachedPage {
  if (typeof value !== 'object' || value === null) return false;
  const { candidates, nextPageToken, expiresAt } = value as Record<string, unknown>;
  if (typeof nextPageToken !== 'string' || !Array.isArray(candidates)) return false;
  if (expiresAt !== undefined && typeof expiresAt !== 'number') return false;
  for (const candidate of candidates as unknown[]) {
    if (typeof candidate !== 'object' || candidate === null) return false;
    const { id, score, attributes } = candidate as Record<string, unknown>;
    if (typeof id !== 'string' || typeof score !== 'number' || !Number.isFinite(score)) return false;
    if (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes)) return false;
    for (const text of Object.values(attributes)) if (typeof text !== 'string') return false;
  }
  return true;
}
