/**
 * The embedding store: one table per entity (named by its store), rows keyed by (model_name,
 * version, id), vectors `Float32Array` in and out, stored as float32 `bytea` (vector-bytes.ts), one
 * `to_be_indexed_<variant>` flag per variant. Rows written with a TTL carry `expires_at`: reads
 * never return them once it has passed, and the sweep deletes them (`expiredKeys`, then `deleteExpired`). Times are the database's
 * clock, for writers and readers alike.
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
import { type VectorTransport, vectorBytes, vectorFromBytes } from './vector-bytes.js';

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

/** Id → variant → index flag, for the variants asked about; unset flags absent. */
export type IndexFlags = Map<string, Record<string, boolean>>;

/**
 * Bounds on one upsert statement: its id and flag arrays, and its vectors parameter (which PGlite
 * receives as hex text, twice the bytes). A batch beyond them takes several statements.
 */
const MAX_ROWS_PER_STATEMENT = 1000;
const MAX_VECTOR_BYTES_PER_STATEMENT = 4 * 1024 * 1024;
const live = '(expires_at IS NULL OR expires_at > now())';

function toStored(row: Record<string, unknown>, transport: VectorTransport): StoredEmbedding {
  const embedding = vectorFromBytes(transport.bytes(row.embedding)!, 'embedding');
  const search = transport.bytes(row.search_embedding);
  const toBeIndexed: Record<string, boolean> = {};
  for (const [column, value] of Object.entries(row)) {
    if (column.startsWith(VARIANT_COLUMN_PREFIX) && typeof value === 'boolean') {
      toBeIndexed[column.slice(VARIANT_COLUMN_PREFIX.length)] = value;
    }
  }
  return {
    id: row.id as string,
    embedding,
    searchEmbedding: search === null ? embedding : vectorFromBytes(search, 'search_embedding'),
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

/** The rows of one upsert statement: their vectors have one length, and their search vectors one. */
interface UpsertChunk {
  rows: EmbeddingRow[];
  /** Bytes of each embedding, and of each search embedding. */
  width: number;
  searchWidth: number;
}

/**
 * Rows in id order (concurrent batches then lock alike), cut into statements: one for a batch of
 * one dimension within the bounds above.
 */
function chunksOf(rows: Iterable<EmbeddingRow>): UpsertChunk[] {
  const byShape = new Map<string, UpsertChunk[]>();
  const chunks: UpsertChunk[] = [];
  for (const row of [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const width = row.embedding.byteLength;
    const searchWidth = (row.searchEmbedding ?? row.embedding).byteLength;
    const shape = `${width}:${searchWidth}`;
    let open = byShape.get(shape);
    if (open === undefined) {
      open = [];
      byShape.set(shape, open);
    }
    let chunk = open.at(-1);
    const rowBytes = width + (row.searchEmbedding ? searchWidth : 0);
    if (
      chunk === undefined ||
      chunk.rows.length >= MAX_ROWS_PER_STATEMENT ||
      chunkBytes(chunk) + rowBytes > MAX_VECTOR_BYTES_PER_STATEMENT
    ) {
      chunk = { rows: [], width, searchWidth };
      open.push(chunk);
      chunks.push(chunk);
    }
    chunk.rows.push(row);
  }
  return chunks;
}

function chunkBytes(chunk: UpsertChunk): number {
  let bytes = 0;
  for (const row of chunk.rows) bytes += chunk.width + (row.searchEmbedding ? chunk.searchWidth : 0);
  return bytes;
}

export class EmbeddingsRepository {
  constructor(
    private readonly db: SqlQueryable,
    private readonly tables: EntityTables,
    private readonly transport: VectorTransport,
  ) {}

  /**
   * Inserts or replaces the rows (one statement for a batch of one dimension, several in one
   * transaction beyond a few MB); returns how many distinct rows were written. A flag for a variant
   * with no column is FAILED_PRECONDITION: register the variant first.
   */
  async upsert(table: string, batch: EmbeddingBatch): Promise<number> {
    const { written } = await this.#upsert(table, batch, []);
    return written;
  }

  /**
   * {@link upsert}, answering with the index flags of `variants` that the written rows hold now
   * (their own, and for variants a row did not name, the flag it kept): what reading them back
   * would return, without the read.
   */
  async upsertReturningFlags(
    table: string,
    batch: EmbeddingBatch,
    variants: readonly string[],
  ): Promise<IndexFlags> {
    const { flags } = await this.#upsert(table, batch, variants);
    return flags;
  }

  async #upsert(
    table: string,
    batch: EmbeddingBatch,
    returned: readonly string[],
  ): Promise<{ written: number; flags: IndexFlags }> {
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
      for (const [vector, field] of [
        [row.embedding, 'embedding'],
        [row.searchEmbedding ?? row.embedding, 'search_embedding'],
      ] as const) {
        if (!(vector instanceof Float32Array) || vector.length === 0) {
          throw new LatticeError('INVALID_ARGUMENT', `rows[${i}].${field} must be a non-empty Float32Array`, {
            field: `rows[${i}].${field}`,
          });
        }
      }
      for (const variant of Object.keys(row.toBeIndexed ?? {})) {
        flagColumns.set(variant, variantColumn(variant, `rows[${i}].to_be_indexed.${variant}`));
      }
      latest.delete(row.id); // re-inserted below, so the map keeps the last write's position
      latest.set(row.id, row);
    });
    const returnedColumns = new Map(returned.map((v, i) => [v, variantColumn(v, `variants[${i}]`)]));
    const flags: IndexFlags = new Map();
    if (latest.size === 0) return { written: 0, flags };
    await this.#requireFlagColumns(name, new Map([...flagColumns, ...returnedColumns]));

    const variants = [...flagColumns.keys()].sort();
    const chunks = chunksOf(latest.values());
    const write = async (db: SqlQueryable, chunk: UpsertChunk) => {
      const { rows } = await withConstraintErrors(() =>
        db.query<Record<string, unknown>>(
          this.#upsertStatement(name, chunk, variants, [...returnedColumns.values()], ttl),
          this.#upsertParams(batch, chunk, variants, ttl),
        ),
      );
      for (const row of rows) {
        const own: Record<string, boolean> = {};
        for (const [variant, column] of returnedColumns) {
          const value = row[column];
          if (typeof value === 'boolean') own[variant] = value;
        }
        flags.set(row.id as string, own);
      }
    };
    if (chunks.length === 1) await write(this.db, chunks[0]!);
    else {
      await atomically(this.db, async (tx) => {
        for (const chunk of chunks) await write(tx, chunk);
      });
    }
    return { written: latest.size, flags };
  }

  /**
   * One INSERT … SELECT over arrays: the ids, a flag array per variant (null: not named, so a row
   * that exists keeps its flag), and every vector in one bytea that the statement cuts per row
   * (embeddings first, by position; then the search embeddings, by the byte offset each row names).
   * Parameters: $1 model_name, $2 version, $3 vectors, $4 ids, $5 search offsets, $6… flags, then ttl.
   */
  #upsertStatement(
    table: SqlIdentifier,
    chunk: UpsertChunk,
    variants: readonly string[],
    returned: readonly SqlIdentifier[],
    ttl: number,
  ): string {
    const flags = variants.map((variant) => quoteIdentifier(variantColumn(variant)));
    const flagParams = flags.map((_, f) => `$${6 + f}::boolean[]`);
    const expires =
      ttl > 0 ? `now() + $${6 + flags.length}::integer * interval '1 second'` : 'NULL::timestamptz';
    const columns = ['model_name', 'version', 'id', 'embedding', 'search_embedding', 'expires_at', ...flags];
    const flagValues = flags.map((_, f) => `, u.f${f}`).join('');
    const updates = [
      'embedding = EXCLUDED.embedding',
      'search_embedding = EXCLUDED.search_embedding',
      'expires_at = EXCLUDED.expires_at',
      ...flags.map((c) => `${c} = coalesce(EXCLUDED.${c}, vss_row.${c})`),
    ];
    const returning =
      returned.length === 0 ? '' : `RETURNING id, ${returned.map(quoteIdentifier).join(', ')}`;
    // The vectors are decoded once (MATERIALIZED), not per row; vss_ names cannot be a table's.
    return `WITH vss_vectors AS MATERIALIZED (SELECT ${this.transport.expression('$3')} AS bytes)
            INSERT INTO ${quoteIdentifier(table)} AS vss_row (${columns.join(', ')})
            SELECT $1::text, $2::integer, u.id,
                   substr(v.bytes, (u.n::integer - 1) * ${chunk.width} + 1, ${chunk.width}),
                   substr(v.bytes, u.search_at + 1, ${chunk.searchWidth}),
                   ${expires}${flagValues}
              FROM vss_vectors v,
                   unnest($4::text[], $5::integer[]${flagParams.map((p) => `, ${p}`).join('')})
                     WITH ORDINALITY AS u(id, search_at${flags.map((_, f) => `, f${f}`).join('')}, n)
            ON CONFLICT (model_name, version, id) DO UPDATE SET ${updates.join(', ')}
            ${returning}`;
  }

  #upsertParams(
    batch: EmbeddingBatch,
    chunk: UpsertChunk,
    variants: readonly string[],
    ttl: number,
  ): SqlValue[] {
    const { rows, width } = chunk;
    const vectors = Buffer.allocUnsafe(chunkBytes(chunk));
    const searchAt: (number | null)[] = [];
    let searchOffset = rows.length * width;
    rows.forEach((row, i) => {
      vectors.set(vectorBytes(row.embedding), i * width);
      if (row.searchEmbedding) {
        vectors.set(vectorBytes(row.searchEmbedding), searchOffset);
        searchAt.push(searchOffset);
        searchOffset += chunk.searchWidth;
      } else searchAt.push(null);
    });
    const params: SqlValue[] = [
      batch.modelName,
      batch.version,
      this.transport.value(vectors),
      rows.map((row) => row.id),
      searchAt,
    ];
    for (const variant of variants) params.push(rows.map((row) => row.toBeIndexed?.[variant] ?? null));
    if (ttl > 0) params.push(ttl);
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
    const rows = await this.#selectRows(
      name,
      `model_name = $1 AND version = $2 AND id = ANY($3::text[]) AND ${live}`,
      [request.modelName, request.version, ids],
    );
    for (const stored of rows) found.set(stored.id, stored);
    return found;
  }

  /**
   * Whole rows `where` selects (a condition, then any ORDER BY and LIMIT; its parameters from $1),
   * the vectors read as the transport reads them. The flag columns come from the column cache, and
   * each statement also counts the table's columns: a count the cache does not match means a variant
   * registered since (through another store or process), so the columns are read again and the
   * statement repeated, once.
   */
  async #selectRows(table: SqlIdentifier, where: string, params: SqlValue[]): Promise<StoredEmbedding[]> {
    let columns = await this.tables.allColumns(table);
    for (let reloaded = false; ; reloaded = true) {
      const flags = [...columns]
        .filter((column) => column.startsWith(VARIANT_COLUMN_PREFIX))
        .map((column) => `, ${quoteIdentifier(column as SqlIdentifier)}`)
        .join('');
      const { rows } = await this.db.query<Record<string, unknown>>(
        `SELECT id, expires_at${flags},
                ${this.transport.read('embedding')} AS embedding,
                ${this.transport.read('search_embedding')} AS search_embedding,
                (SELECT count(*)::integer FROM pg_attribute
                  WHERE attrelid = $${params.length + 1}::regclass AND attnum > 0 AND NOT attisdropped) AS vss_columns
           FROM ${quoteIdentifier(table)}
          WHERE ${where}`,
        [...params, quoteIdentifier(table)],
      );
      if (reloaded || rows.length === 0 || rows[0]!.vss_columns === columns.size) {
        return rows.map((row) => toStored(row, this.transport));
      }
      columns = await this.tables.allColumns(table, true);
    }
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
    return this.#selectRows(
      name,
      `model_name = $1 AND version = $2 AND id > $3 AND ${live} ${flag} ORDER BY id LIMIT $4`,
      params,
    );
  }

  /**
   * Up to `limit` live rows of the version, a spread-out sample that is the same on every call (rows
   * ordered by a hash of their id, not by the id): the recall gate's queries
   * (admin/operations/recall-gate.ts).
   */
  async sample(
    table: string,
    request: { modelName: string; version: number; limit: number },
  ): Promise<StoredEmbedding[]> {
    const name = tableName(table, 'embeddings_table');
    integerField(request.limit, 'limit', 1, 10_000);
    return this.#selectRows(name, `model_name = $1 AND version = $2 AND ${live} ORDER BY md5(id) LIMIT $3`, [
      request.modelName,
      request.version,
      request.limit,
    ]);
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

  /**
   * Up to `limit` expired rows' keys, for the sweep to remove their points from the index before it
   * deletes the rows ({@link deleteExpired}): a crash in between leaves rows the next sweep finds again.
   */
  async expiredKeys(table: string, limit = 10_000): Promise<ExpiredKey[]> {
    const name = quoteIdentifier(tableName(table, 'embeddings_table'));
    integerField(limit, 'limit', 1, 1_000_000);
    const { rows } = await this.db.query<{ model_name: string; version: number; id: string }>(
      `SELECT model_name, version, id FROM ${name} WHERE expires_at <= now() LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({ modelName: row.model_name, version: Number(row.version), id: row.id }));
  }

  /** Deletes the rows of `keys` that are still expired (one re-written meanwhile stays); how many. */
  async deleteExpired(table: string, keys: readonly ExpiredKey[]): Promise<number> {
    if (keys.length === 0) return 0;
    const name = quoteIdentifier(tableName(table, 'embeddings_table'));
    const { rowCount } = await this.db.query(
      `DELETE FROM ${name}
        WHERE (model_name, version, id) IN (
                SELECT * FROM unnest($1::text[], $2::integer[], $3::text[]))
          AND expires_at <= now()`,
      [keys.map((k) => k.modelName), keys.map((k) => k.version), keys.map((k) => k.id)],
    );
    return rowCount;
  }
}

/** An embedding-store row by its key. */
export interface ExpiredKey {
  modelName: string;
  version: number;
  id: string;
}
