/**
 * The store `lattice up` serves features from: reads from memory (a model request must not wait on
 * SQL per key batch), writes to SQL first and then to memory, so what was loaded survives a restart.
 * Opening fills the memory from SQL, after an optional seed written to memory only: the generated
 * demo rows are made again at each start instead of being stored, and rows a user loaded over
 * them (kept in SQL) still win.
 */
import { MemoryFeatureStore } from './memory-feature-store.js';
import type { SqlFeatureStore } from './sql-feature-store.js';
import type { FeatureStore, StoredRow, WriteOptions } from './store.js';

export class MirroredFeatureStore implements FeatureStore {
  private constructor(
    private readonly memory: MemoryFeatureStore,
    readonly durable: SqlFeatureStore,
  ) {}

  /** Seeds the memory, then reads every live row of `durable` into it; `rows` counts the latter. */
  static async open(
    durable: SqlFeatureStore,
    options: { seed?: (memory: FeatureStore) => Promise<void> } = {},
  ): Promise<{ store: MirroredFeatureStore; rows: number }> {
    const memory = new MemoryFeatureStore();
    await options.seed?.(memory);
    let rows = 0;
    for await (const row of durable.scan()) {
      memory.writeStored(row.rowKey, row.groups, row.remainingTtlMs);
      rows++;
    }
    return { store: new MirroredFeatureStore(memory, durable), rows };
  }

  async write(entity: string, rows: readonly StoredRow[], options?: WriteOptions): Promise<void> {
    await this.durable.write(entity, rows, options);
    await this.memory.write(entity, rows, options);
  }

  read(
    entity: string,
    keys: readonly (readonly string[])[],
    groups: readonly string[],
  ): Promise<(Uint8Array | undefined)[][]> {
    return this.memory.read(entity, keys, groups);
  }

  async delete(entity: string, keys: readonly (readonly string[])[]): Promise<void> {
    await this.durable.delete(entity, keys);
    await this.memory.delete(entity, keys);
  }

  async close(): Promise<void> {
    await this.memory.close();
    await this.durable.close();
  }
}
