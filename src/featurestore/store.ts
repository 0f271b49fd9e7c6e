/**
 * The feature store's storage port: per entity key, one stored value per feature group (the group's
 * encoded feature values, see group-codec.ts). Adapters: `memory-feature-store.ts` (in-process) and
 * `redis-feature-store.ts` (one Redis hash per entity key, one field per group). Both pass the same
 * contract suite (test/featurestore/contract.ts). The store knows nothing of types: the registry and
 * the service encode and decode.
 */
import { LatticeError } from '../platform/errors.js';

/** The groups written for one entity key. */
export interface StoredRow {
  /** Key part values, in the entity's key schema order. */
  readonly key: readonly string[];
  /** Feature group name → encoded group value. Groups not listed keep what is stored. */
  readonly groups: ReadonlyMap<string, Uint8Array>;
}

export interface WriteOptions {
  /**
   * Time to live of the written rows, in milliseconds: each row (all its groups) expires this long
   * after this write. Without it a row keeps the expiry it had (none for a new row).
   */
  ttlMs?: number;
}

export interface FeatureStore {
  /**
   * Stores the listed groups of each row, replacing those groups and keeping the row's other groups.
   * Rows are applied in order (a key written twice keeps the later value).
   */
  write(entity: string, rows: readonly StoredRow[], options?: WriteOptions): Promise<void>;

  /**
   * For each key, the stored values of `groups`: `result[k][g]` belongs to `keys[k]` and `groups[g]`,
   * `undefined` where that group is not stored (or the row expired). One round trip per batch.
   */
  read(
    entity: string,
    keys: readonly (readonly string[])[],
    groups: readonly string[],
  ): Promise<(Uint8Array | undefined)[][]>;

  /** Removes the rows of these keys (every group); absent keys are ignored. */
  delete(entity: string, keys: readonly (readonly string[])[]): Promise<void>;

  /** Releases the connection (or the memory); later calls fail with UNAVAILABLE. Idempotent. */
  close(): Promise<void>;
}

/**
 * The storage key of an entity key: `<entity>:<part>|<part>…`. Each part escapes `\` and `|` with a
 * backslash, so that ("a|b", "c") and ("a", "b|c") stay distinct; keys without those characters read
 * exactly as their parts joined with `|`.
 */
export function rowKey(entity: string, key: readonly string[]): string {
  let joined = '';
  for (let i = 0; i < key.length; i++) {
    const part = key[i]!;
    const escaped = part.includes('\\') || part.includes('|') ? part.replace(/[\\|]/g, '\\$&') : part;
    joined = i === 0 ? escaped : `${joined}|${escaped}`;
  }
  return `${entity}:${joined}`;
}

/** The TTL rule both adapters enforce: absent, or a positive number of milliseconds. */
export function checkTtl(ttlMs: number | undefined): number | undefined {
  if (ttlMs === undefined) return undefined;
  if (!(Number.isFinite(ttlMs) && ttlMs > 0)) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `ttlMs must be a positive number of milliseconds, got ${ttlMs}`,
      {
        field: 'ttlMs',
      },
    );
  }
  return Math.ceil(ttlMs);
}
