import { Redis } from 'ioredis';
import { LatticeError } from '../errors.js';
import { backoffDelay } from '../scheduling/index.js';
import { withTimeout } from '../timeout.js';

/** `Redis at host:port`, for messages; INVALID_ARGUMENT when `url` is not a URL. */
export function redisLabel(url: string): string {
  try {
    const parsed = new URL(url);
    return `Redis at ${parsed.hostname || '127.0.0.1'}:${parsed.port || '6379'}`;
  } catch {
    throw new LatticeError('INVALID_ARGUMENT', 'Redis url is not a valid URL', { field: 'url' });
  }
}

export interface RedisConnectOptions {
  url: string;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  keyPrefix?: string;
}

/**
 * Connects and waits until Redis answers; UNAVAILABLE naming the server within `connectTimeoutMs`.
 * Nothing is queued while disconnected (no offline queue, no per-request retries): commands fail
 * fast, and the client reconnects in the background with a short capped backoff.
 */
export async function connectRedis(options: RedisConnectOptions): Promise<{ redis: Redis; label: string }> {
  const label = redisLabel(options.url);
  const redis = new Redis(options.url, {
    lazyConnect: true,
    connectTimeout: options.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (times) => backoffDelay({ initialMs: 100, maxMs: 2000 }, times),
    ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
  });
  let lastError: Error | undefined;
  // Connection errors are reported here as well as to the pending commands; without a listener
  // ioredis prints each one. The latest is kept to explain a failed start-up.
  redis.on('error', (err: Error) => {
    lastError = err;
  });
  const connecting = redis.connect();
  connecting.catch(() => {}); // observed below; may settle after the timeout
  try {
    await withTimeout(`connecting to ${label}`, options.connectTimeoutMs, connecting, 'UNAVAILABLE');
  } catch (err) {
    redis.disconnect();
    const reason = lastError?.message ?? (err instanceof Error ? err.message : String(err));
    throw new LatticeError('UNAVAILABLE', `${label} is unavailable: ${reason}`, { cause: lastError ?? err });
  }
  return { redis, label };
}

/** Maps what a Redis call threw: a refused command is INTERNAL (a bug or misconfiguration), anything else UNAVAILABLE. */
export function redisError(label: string, what: string, err: unknown): LatticeError {
  if (err instanceof LatticeError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof Error && err.name === 'ReplyError') {
    return new LatticeError('INTERNAL', `${what} refused by ${label}: ${message}`, { cause: err });
  }
  return new LatticeError('UNAVAILABLE', `${label} is unavailable (${what}): ${message}`, { cause: err });
}

/** Runs one round trip with a hard deadline (a backstop to ioredis' own timeouts) and maps its errors. */
export async function redisCommand<T>(
  label: string,
  commandTimeoutMs: number,
  what: string,
  work: () => Promise<T>,
): Promise<T> {
  let running: Promise<T>;
  try {
    running = work();
  } catch (err) {
    throw redisError(label, what, err);
  }
  running.catch(() => {}); // observed below; may settle after the deadline
  try {
    return await withTimeout(`${what} on ${label}`, commandTimeoutMs + 250, running, 'UNAVAILABLE');
  } catch (err) {
    throw redisError(label, what, err);
  }
}

/** Says goodbye when connected (bounded by `timeoutMs`), then drops the connection; never throws. */
export async function closeRedis(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') {
    const quitting = redis.quit();
    quitting.catch(() => {});
    await withTimeout('closing Redis', timeoutMs, quitting).catch(() => {});
  }
  redis.disconnect();
}
