/**
 * The distributed feature store: Redis through `ioredis`.
 *
 * Layout: one hash per entity key, `<keyPrefix><entity>:<part>|<part>…` (see `rowKey`), with one
 * field per feature group holding the group's encoded values (group-codec.ts). A read of many keys
 * is one pipeline of `HMGET key group…` (one round trip, only the requested groups travel); a write
 * is one pipeline of `HSET key group value…` (plus `PEXPIRE` with a TTL). TTLs are per row: Redis
 * 7.0 expires whole keys, not hash fields.
 *
 * Like the Redis cache, nothing is queued while disconnected, every command has a timeout, and
 * failures are UNAVAILABLE naming the server; ioredis reconnects in the background.
 */
import type { Redis } from 'ioredis';
import { LatticeError } from '../platform/errors.js';
import { closeRedis, connectRedis, redisCommand, redisError } from '../platform/redis/redis-connection.js';
import { checkTtl, type FeatureStore, rowKey, type StoredRow, type WriteOptions } from './store.js';

export interface RedisFeatureStoreOptions {
  /** `redis://[user:password@]host[:port][/db]` (or `rediss://`). */
  url: string;
  /** Prepended to every key (default `lattice:fs:`), so that several stores share one Redis. */
  keyPrefix?: string;
  /** Bound on connecting at start-up (default 2000 ms). */
  connectTimeoutMs?: number;
  /** Bound on each pipeline (default 5000 ms: bulk loads send large ones). */
  commandTimeoutMs?: number;
}

const asBuffer = (value: Uint8Array): Buffer => Buffer.from(value.buffer, value.byteOffset, value.byteLength);

type PipelineResults = [Error | null, unknown][] | null;

export class RedisFeatureStore implements FeatureStore {
  readonly #redis: Redis;
  readonly #label: string;
  readonly #prefix: string;
  readonly #commandTimeoutMs: number;
  #closing: Promise<void> | undefined;

  private constructor(redis: Redis, label: string, prefix: string, commandTimeoutMs: number) {
    this.#redis = redis;
    this.#label = label;
    this.#prefix = prefix;
    this.#commandTimeoutMs = commandTimeoutMs;
  }

  /** Connects and waits until Redis answers; UNAVAILABLE naming the server within `connectTimeoutMs`. */
  static async connect(options: RedisFeatureStoreOptions): Promise<RedisFeatureStore> {
    const connectTimeoutMs = options.connectTimeoutMs ?? 2000;
    const commandTimeoutMs = options.commandTimeoutMs ?? 5000;
    const { redis, label } = await connectRedis({ url: options.url, connectTimeoutMs, commandTimeoutMs });
    return new RedisFeatureStore(redis, label, options.keyPrefix ?? 'lattice:fs:', commandTimeoutMs);
  }

  async write(entity: string, rows: readonly StoredRow[], options: WriteOptions = {}): Promise<void> {
    const ttlMs = checkTtl(options.ttlMs);
    if (rows.length === 0) return;
    const results = await this.#run('HSET pipeline', () => {
      const pipeline = this.#redis.pipeline();
      for (const row of rows) {
        if (row.groups.size === 0) continue;
        const key = this.#prefix + rowKey(entity, row.key);
        const fields: (string | Buffer)[] = [];
        for (const [group, value] of row.groups) fields.push(group, asBuffer(value));
        pipeline.hset(key, ...fields);
        if (ttlMs !== undefined) pipeline.pexpire(key, ttlMs);
      }
      return pipeline.exec();
    });
    this.#check('HSET pipeline', results);
  }

  async read(
    entity: string,
    keys: readonly (readonly string[])[],
    groups: readonly string[],
  ): Promise<(Uint8Array | undefined)[][]> {
    if (keys.length === 0) return [];
    if (groups.length === 0) return keys.map(() => []);
    const results = await this.#run('HMGET pipeline', () => {
      const pipeline = this.#redis.pipeline();
      for (const key of keys) pipeline.hmgetBuffer(this.#prefix + rowKey(entity, key), ...groups);
      return pipeline.exec();
    });
    this.#check('HMGET pipeline', results);
    return results!.map(([, values]) =>
      (values as (Buffer | null)[]).map((value) => (value === null ? undefined : value)),
    );
  }

  async delete(entity: string, keys: readonly (readonly string[])[]): Promise<void> {
    if (keys.length === 0) return;
    await this.#run('DEL', () => this.#redis.del(...keys.map((key) => this.#prefix + rowKey(entity, key))));
  }

  close(): Promise<void> {
    this.#closing ??= closeRedis(this.#redis, this.#commandTimeoutMs);
    return this.#closing;
  }

  #check(what: string, results: PipelineResults): void {
    if (results === null) throw new LatticeError('UNAVAILABLE', `${this.#label}: ${what} was aborted`);
    const failed = results.find(([error]) => error !== null)?.[0];
    if (failed) throw this.#toError(what, failed);
  }

  /** One round trip with a hard deadline (a backstop to ioredis' own timeout), errors mapped. */
  async #run<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) throw new LatticeError('UNAVAILABLE', 'feature store is closed');
    return redisCommand(this.#label, this.#commandTimeoutMs, what, work);
  }

  #toError(what: string, err: unknown): LatticeError {
    return redisError(this.#label, what, err);
  }
}
