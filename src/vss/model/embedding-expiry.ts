/**
 * When a point's embedding expires. With `embedding_store_ttl` set (and the embedding store on), the
 * consumers write each point with `embedding_expires_at`: epoch milliseconds, taken before the
 * embedding-store row is written (so the point never outlives its row's `expires_at`). Serving
 * searches only points whose expiry is still ahead ({@link unexpiredFilter}); the expiry sweep
 * deletes the expired points from the index together with their rows. It is an ordinary payload
 * field: `--attributes embedding_expires_at` shows it, and filters may name it.
 */
import type { Filter, Payload } from '../../platform/vectordb/index.js';

export const EXPIRES_AT_FIELD = 'embedding_expires_at';

/** The TTL the model's points carry, seconds: 0 (none) unless the embedding store is on with a TTL. */
export function embeddingTtlSeconds(model: {
  embeddingStoreEnabled: boolean;
  embeddingStoreTtlSeconds: number;
}) {
  return model.embeddingStoreEnabled ? model.embeddingStoreTtlSeconds : 0;
}

/** The filter that admits only points whose embedding has not expired at `nowMs`. */
export function unexpiredFilter(nowMs: number): Filter {
  return { field: EXPIRES_AT_FIELD, op: 'GT', values: [String(nowMs)] };
}

/** The point's expiry, ms; undefined when it has none. */
export function expiryOf(payload: Readonly<Payload> | undefined): number | undefined {
  const value = payload?.[EXPIRES_AT_FIELD];
  return typeof value === 'number' ? value : undefined;
}

/** Whether a point's embedding has expired at `nowMs`. */
export function isExpired(payload: Readonly<Payload> | undefined, nowMs: number): boolean {
  const expiry = expiryOf(payload);
  return expiry !== undefined && expiry <= nowMs;
}
