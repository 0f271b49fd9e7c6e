/**
 * The feature store over the SQL port (PGlite embedded, PostgreSQL distributed): what `lattice up`
 * keeps its features in, so rows loaded into the running platform survive a restart. One SQL row per
 * entity key holds every stored group (name → base64 value in a jsonb object) and the row's expiry,
 * so a write is one read and one multi-row upsert per batch, with the same semantics as the memory
 * and Redis adapters (group-wise replacement, per-row TTL), checked by the same contract suite.
 * Registered entity definitions (FeatureWriterService.RegisterEntities) are kept beside the rows.
 */
import { LatticeError } from '../platform/errors.js';
import { type Migration, migrate, type SqlClient, type SqlQueryable } from '../platform/sql/index.js';
import { checkTtl, type FeatureStore, rowKey, type StoredRow, type WriteOptions } from './store.js';

/** The migrations table of this set (platform/sql/migrations.ts keeps each set's own). */
export const FEATURESTORE_MIGRATIONS_TABLE = 'featurestore_migrations';

export const featureStoreMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'feature rows and registered entities',
    up: `
      CREATE TABLE featurestore_rows (
        entity text NOT NULL,
        row_key text NOT NULL,
        groups jsonb NOT NULL,
        expires_at timestamptz,
        PRIMARY KEY (entity, row_key)
      );
      CREATE INDEX featurestore_rows_expiry ON featurestore_rows (expires_at) WHERE expires_at IS NOT NULL;
      CREATE TABLE featurestore_entities (
        name text PRIMARY KEY,
        definition jsonb NOT NULL,
        registered_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
];

interface RowRecord {
  row_key: string;
  groups: Record<string, string>;
  expires_at: Date | null;
}

/** Keys per statement: bounds parameter arrays and each transaction's length. */
const BATCH = 1_000;

export class SqlFeatureStore implements FeatureStore {
  readonly #sql: SqlClient;
  readonly #now: () => number;
  #closed = false;

  private constructor(sql: SqlClient, now: () => number) {
    this.#sql = sql;
    this.#now = now;
  }

  /** Applies the migrations and returns the store; `sql` stays the caller's (close does not close it). */
  static async open(sql: SqlClient, options: { now?: () => number } = {}): Promise<SqlFeatureStore> {
    await migrate(sql, featureStoreMigrations, { table: FEATURESTORE_MIGRATIONS_TABLE });
    return new SqlFeatureStore(sql, options.now ?? Date.now);
  }

  async write(entity: string, rows: readonly StoredRow[], options: WriteOptions = {}): Promise<void> {
    this.#open();
    const ttlMs = checkTtl(options.ttlMs);
    for (let from = 0; from < rows.length; from += BATCH) {
      const batch = rows.slice(from, from + BATCH);
      await this.#sql.transaction(async (tx) => {
        const now = this.#now();
        const keys = batch.map((row) => rowKey(entity, row.key));
        const stored = await this.#rows(tx, entity, [...new Set(keys)], true);
        // Rows are applied in order, so a key written twice in a batch keeps the later groups.
        const next = new Map<string, { groups: Record<string, string>; expiresAt: number | null }>();
        batch.forEach((row, i) => {
          const key = keys[i]!;
          let current = next.get(key);
          if (current === undefined) {
            const old = stored.get(key);
            const live = old !== undefined && (old.expires_at === null || old.expires_at.getTime() > now);
            current = live
              ? { groups: { ...old.groups }, expiresAt: old.expires_at?.getTime() ?? null }
              : { groups: {}, expiresAt: null };
            next.set(key, current);
          }
          for (const [group, value] of row.groups)
            current.groups[group] = Buffer.from(value).toString('base64');
          if (ttlMs !== undefined) current.expiresAt = now + ttlMs;
        });
        const entries = [...next];
        await tx.query(
          `INSERT INTO featurestore_rows (entity, row_key, groups, expires_at)
           SELECT $1, k, g::jsonb, CASE WHEN e IS NULL THEN NULL ELSE to_timestamp(e / 1000.0) END
           FROM unnest($2::text[], $3::text[], $4::float8[]) AS t(k, g, e)
           ON CONFLICT (entity, row_key) DO UPDATE SET groups = excluded.groups, expires_at = excluded.expires_at`,
          [
            entity,
            entries.map(([key]) => key),
            entries.map(([, row]) => JSON.stringify(row.groups)),
            entries.map(([, row]) => row.expiresAt),
          ],
        );
      });
    }
  }

  async read(
    entity: string,
    keys: readonly (readonly string[])[],
    groups: readonly string[],
  ): Promise<(Uint8Array | undefined)[][]> {
    this.#open();
    const now = this.#now();
    const rowKeys = keys.map((key) => rowKey(entity, key));
    const found = new Map<string, RowRecord>();
    const unique = [...new Set(rowKeys)];
    for (let from = 0; from < unique.length; from += BATCH) {
      for (const [key, row] of await this.#rows(this.#sql, entity, unique.slice(from, from + BATCH), false))
        found.set(key, row);
    }
    return rowKeys.map((key) => {
      const row = found.get(key);
      const live = row !== undefined && (row.expires_at === null || row.expires_at.getTime() > now);
      return groups.map((group) => {
        const value = live ? row.groups[group] : undefined;
        return value === undefined ? undefined : new Uint8Array(Buffer.from(value, 'base64'));
      });
    });
  }

  async delete(entity: string, keys: readonly (readonly string[])[]): Promise<void> {
    this.#open();
    const rowKeys = keys.map((key) => rowKey(entity, key));
    for (let from = 0; from < rowKeys.length; from += BATCH) {
      await this.#sql.query('DELETE FROM featurestore_rows WHERE entity = $1 AND row_key = ANY($2::text[])', [
        entity,
        rowKeys.slice(from, from + BATCH),
      ]);
    }
  }

  /**
   * Every row not expired, one entity at a time in pages: how the memory mirror of `lattice up`
   * fills itself at start. `remainingTtlMs` is undefined for rows that never expire.
   */
  async *scan(): AsyncGenerator<{
    entity: string;
    rowKey: string;
    groups: Map<string, Uint8Array>;
    remainingTtlMs?: number;
  }> {
    this.#open();
    let after: [string, string] = ['', ''];
    for (;;) {
      const now = this.#now();
      const { rows } = await this.#sql.query<RowRecord & { entity: string }>(
        `SELECT entity, row_key, groups, expires_at FROM featurestore_rows
         WHERE (entity, row_key) > ($1, $2) AND (expires_at IS NULL OR expires_at > to_timestamp($3 / 1000.0))
         ORDER BY entity, row_key LIMIT ${BATCH}`,
        [after[0], after[1], now],
      );
      for (const row of rows) {
        yield {
          entity: row.entity,
          rowKey: row.row_key,
          groups: new Map(
            Object.entries(row.groups).map(([group, value]) => [
              group,
              new Uint8Array(Buffer.from(value, 'base64')),
            ]),
          ),
          remainingTtlMs: row.expires_at === null ? undefined : Math.max(1, row.expires_at.getTime() - now),
        };
      }
      if (rows.length < BATCH) return;
      const last = rows[rows.length - 1]!;
      after = [last.entity, last.row_key];
    }
  }

  /** Deletes expired rows; returns how many. */
  async sweep(): Promise<number> {
    this.#open();
    const { rowCount } = await this.#sql.query(
      'DELETE FROM featurestore_rows WHERE expires_at IS NOT NULL AND expires_at <= to_timestamp($1 / 1000.0)',
      [this.#now()],
    );
    return rowCount;
  }

  /** Entity definitions registered through FeatureWriterService, in registration order. */
  async registeredEntities(): Promise<unknown[]> {
    this.#open();
    const { rows } = await this.#sql.query<{ definition: unknown }>(
      'SELECT definition FROM featurestore_entities ORDER BY registered_at, name',
    );
    return rows.map((row) => row.definition);
  }

  /** Keeps an entity definition (one that registering added). */
  async saveEntity(name: string, definition: unknown): Promise<void> {
    this.#open();
    await this.#sql.query(
      `INSERT INTO featurestore_entities (name, definition) VALUES ($1, $2::jsonb)
       ON CONFLICT (name) DO UPDATE SET definition = excluded.definition`,
      [name, JSON.stringify(definition)],
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  async #rows(
    on: SqlQueryable,
    entity: string,
    rowKeys: readonly string[],
    forUpdate: boolean,
  ): Promise<Map<string, RowRecord>> {
    const { rows } = await on.query<RowRecord>(
      `SELECT row_key, groups, expires_at FROM featurestore_rows
       WHERE entity = $1 AND row_key = ANY($2::text[])${forUpdate ? ' FOR UPDATE' : ''}`,
      [entity, rowKeys],
    );
    return new Map(rows.map((row) => [row.row_key, row]));
  }

  #open(): void {
    if (this.#closed) throw new LatticeError('UNAVAILABLE', 'the feature store is closed');
  }
}
