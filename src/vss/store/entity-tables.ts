/**
 * The per-entity tables a store names: the embeddings table (one `to_be_indexed_<variant>` flag
 * column per variant) and the aggregator table (one text column per attribute label, plus the
 * bookkeeping column {@link APPLIED_AT_COLUMN}). Both grow while the service runs, so every change is
 * idempotent and safe when several replicas make it at once: it runs in a transaction holding an
 * advisory lock on the table's name, looks at the columns the table has, and only then alters it.
 */
import { createHash } from 'node:crypto';
import { LatticeError } from '../../platform/errors.js';
import type { SqlQueryable } from '../../platform/sql/index.js';
import {
  attributeLabel,
  quoteIdentifier,
  type SqlIdentifier,
  tableName,
  variantColumn,
} from './identifiers.js';
import { atomically } from './sql-support.js';

/**
 * Columns the store keeps for itself start with this prefix (as its own tables do): attribute labels
 * may not, so a bookkeeping column never collides with an attribute, and `columns()` leaves them out.
 */
const BOOKKEEPING_PREFIX = 'vss_';

/**
 * The aggregator's record of ordering: JSONB `{label: timestamp}` of the real-time update each
 * attribute was last written from, so an older event arriving late never overwrites a newer value.
 * Added on the first timed write (tables created before real-time ordering existed lack it).
 */
export const APPLIED_AT_COLUMN = `${BOOKKEEPING_PREFIX}applied_at` as SqlIdentifier;

/** An aggregator attribute label: an SQL name, not `id`, not in the bookkeeping prefix. */
export function attributeColumn(value: unknown, field = 'label'): SqlIdentifier {
  const label = attributeLabel(value, field);
  if (label.startsWith(BOOKKEEPING_PREFIX)) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `${field} must not start with "${BOOKKEEPING_PREFIX}" (reserved for the store's own columns), got "${label}"`,
      { field },
    );
  }
  return label;
}

/**
 * Columns known to exist, per table. Columns are only ever added, so a column once seen stays true;
 * a cache used inside a transaction must be that transaction's own (the addition may roll back).
 */
export class ColumnCache {
  readonly #tables = new Map<string, Set<string>>();

  has(table: string, column: string): boolean {
    return this.#tables.get(table)?.has(column) ?? false;
  }

  get(table: string): ReadonlySet<string> | undefined {
    return this.#tables.get(table);
  }

  remember(table: string, columns: Iterable<string>): void {
    let known = this.#tables.get(table);
    if (known === undefined) {
      known = new Set();
      this.#tables.set(table, known);
    }
    for (const column of columns) known.add(column);
  }
}

/** Index names are schema-wide: derive them from a hash of the table name, in the reserved prefix. */
function indexName(table: SqlIdentifier, purpose: string): SqlIdentifier {
  const hash = createHash('sha256').update(table).digest('hex').slice(0, 16);
  return `vss_${purpose}_${hash}` as SqlIdentifier;
}

async function lockTableName(tx: SqlQueryable, table: SqlIdentifier): Promise<void> {
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtext('vss_entity_table.' || current_schema() || '.' || $1))`,
    [table],
  );
}

/** The table's columns, or undefined when no such table is on the search path. */
async function readColumns(db: SqlQueryable, table: SqlIdentifier): Promise<Set<string> | undefined> {
  const { rows } = await db.query<{ column: string | null }>(
    `SELECT a.attname AS column
       FROM (SELECT to_regclass($1) AS oid) t
       LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE t.oid IS NOT NULL`,
    [quoteIdentifier(table)],
  );
  if (rows.length === 0) return undefined;
  return new Set(rows.flatMap((row) => (row.column === null ? [] : [row.column])));
}

const EMBEDDINGS_COLUMNS = ['model_name', 'version', 'id', 'embedding', 'search_embedding', 'expires_at'];

export class EntityTables {
  constructor(
    private readonly db: SqlQueryable,
    private readonly cache: ColumnCache = new ColumnCache(),
  ) {}

  /** Creates the embeddings table if it does not exist (key: model_name, version, id). */
  async createEmbeddingsTable(table: string, field = 'embeddings_table'): Promise<void> {
    const name = tableName(table, field);
    const t = quoteIdentifier(name);
    await atomically(this.db, async (tx) => {
      await lockTableName(tx, name);
      const existing = await readColumns(tx, name);
      if (existing !== undefined) {
        requireShape(name, existing, EMBEDDINGS_COLUMNS, field);
        return requireVectorColumns(tx, name, field);
      }
      // Vectors are float32 little-endian bytes (vector-bytes.ts).
      await tx.query(
        `CREATE TABLE ${t} (
           model_name text NOT NULL,
           version integer NOT NULL CHECK (version > 0),
           id text NOT NULL,
           embedding bytea NOT NULL,
           search_embedding bytea,
           expires_at timestamptz,
           PRIMARY KEY (model_name, version, id)
         )`,
      );
      await tx.query(
        `CREATE INDEX ${quoteIdentifier(indexName(name, 'expiry'))} ON ${t} (expires_at) WHERE expires_at IS NOT NULL`,
      );
    });
  }

  /** Creates the aggregator table if it does not exist (key: id). */
  async createAggregatorTable(table: string, field = 'aggregator_table'): Promise<void> {
    const name = tableName(table, field);
    await atomically(this.db, async (tx) => {
      await lockTableName(tx, name);
      const existing = await readColumns(tx, name);
      if (existing !== undefined) return requireShape(name, existing, ['id'], field);
      await tx.query(`CREATE TABLE ${quoteIdentifier(name)} (id text PRIMARY KEY)`);
    });
  }

  /** Adds the variant's `to_be_indexed_<variant>` flag (null until ingestion says). Idempotent. */
  async addVariantColumn(embeddingsTable: string, variant: string): Promise<void> {
    await this.addColumns(
      tableName(embeddingsTable, 'embeddings_table'),
      [variantColumn(variant)],
      'boolean',
    );
  }

  /** Adds one text column per label that the aggregator table does not have yet. Idempotent. */
  async addAttributeColumns(aggregatorTable: string, labels: readonly string[]): Promise<void> {
    const table = tableName(aggregatorTable, 'aggregator_table');
    const columns = labels.map((label, i) => attributeColumn(label, `labels[${i}]`));
    await this.addColumns(table, columns, 'text');
  }

  /** Adds the aggregator's {@link APPLIED_AT_COLUMN} if the table lacks it. Idempotent. */
  async addAppliedAtColumn(aggregatorTable: string): Promise<void> {
    const table = tableName(aggregatorTable, 'aggregator_table');
    await this.addColumns(table, [APPLIED_AT_COLUMN], 'jsonb');
  }

  /**
   * The table's columns (bookkeeping columns left out); served from the cache when it knows every
   * column in `expected`, read from the catalog otherwise. NOT_FOUND when the table does not exist.
   */
  async columns(table: SqlIdentifier, expected: readonly string[] = []): Promise<ReadonlySet<string>> {
    const known = this.cache.get(table);
    if (known !== undefined && expected.every((column) => known.has(column)))
      return withoutBookkeeping(known);
    const columns = await readColumns(this.db, table);
    if (columns === undefined) throw missingTable(table);
    this.cache.remember(table, columns);
    return withoutBookkeeping(columns);
  }

  /**
   * Every column of the table, bookkeeping ones included: from the cache, or (when it has none, or
   * with `reload`) from the catalog. NOT_FOUND when the table does not exist.
   */
  async allColumns(table: SqlIdentifier, reload = false): Promise<ReadonlySet<string>> {
    const known = this.cache.get(table);
    if (known !== undefined && !reload) return known;
    const columns = await readColumns(this.db, table);
    if (columns === undefined) throw missingTable(table);
    this.cache.remember(table, columns);
    return this.cache.get(table)!;
  }

  private async addColumns(
    table: SqlIdentifier,
    columns: readonly SqlIdentifier[],
    type: 'boolean' | 'text' | 'jsonb',
  ) {
    const missing = [...new Set(columns)].filter((column) => !this.cache.has(table, column)).sort();
    if (missing.length === 0) return;
    const present = await atomically(this.db, async (tx) => {
      await lockTableName(tx, table);
      const existing = await readColumns(tx, table);
      if (existing === undefined) throw missingTable(table);
      for (const column of missing) {
        if (existing.has(column)) continue;
        await tx.query(
          `ALTER TABLE ${quoteIdentifier(table)} ADD COLUMN IF NOT EXISTS ${quoteIdentifier(column)} ${type}`,
        );
        existing.add(column);
      }
      return existing;
    });
    this.cache.remember(table, present);
  }
}

/** Serving offers a table's columns as filter fields: the store's own columns are not attributes. */
function withoutBookkeeping(columns: ReadonlySet<string>): ReadonlySet<string> {
  for (const column of columns) {
    if (column.startsWith(BOOKKEEPING_PREFIX)) {
      return new Set([...columns].filter((name) => !name.startsWith(BOOKKEEPING_PREFIX)));
    }
  }
  return columns;
}

/** An existing table is adopted only if it has the columns the repositories use. */
function requireShape(
  table: string,
  columns: ReadonlySet<string>,
  required: readonly string[],
  field: string,
) {
  const absent = required.filter((column) => !columns.has(column));
  if (absent.length > 0) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `table "${table}" already exists without the column(s) ${absent.join(', ')}: name another table`,
      { field },
    );
  }
}

/**
 * An adopted table's vector columns hold bytes: `real[]` ones (the layout before migration 6) are
 * converted in place, as the migration converts the tables of registered stores; any other type is
 * refused.
 */
async function requireVectorColumns(tx: SqlQueryable, table: SqlIdentifier, field: string): Promise<void> {
  await tx.query('SELECT vss_embeddings_as_bytea(to_regclass($1))', [quoteIdentifier(table)]);
  const { rows } = await tx.query<{ column: string; type: string }>(
    `SELECT attname AS column, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = to_regclass($1) AND attname IN ('embedding', 'search_embedding') AND NOT attisdropped`,
    [quoteIdentifier(table)],
  );
  const wrong = rows.filter((row) => row.type !== 'bytea');
  if (wrong.length > 0) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `table "${table}" already exists with ${wrong.map((r) => `column ${r.column} of type ${r.type}`).join(' and ')} (vectors are bytea): name another table`,
      { field },
    );
  }
}

function missingTable(table: string): LatticeError {
  return new LatticeError('NOT_FOUND', `table "${table}" does not exist: register its store first`, {
    field: 'table',
  });
}
