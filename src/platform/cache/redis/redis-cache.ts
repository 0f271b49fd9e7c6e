/**
 * The distributed cache: Redis through `ioredis`, shared by every replica. Reads use MGET for many
 * keys, writes a pipeline of `SET key value PX ttl`. A cache must never make a request wait on a dead
 * server, so nothing is queued while disconnected (`enableOfflineQueue: false`, no per-request
 * retries), every command has a timeout, and all failures are UNAVAILABLE naming the address; the
 * client keeps reconnecting in the background and serves again once Redis is back.
 */
import type { Redis } from 'ioredis';
import { LatticeError } from '../../errors.js';
import { closeRedis, connectRedis, redisCommand, redisError } from '../../redis/redis-connection.js';
import { assertValidTtl, type Cache, type CacheEntry, closedCacheError } from '../cache.js';

export interface RedisCacheOptions {
  /** `redis://[user:password@]host[:port][/db]` (or `rediss://` for TLS). */
  url: string;
  /** Prepended to every key, so that several caches (or test runs) share one Redis. */
  keyPrefix?: string;
  /** Bound on connecting at start-up (default 2000 ms). */
  connectTimeoutMs?: number;
  /** Bound on each command or pipeline (default 1000 ms). */
  commandTimeoutMs?: number;
}

function positiveInteger(value: number | undefined, fallback: number, field: string): number {
  if (value === undefined) return fallback;
  if (!(Number.isInteger(value) && value > 0)) {
    throw new LatticeError('INVALID_ARGUMENT', `${field} must be a positive integer, got ${value}`, {
      field,
    });
  }
  return value;
}

/** A copy in a fresh buffer at offset 0: ioredis hands out slices of its read buffer, unaligned. */
function copyBytes(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer);
}

/** A Buffer view of the caller's bytes (no copy) for ioredis to send. */
function asBuffer(value: Uint8Array): Buffer {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

export class RedisCache implements Cache {
  readonly #redis: Redis;
  readonly #label: string;
  readonly #commandTimeoutMs: number;
  #closing: Promise<void> | undefined;

  private constructor(redis: Redis, label: string, commandTimeoutMs: number) {
    this.#redis = redis;
    this.#label = label;
    this.#commandTimeoutMs = commandTimeoutMs;
  }

  /** Connects and waits until Redis answers; rejects with UNAVAILABLE within `connectTimeoutMs`. */
  static async connect(options: RedisCacheOptions): Promise<RedisCache> {
    const connectTimeoutMs = positiveInteger(options.connectTimeoutMs, 2000, 'connectTimeoutMs');
    const commandTimeoutMs = positiveInteger(options.commandTimeoutMs, 1000, 'commandTimeoutMs');
    const { redis, label } = await connectRedis({
      url: options.url,
      connectTimeoutMs,
      commandTimeoutMs,
      keyPrefix: options.keyPrefix,
    });
    return new RedisCache(redis, label, commandTimeoutMs);
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const value = await this.#command('GET', () => this.#redis.getBuffer(key));
    return value === null ? undefined : copyBytes(value);
  }

  async getMany(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    if (keys.length === 0) return [];
    const values = await this.#command('MGET', () => this.#redis.mgetBuffer(...keys));
    return values.map((value) => (value === null ? undefined : copyBytes(value)));
  }

  async set(key: string, value: Uint8Array, ttlMs: number): Promise<void> {
    assertValidTtl(ttlMs, key);
    await this.#command('SET', () => this.#redis.set(key, asBuffer(value), 'PX', Math.ceil(ttlMs)));
  }

  async setMany(entries: readonly CacheEntry[]): Promise<void> {
    for (const entry of entries) assertValidTtl(entry.ttlMs, entry.key);
    if (entries.length === 0) return;
    const results = await this.#command('SET pipeline', () => {
      const pipeline = this.#redis.pipeline();
      for (const entry of entries)
        pipeline.set(entry.key, asBuffer(entry.value), 'PX', Math.ceil(entry.ttlMs));
      return pipeline.exec();
    });
    const failed = results?.find(([error]) => error !== null)?.[0];
    if (failed) throw this.#toError('SET pipeline', failed);
  }

  async delete(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#command('DEL', () => this.#redis.del(...keys));
  }

  close(): Promise<void> {
    this.#closing ??= closeRedis(this.#redis, this.#commandTimeoutMs);
    return this.#closing;
  }

  /** Runs one round trip with a hard deadline (a backstop to ioredis' own timeouts) and maps errors. */
  async #command<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) throw closedCacheError();
    return redisCommand(this.#label, this.#commandTimeoutMs, what, work);
  }

  #toError(what: string, err: unknown): LatticeError {
    return redisError(this.#label, what, err);
  }
}
