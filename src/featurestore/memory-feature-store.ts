import { LatticeError } from '../platform/errors.js';
import { checkTtl, type FeatureStore, rowKey, type StoredRow, type WriteOptions } from './store.js';

interface MemoryRow {
  groups: Map<string, Uint8Array>;
  /** Epoch ms after which the row is gone; Infinity for none. */
  expiresAt: number;
}

/**
 * The embedded feature store: rows in a Map in this process, same semantics as Redis (per-row TTL,
 * group-wise replacement). Expired rows are dropped when read, and swept on writes now and then so
 * that a store that is only written does not grow without bound.
 */
export class MemoryFeatureStore implements FeatureStore {
  readonly #rows = new Map<string, MemoryRow>();
  readonly #now: () => number;
  #writesSinceSweep = 0;
  #closed = false;

  /** `now` is injectable for tests of expiry. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /** Rows held (including expired ones not yet swept). */
  get size(): number {
    return this.#rows.size;
  }

  async write(entity: string, rows: readonly StoredRow[], options: WriteOptions = {}): Promise<void> {
    this.#open();
    const ttlMs = checkTtl(options.ttlMs);
    const now = this.#now();
    for (const row of rows) {
      const key = rowKey(entity, row.key);
      let stored = this.#rows.get(key);
      if (stored === undefined || stored.expiresAt <= now) {
        stored = { groups: new Map(), expiresAt: Number.POSITIVE_INFINITY };
        this.#rows.set(key, stored);
      }
      // Copies: the caller may reuse its buffers.
      for (const [group, value] of row.groups) stored.groups.set(group, new Uint8Array(value));
      if (ttlMs !== undefined) stored.expiresAt = now + ttlMs;
    }
    this.#writesSinceSweep += rows.length;
    // A sweep costs O(rows); doing one only after rows/2 writes keeps writes O(1) amortised.
    if (this.#writesSinceSweep >= Math.max(10_000, this.#rows.size / 2)) this.#sweep(now);
  }

  async read(
    entity: string,
    keys: readonly (readonly string[])[],
    groups: readonly string[],
  ): Promise<(Uint8Array | undefined)[][]> {
    this.#open();
    const now = this.#now();
    return keys.map((parts) => {
      const key = rowKey(entity, parts);
      const stored = this.#rows.get(key);
      if (stored !== undefined && stored.expiresAt <= now) this.#rows.delete(key);
      if (stored === undefined || stored.expiresAt <= now) return groups.map(() => undefined);
      return groups.map((group) => stored.groups.get(group));
    });
  }

  /**
   * Puts back a whole row as another store kept it (its storage key, every group, the time it has
   * left): how a memory mirror is filled from its durable copy without decoding keys.
   */
  writeStored(storageKey: string, groups: ReadonlyMap<string, Uint8Array>, remainingTtlMs?: number): void {
    this.#open();
    const expiresAt = remainingTtlMs === undefined ? Number.POSITIVE_INFINITY : this.#now() + remainingTtlMs;
    this.#rows.set(storageKey, { groups: new Map(groups), expiresAt });
  }

  async delete(entity: string, keys: readonly (readonly string[])[]): Promise<void> {
    this.#open();
    for (const parts of keys) this.#rows.delete(rowKey(entity, parts));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#rows.clear();
  }

  #sweep(now: number): void {
    this.#writesSinceSweep = 0;
    for (const [key, row] of this.#rows) if (row.expiresAt <= now) this.#rows.delete(key);
  }

  #open(): void {
    if (this.#closed) throw new LatticeError('UNAVAILABLE', 'feature store is closed');
  }
}
