/**
 * The embedding store: one table per entity (named by its store), rows keyed by (model_name,
 * version, id), vectors as `real[]` in and `Float32Array` out, one `to_be_indexed_<variant>` flag
 * per variant. Rows written with a TTL carry `expires_at`: reads never return them once it has
 * passed, and `purgeExpired` deletes them. Times are the database's clock, for writers and readers
 * alike.
 */
import { LatticeError } from '../../platform/errors.js';
import type { SqlQueryable, SqlValue } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import type { EntityTables } from './entity-tables.js';
import {
  quoteIdentifier,
  type SqlIdentifier,
  tableName,
  VARIANT_COLUMN_PREFIX,
  variantColumn,
} from './identifiers.js';
import { atomically, integerField } from './sql-support.js';

export interface EmbeddingRow {
  id: string;
  embedding: Float32Array;
  /** The vector queries by this candidate search with; absent or null: `embedding`. */
  searchEmbedding?: Float32Array | null;
  /** Membership per variant; variants left out keep the flag the row had. */
  toBeIndexed?: Readonly<Record<string, boolean>>;
}

export interface EmbeddingBatch {
  modelName: string;
  version: number;
  /** A later row with the same id replaces an earlier one. */
  rows: readonly EmbeddingRow[];
  /** Seconds the rows live from now (the model's `embedding_store_ttl`); absent or 0: no expiry. */
  ttlSeconds?: number;
}

export interface StoredEmbedding {
  id: string;
  embedding: Float32Array;
  /** `embedding` when none was stored. */
  searchEmbedding: Float32Array;
  /** The variants whose flag is set, true or false (unset flags are absent). */
  toBeIndexed: Record<string, boolean>;
  expiresAt: Date | null;
}

export interface EmbeddingIds {
  modelName: string;
  version: number;
  ids: readonly string[];
}

export interface EmbeddingScan {
  modelName: string;
  version: number;
  /** Continue after this id (ids ascend). */
  afterId?: string;
  limit: number;
  /** Only rows flagged for this variant's index. */
  variant?: string;
}

/** Rows per INSERT: well under PostgreSQL's 65535 parameters and a few MB of text per statement. */
const ROWS_PER_STATEMENT = 256;
const live = '(expires_at IS NULL OR expires_at > now())';

function toStored(row: Record<string, unknown>): StoredEmbedding {
  const embedding = Float32Array.from(row.embedding as number[]);
  const search = row.search_embedding as number[] | null;
  const toBeIndexed: Record<string, boolean> = {};
  for (const [column, value] of Object.entries(row)) {
    if (column.startsWith(VARIANT_COLUMN_PREFIX) && typeof value === 'boolean') {
      toBeIndexed[column.slice(VARIANT_COLUMN_PREFIX.length)] = value;
    }
  }
  return {
    id: row.id as string,
    embedding,
    searchEmbedding: search === null ? embedding : Float32Array.from(search),
    toBeIndexed,
    expiresAt: (row.expires_at as Date | null) ?? null,
  };
}

function idList(ids: readonly string[], field = 'ids'): string[] {
  ids.forEach((id, i) => {
    if (typeof id !== 'string' || id === '') {
      throw new LatticeError('INVALID_ARGUMENT', `${field}[${i}] must be a non-empty string`, {
        field: `${field}[${i}]`,
      });
    }
  });
  return [...ids];
}

export class EmbeddingsRepository {
  constructor(
    private readonly db: SqlQueryable,
    private readonly tables: EntityTables,
  ) {}

  /**
   * Inserts or replaces the rows (multi-row parameterised statements, in one transaction); returns
   * how many distinct rows were written. A flag for a variant with no column is FAILED_PRECONDITION:
   * register the variant first.
   */
  async upsert(table: string, batch: EmbeddingBatch): Promise<number> {
    const name = tableName(table, 'embeddings_table');
    integerField(batch.version, 'version', 1);
    const ttl = integerField(batch.ttlSeconds ?? 0, 'ttl_seconds', 0);
    const latest = new Map<string, EmbeddingRow>();
    const flagColumns = new Map<string, SqlIdentifier>();
    batch.rows.forEach((row, i) => {
      if (typeof row.id !== 'string' || row.id === '') {
        throw new LatticeError('INVALID_ARGUMENT', `rows[${i}].id must be a non-empty string`, {
          field: `rows[${i}].id`,
        });
      }
      if (!(row.embedding instanceof Float32Array) || row.embedding.length === 0) {
        throw new LatticeError('INVALID_ARGUMENT', `rows[${i}].embedding must be a non-empty Float32Array`, {
          field: `rows[${i}].embedding`,
        });
      }
      for (const variant of Object.keys(row.toBeIndexed ?? {})) {
        flagColumns.set(variant, variantColumn(variant, `rows[${i}].to_be_indexed.${variant}`));
      }
      latest.delete(row.id); // re-inserted below, so the map keeps the last write's position
      latest.set(row.id, row);
    });
    if (latest.size === 0) return 0;
    await this.#requireFlagColumns(name, flagColumns);

    // Rows with the same set of flags share statements; ids ascend so concurrent batches lock alike.
    const groups = new Map<string, EmbeddingRow[]>();
    for (const row of [...latest.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
      const flags = Object.keys(row.toBeIndexed ?? {})
        .sort()
        .join(',');
      const group = groups.get(flags);
      if (group === undefined) groups.set(flags, [row]);
      else group.push(row);
    }
    await atomically(this.db, async (tx) => {
      for (const [flags, rows] of groups) {
        const variants = flags === '' ? [] : flags.split(',');
        for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
          const chunk = rows.slice(start, start + ROWS_PER_STATEMENT);
          await withConstraintErrors(() =>
            tx.query(
              this.#upsertStatement(name, variants, chunk.length, ttl),
              this.#upsertParams(batch, chunk, variants, ttl),
            ),
          );
        }
      }
    });
    return latest.size;
  }

  #upsertStatement(table: SqlIdentifier, variants: readonly string[], rows: number, ttl: number): string {
    const flags = variants.map((variant) => quoteIdentifier(variantColumn(variant)));
    const fixed = ttl > 0 ? 3 : 2; // $1 model_name, $2 version, [$3 ttl]
    const perRow = 3 + flags.length;
    const expires = ttl > 0 ? `now() + $3::integer * interval '1 second'` : 'NULL::timestamptz';
    const values: string[] = [];
    for (let r = 0; r < rows; r++) {
      const p = fixed + r * perRow;
      const flagParams = flags.map((_, f) => `$${p + 4 + f}::boolean`);
      values.push(
        `($1::text, $2::integer, $${p + 1}::text, $${p + 2}::real[], $${p + 3}::real[], ${expires}${flagParams.map((x) => `, ${x}`).join('')})`,
      );
    }
    const updates = ['embedding', 'search_embedding', 'expires_at', ...flags].map(
      (c) => `${c} = EXCLUDED.${c}`,
    );
    return `INSERT INTO ${quoteIdentifier(table)}
              (model_name, version, id, embedding, search_embedding, expires_at${flags.map((c) => `, ${c}`).join('')})
            VALUES ${values.join(',\n')}
            ON CONFLICT (model_name, version, id) DO UPDATE SET ${updates.join(', ')}`;
  }

  #upsertParams(
    batch: EmbeddingBatch,
    rows: readonly EmbeddingRow[],
    variants: readonly string[],
    ttl: number,
  ) {
    const params: SqlValue[] = [batch.modelName, batch.version];
    if (ttl > 0) params.push(ttl);
    for (const row of rows) {
      params.push(row.id, row.embedding, row.searchEmbedding ?? null);
      for (const variant of variants) params.push(row.toBeIndexed?.[variant] ?? null);
    }
    return params;
  }

  async #requireFlagColumns(
    table: SqlIdentifier,
    flagColumns: ReadonlyMap<string, SqlIdentifier>,
  ): Promise<void> {
    if (flagColumns.size === 0) return;
    const present = await this.tables.columns(table, [...flagColumns.values()]);
    for (const [variant, column] of flagColumns) {
      if (!present.has(column)) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `variant ${variant} has no column in "${table}": register the variant before ingesting for it`,
          { field: 'variant' },
        );
      }
    }
  }

  /** The live (unexpired) rows among `ids`, by id; ids not stored are absent. */
  async read(table: string, request: EmbeddingIds): Promise<Map<string, StoredEmbedding>> {
    const name = tableName(table, 'embeddings_table');
    const ids = idList(request.ids);
    const found = new Map<string, StoredEmbedding>();
    if (ids.length === 0) return found;
    const { rows } = await this.db.query<Record<string, unknown>>(
      `SELECT * FROM ${quoteIdentifier(name)}
        WHERE model_name = $1 AND version = $2 AND id = ANY($3::text[]) AND ${live}`,
      [request.modelName, request.version, ids],
    );
    for (const row of rows) {
      const stored = toStored(row);
      found.set(stored.id, stored);
    }
    return found;
  }

  /**
   * The index flags (`variants_index_map`, as stored) of `variants` on the live rows among `ids`,
   * without their vectors: id → variant → flag, unset flags absent; ids with no live row are absent.
   */
  async indexFlags(
    table: string,
    request: EmbeddingIds & { variants: readonly string[] },
  ): Promise<Map<string, Record<string, boolean>>> {
    const name = tableName(table, 'embeddings_table');
    const ids = idList(request.ids);
    const columns = new Map(request.variants.map((v, i) => [v, variantColumn(v, `variants[${i}]`)]));
    const found = new Map<string, Record<string, boolean>>();
    if (ids.length === 0) return found;
    await this.#requireFlagColumns(name, columns);
    const select = ['id', ...[...columns.values()].map(quoteIdentifier)].join(', ');
    const { rows } = await this.db.query<Record<string, unknown>>(
      `SELECT ${select} FROM ${quoteIdentifier(name)}
        WHERE model_name = $1 AND version = $2 AND id = ANY($3::text[]) AND ${live}`,
      [request.modelName, request.version, ids],
    );
    for (const row of rows) {
      const flags: Record<string, boolean> = {};
      for (const [variant, column] of columns) {
        const value = row[column];
        if (typeof value === 'boolean') flags[variant] = value;
      }
      found.set(row.id as string, flags);
    }
    return found;
  }

  /** A page of live rows in id order (to fill another vector database from the store). */
  async scan(table: string, request: EmbeddingScan): Promise<StoredEmbedding[]> {
    const name = tableName(table, 'embeddings_table');
    integerField(request.limit, 'limit', 1, 10_000);
    const params: SqlValue[] = [request.modelName, request.version, request.afterId ?? '', request.limit];
    let flag = '';
    if (request.variant !== undefined) {
      const column = variantColumn(request.variant);
      await this.#requireFlagColumns(name, new Map([[request.variant, column]]));
      flag = `AND ${quoteIdentifier(column)} IS TRUE`;
    }
    const { rows } = await this.db.query<Record<string, unknown>>(
      `SELECT * FROM ${quoteIdentifier(name)}
        WHERE model_name = $1 AND version = $2 AND id > $3 AND ${live} ${flag}
        ORDER BY id LIMIT $4`,
      params,
    );
    return rows.map(toStored);
  }

  /** Sets the variant's flag on the given rows (a real-time membership change); rows updated. */
  async setMembership(
    table: string,
    request: EmbeddingIds & { variant: string; toBeIndexed: boolean },
  ): Promise<number> {
    const name = tableName(table, 'embeddings_table');
    const column = variantColumn(request.variant);
    await this.#requireFlagColumns(name, new Map([[request.variant, column]]));
    const ids = idList(request.ids);
    if (ids.length === 0) return 0;
    const { rowCount } = await this.db.query(
      `UPDATE ${quoteIdentifier(name)} SET ${quoteIdentifier(column)} = $4
        WHERE model_name = $1 AND version = $2 AND id = ANY($3::text[])`,
      [request.modelName, request.version, ids, request.toBeIndexed],
    );
    return rowCount;
  }

  /** Deletes the given rows; how many there were. */
  async delete(table: string, request: EmbeddingIds): Promise<number> {
    const name = tableName(table, 'embeddings_table');
    const ids = idList(request.ids);
    if (ids.length === 0) return 0;
    const { rowCount } = await this.db.query(
      `DELETE FROM ${quoteIdentifier(name)} WHERE model_name = $1 AND version = $2 AND id = ANY($3::text[])`,
      [request.modelName, request.version, ids],
    );
    return rowCount;
  }

  /** Deletes a whole version of a model (once no variant reads it); rows deleted. */
  async dropVersion(table: string, modelName: string, version: number): Promise<number> {
    const name = tableName(table, 'embeddings_table');
    const { rowCount } = await this.db.query(
      `DELETE FROM ${quoteIdentifier(name)} WHERE model_name = $1 AND version = $2`,
      [modelName, version],
    );
    return rowCount;
  }

  /** Live rows of a model version. */
  async count(table: string, modelName: string, version: number): Promise<number> {
    const name = tableName(table, 'embeddings_table');
    const { rows } = await this.db.query<{ count: number }>(
      `SELECT count(*) AS count FROM ${quoteIdentifier(name)} WHERE model_name = $1 AND version = $2 AND ${live}`,
      [modelName, version],
    );
    return Number(rows[0]?.count ?? 0);
  }

  /** Deletes up to `limit` expired rows; how many. Call until it returns less than `limit`. */
  async purgeExpired(table: string, limit = 10_000): Promise<number> {
    const name = quoteIdentifier(tableName(table, 'embeddings_table'));
    integerField(limit, 'limit', 1, 1_000_000);
    const { rowCount } = await this.db.query(
      `DELETE FROM ${name} WHERE (model_name, version, id) IN (
         SELECT model_name, version, id FROM ${name} WHERE expires_at <= now() LIMIT $1)`,
      [limit],
    );
    return rowCount;
  }
}
