/**
 * The pgvector adapter: the VectorDb port on PostgreSQL with the pgvector extension, through the SQL
 * port (`SqlClient`), so it runs on a PostgreSQL server (shared by every process of a deployment)
 * and on PGlite (in this process; open its SQL client with `vector: true`). Tables and indexes are
 * described in pgvector-schema.ts, filters in pgvector-filters.ts, the search plan in query-plan.ts.
 *
 * Indexing is synchronous: pgvector inserts a point into the HNSW graph within its INSERT, so a point
 * is indexed as soon as its upsert has committed, `indexedOnly` searches see what other searches see,
 * and `collectionInfo` reports `indexedPoints = points` while the collection's HNSW index is valid
 * (and 0, status FAILED, if it is not: an index left invalid by a failed build searches nothing).
 *
 * Searches: each query is planned (query-plan.ts): an exact scan (`ORDER BY` score over the rows the
 * filters leave, behind an `OFFSET 0` fence so PostgreSQL cannot answer it from the HNSW index) or
 * the HNSW index with `hnsw.ef_search` (the search's or else the collection's, raised to the window, at most 1,000) and
 * `hnsw.iterative_scan = relaxed_order` in effect for that statement (`SqlClient.queryWithSettings`:
 * on PostgreSQL one round trip while the pooled connection already has those values, which is the
 * steady state of a service searching one collection at one width; a SET first when they differ).
 * Relaxed order may return hits slightly out of order, so they are re-sorted; an HNSW pass that comes
 * back with fewer hits than asked (a filter the graph walk could not satisfy within
 * `hnsw.max_scan_tuples`) is answered again by an exact scan, so a search returns `limit` hits
 * whenever that many match. Equal scores are ordered by id as the port says (ranking.ts).
 *
 * Zero vectors in a COSINE collection score 0 (pgvector's cosine distance is NaN there) and are not
 * in pgvector's cosine graph: the HNSW path does not find them, exact scans do.
 */
import { invalidArgument, isLatticeError, LatticeError } from '../../errors.js';
import { migrate, type SqlClient, type SqlQueryable } from '../../sql/index.js';
import { type CompiledFilter, compileFilters } from '../filters.js';
import { cutPage, firstWindow, sortHits, widerWindow } from '../ranking.js';
import {
  closedError,
  collectionConflict,
  collectionNotFound,
  sameSpec,
  selectPayload,
  type ValidatedSpec,
  validateCollectionSpec,
  validateIds,
  validatePayload,
  validatePoints,
  validateSearchShape,
  validateVector,
} from '../validation.js';
import type {
  CollectionInfo,
  CollectionSpec,
  GetPointsOptions,
  Payload,
  PointInput,
  SearchHit,
  SearchRequest,
  StoredPoint,
  VectorDb,
} from '../vector-db.js';
import { CandidateCounts } from './candidate-counts.js';
import { filterConditions } from './pgvector-filters.js';
import {
  type CatalogRow,
  type CollectionTable,
  DISTANCE_OPERATORS,
  MAX_HALFVEC_DIMENSION,
  PgvectorSchema,
  scoreExpression,
  storageFor,
} from './pgvector-schema.js';
import { exactScanCap, PGVECTOR_PLANNER_DEFAULTS, type PgvectorPlannerSettings } from './query-plan.js';
import { SqlParameters } from './sql-parameters.js';

export interface PgvectorVectorDbOptions {
  /** The database; it needs the `vector` extension (PGlite: open it with `vector: true`). */
  sql: SqlClient;
  /**
   * Prefix of the adapter's tables (`<prefix>collections`, `<prefix>points_<n>`,
   * `<prefix>migrations`); default `vectordb_`. Two vector databases on one SQL database (vss's
   * experiment and production clusters) need different prefixes.
   */
  tablePrefix?: string;
  /** Close `sql` when the adapter is closed (default false: the SQL client has another owner). */
  closeSql?: boolean;
  planner?: Partial<PgvectorPlannerSettings>;
}

/** How searches were answered since the adapter opened, per query (for tests and diagnostics). */
export interface PgvectorSearchStats {
  /** Queries answered by an exact scan, as planned. */
  exact: number;
  /** Queries answered from the HNSW index. */
  hnsw: number;
  /** HNSW passes that came back short and were answered by an exact scan instead. */
  hnswShort: number;
  /** Filtered queries whose candidates were counted (the others were planned from a remembered count). */
  candidateCounts: number;
}

/** pgvector 0.8.0 brought iterative index scans, which filtered HNSW searches rely on. */
const MIN_PGVECTOR = [0, 8, 0];

/** pgvector's largest `hnsw.ef_search`: a wider search (the port admits 4,096) runs at this width. */
const MAX_EF_SEARCH = 1000;

/** Values per upsert statement: about 2 MB of vector text. */
const VALUES_PER_STATEMENT = 262_144;
const MAX_POINTS_PER_STATEMENT = 1000;

interface PreparedQuery {
  vector: Float32Array;
  filters: CompiledFilter[];
  exclude: string[];
}

interface Row {
  id: string;
  score: number;
  payload?: Payload;
  vector?: number[];
}

function vectorText(vector: Float32Array): string {
  return `[${vector.join(',')}]`;
}

function undefinedTable(err: unknown): boolean {
  return err instanceof LatticeError && err.message.includes('[SQLSTATE 42P01]');
}

function versionAtLeast(version: string, minimum: readonly number[]): boolean {
  const parts = version.split('.').map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < minimum.length; i++) {
    const have = parts[i] ?? 0;
    if (have !== minimum[i]) return have > minimum[i]!;
  }
  return true;
}

/** Makes the `vector` extension available in the database, or says how to. */
async function ensureExtension(sql: SqlClient): Promise<string> {
  const installed = async () =>
    (await sql.query<{ extversion: string }>(`SELECT extversion FROM pg_extension WHERE extname = 'vector'`))
      .rows[0]?.extversion;
  let version = await installed();
  if (version === undefined) {
    try {
      await sql.query('CREATE EXTENSION IF NOT EXISTS vector');
    } catch (err) {
      // Two processes creating it at once: one wins, the other sees a unique violation.
      if (!(err instanceof LatticeError && err.code === 'ALREADY_EXISTS')) {
        const how =
          sql.kind === 'pglite'
            ? 'open the PGlite SQL client with vector: true'
            : 'install pgvector on the server (scripts/test-services.sh builds 0.8.6 from ../shared/vendor) and let this user create the extension, or run CREATE EXTENSION vector as a superuser';
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `the pgvector extension is not available (${err instanceof Error ? err.message : String(err)}): ${how}`,
          { cause: err },
        );
      }
    }
    version = await installed();
  }
  if (version === undefined || !versionAtLeast(version, MIN_PGVECTOR)) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `pgvector ${MIN_PGVECTOR.join('.')} or later is needed (iterative index scans), the database has ${version ?? 'none'}: ALTER EXTENSION vector UPDATE`,
    );
  }
  return version;
}

function validatedOf(row: CatalogRow): ValidatedSpec {
  return {
    name: row.name,
    dimension: row.dimension,
    distance: row.distance,
    hnsw: { m: row.m, efConstruction: row.ef_construction, efSearch: row.ef_search },
  };
}

const CATALOG_COLUMNS = 'name, table_id, dimension, distance, m, ef_construction, ef_search, storage';

export class PgvectorVectorDb implements VectorDb {
  readonly #sql: SqlClient;
  readonly #schema: PgvectorSchema;
  readonly #closeSql: boolean;
  readonly #planner: PgvectorPlannerSettings;
  /** Collections by name, as last read from the catalog (dropped when their table is found gone). */
  readonly #collections = new Map<string, CollectionTable>();
  /** Catalog reads under way, by collection name. */
  readonly #loading = new Map<string, Promise<CollectionTable>>();
  /** Point counts for the planner, by table. */
  readonly #pointCounts = new Map<string, { points: number; at: number }>();
  /** Candidate counts of filters, for the planner (candidate-counts.ts). */
  readonly #candidateCounts: CandidateCounts;
  /** Candidate counts under way, by table and filter key: searches arriving meanwhile wait for them. */
  readonly #counting = new Map<string, { cap: number; generation: number; found: Promise<number> }>();
  readonly #stats: PgvectorSearchStats = { exact: 0, hnsw: 0, hnswShort: 0, candidateCounts: 0 };
  /** The extension's version in the database. */
  readonly pgvectorVersion: string;
  #closing: Promise<void> | undefined;

  private constructor(options: PgvectorVectorDbOptions, schema: PgvectorSchema, version: string) {
    this.#sql = options.sql;
    this.#schema = schema;
    this.#closeSql = options.closeSql ?? false;
    this.#planner = { ...PGVECTOR_PLANNER_DEFAULTS, ...options.planner };
    this.#candidateCounts = new CandidateCounts(this.#planner.candidateCountMaxAgeMs);
    this.pgvectorVersion = version;
  }

  /**
   * Makes sure the extension and the catalog exist (the catalog is a numbered migration of its own,
   * `<prefix>migrations`, so replicas starting together create it once), then answers the adapter.
   */
  static async open(options: PgvectorVectorDbOptions): Promise<PgvectorVectorDb> {
    try {
      const schema = new PgvectorSchema(options.tablePrefix ?? 'vectordb_');
      const version = await ensureExtension(options.sql);
      await migrate(options.sql, [{ version: 1, name: 'collections catalog', up: schema.catalogDdl() }], {
        table: `${schema.prefix}migrations`,
      });
      return new PgvectorVectorDb(options, schema, version);
    } catch (err) {
      if (options.closeSql) await options.sql.close().catch(() => {});
      throw err;
    }
  }

  searchStats(): PgvectorSearchStats {
    return { ...this.#stats };
  }

  async createCollection(input: CollectionSpec): Promise<void> {
    this.#assertOpen();
    const spec = validateCollectionSpec(input);
    const storage = storageFor(spec.dimension);
    if (storage === undefined) {
      throw invalidArgument(
        `dimension must be at most ${MAX_HALFVEC_DIMENSION} on pgvector (its HNSW index takes vector up to 2,000 dimensions and halfvec up to 4,000), got ${spec.dimension}`,
        'dimension',
      );
    }
    const { m, efConstruction, efSearch } = spec.hnsw;
    await this.#sql.transaction(async (tx) => {
      // A concurrent create of the same name waits here for the first to commit, then finds its row.
      const inserted = await tx.query<CatalogRow>(
        `INSERT INTO ${this.#schema.catalog} (name, dimension, distance, m, ef_construction, ef_search, storage)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (name) DO NOTHING
         RETURNING ${CATALOG_COLUMNS}`,
        [spec.name, spec.dimension, spec.distance, m, efConstruction, efSearch, storage],
      );
      const row = inserted.rows[0];
      if (row === undefined) {
        const existing = await this.#catalogRow(tx, spec.name);
        if (existing === undefined) {
          throw new LatticeError('ABORTED', `collection "${spec.name}" was dropped while being created`);
        }
        const known = validatedOf(existing);
        if (!sameSpec(known, spec)) throw collectionConflict(spec.name, known, spec);
        return;
      }
      const collection = this.#schema.collection(normalise(row));
      for (const statement of this.#schema.collectionDdl(collection)) await tx.query(statement);
    });
  }

  async dropCollection(name: string): Promise<boolean> {
    this.#assertOpen();
    const dropped = await this.#sql.transaction(async (tx) => {
      const deleted = await tx.query<CatalogRow>(
        `DELETE FROM ${this.#schema.catalog} WHERE name = $1 RETURNING ${CATALOG_COLUMNS}`,
        [name],
      );
      const row = deleted.rows[0];
      if (row === undefined) return undefined;
      const collection = this.#schema.collection(normalise(row));
      await tx.query(`DROP TABLE IF EXISTS ${collection.table}`);
      return collection;
    });
    this.#collections.delete(name);
    if (dropped !== undefined) this.#written(dropped.table);
    return dropped !== undefined;
  }

  async listCollections(): Promise<string[]> {
    this.#assertOpen();
    const result = await this.#sql.query<{ name: string }>(`SELECT name FROM ${this.#schema.catalog}`);
    return result.rows.map((row) => row.name).sort();
  }

  collectionInfo(name: string): Promise<CollectionInfo> {
    return this.#withCollection(name, async (c) => {
      const result = await this.#sql.query<{ points: number; valid: boolean | null }>(
        `SELECT (SELECT count(*) FROM ${c.table}) AS points,
                (SELECT indisvalid AND indisready FROM pg_index WHERE indexrelid = to_regclass($1)) AS valid`,
        [c.hnswIndex],
      );
      const points = Number(result.rows[0]?.points ?? 0);
      this.#pointCounts.set(c.table, { points, at: performance.now() });
      const valid = result.rows[0]?.valid === true;
      return {
        name: c.name,
        dimension: c.dimension,
        distance: c.distance,
        hnsw: { ...c.hnsw },
        points,
        indexedPoints: valid ? points : 0,
        status: valid ? 'READY' : 'FAILED',
      };
    });
  }

  upsert(name: string, points: readonly PointInput[]): Promise<void> {
    return this.#withCollection(name, async (c) => {
      const valid = validatePoints(points, c.dimension, name);
      if (valid.length === 0) return;
      const size = Math.max(
        1,
        Math.min(MAX_POINTS_PER_STATEMENT, Math.floor(VALUES_PER_STATEMENT / c.dimension)),
      );
      const statement = `INSERT INTO ${c.table} (id, embedding, payload)
        SELECT u.id, u.embedding::${c.storage}, u.payload::jsonb
        FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, embedding, payload)
        ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding, payload = EXCLUDED.payload`;
      const write = async (db: SqlQueryable, from: number) => {
        const part = valid.slice(from, from + size);
        await db.query(statement, [
          part.map((p) => p.id),
          part.map((p) => vectorText(p.vector)),
          part.map((p) => JSON.stringify(p.payload)),
        ]);
      };
      // One statement is atomic by itself; several share a transaction, so a batch is all or nothing.
      if (valid.length <= size) await write(this.#sql, 0);
      else {
        await this.#sql.transaction(async (tx) => {
          for (let from = 0; from < valid.length; from += size) await write(tx, from);
        });
      }
      this.#written(c.table);
    });
  }

  delete(name: string, ids: readonly string[]): Promise<number> {
    return this.#withCollection(name, async (c) => {
      validateIds(ids);
      if (ids.length === 0) return 0;
      const result = await this.#sql.query(`DELETE FROM ${c.table} WHERE id = ANY($1::text[])`, [[...ids]]);
      this.#written(c.table);
      return result.rowCount;
    });
  }

  setPayload(name: string, ids: readonly string[], payload: Payload): Promise<number> {
    return this.#withCollection(name, async (c) => {
      validateIds(ids);
      const fields = validatePayload(payload, 'payload');
      if (ids.length === 0) return 0;
      const result = await this.#sql.query(
        `UPDATE ${c.table} SET payload = payload || $2::jsonb WHERE id = ANY($1::text[])`,
        [[...ids], JSON.stringify(fields)],
      );
      // New payload, other filter matches: the point count stands, the candidate counts do not.
      this.#candidateCounts.forget(c.table);
      return result.rowCount;
    });
  }

  getPoints(
    name: string,
    ids: readonly string[],
    options: GetPointsOptions = {},
  ): Promise<(StoredPoint | undefined)[]> {
    return this.#withCollection(name, async (c) => {
      validateIds(ids);
      const withVector = options.withVector ?? true;
      const withPayload = options.withPayload ?? true;
      if (ids.length === 0) return [];
      const columns = ['id', 'payload'];
      if (withVector) columns.push(`${this.#realArray(c)} AS vector`);
      const result = await this.#sql.query<Row>(
        `SELECT ${columns.join(', ')} FROM ${c.table} WHERE id = ANY($1::text[])`,
        [[...new Set(ids)]],
      );
      const byId = new Map(result.rows.map((row) => [row.id, row]));
      return ids.map((id) => {
        const row = byId.get(id);
        if (row === undefined) return undefined;
        const point: StoredPoint = { id };
        if (withVector && row.vector) point.vector = Float32Array.from(row.vector);
        const selected = selectPayload(row.payload ?? {}, withPayload);
        if (selected) point.payload = selected;
        return point;
      });
    });
  }

  async search(request: SearchRequest): Promise<SearchHit[][]> {
    this.#assertOpen();
    validateSearchShape(request);
    return this.#withCollection(request.collection, async (c) => {
      const shared = compileFilters(request.filters, 'filters');
      const queries: PreparedQuery[] = request.queries.map((query, i) => ({
        vector: validateVector(query.vector, c.dimension, `queries[${i}].vector`, c.name, false),
        filters: [...shared, ...compileFilters(query.filters, `queries[${i}].filters`)],
        exclude: query.excludeIds === undefined ? [] : [...new Set(query.excludeIds)],
      }));
      // indexedOnly needs nothing of its own: every committed point is in the graph.
      return Promise.all(queries.map((query) => this.#searchOne(c, query, request)));
    });
  }

  close(): Promise<void> {
    this.#closing ??= this.#closeSql ? this.#sql.close() : Promise.resolve();
    return this.#closing;
  }

  async #searchOne(c: CollectionTable, query: PreparedQuery, request: SearchRequest): Promise<SearchHit[]> {
    const { limit } = request;
    const depth = limit + query.exclude.length;
    const ef = Math.max(request.efSearch ?? c.hnsw.efSearch, firstWindow(limit));
    if (request.exact) {
      // The port's exact search (the recall gate's ground truth): the scan, whatever the plan.
      this.#stats.exact++;
      return (await this.#ranked(c, query, request, 'exact'))!;
    }
    const points = await this.#pointCount(c);
    let exact: boolean;
    if (query.filters.length === 0) {
      exact = points <= Math.max(this.#planner.exactScanMinCandidates, depth);
    } else {
      const cap = exactScanCap(points, depth, ef, this.#planner);
      exact = await this.#candidatesAtMost(c, query, cap);
    }
    if (!exact) {
      const hits = await this.#ranked(c, query, request, 'hnsw');
      if (hits !== undefined) {
        this.#stats.hnsw++;
        return hits;
      }
      this.#stats.hnswShort++;
    } else this.#stats.exact++;
    return (await this.#ranked(c, query, request, 'exact'))!;
  }

  /**
   * The best `limit` hits by one path, fetched with one hit of margin and widened while the last
   * one kept ties with the next (ranking.ts); undefined when the HNSW path came back short.
   */
  async #ranked(
    c: CollectionTable,
    query: PreparedQuery,
    request: SearchRequest,
    path: 'exact' | 'hnsw',
  ): Promise<SearchHit[] | undefined> {
    const { limit } = request;
    let window = firstWindow(limit);
    for (;;) {
      const rows = await this.#fetch(c, query, request, path, window);
      if (path === 'hnsw' && rows.length < window) return undefined;
      // The HNSW path's relaxed order may be slightly off: the tie check needs the rows in order.
      sortHits(rows, c.distance);
      const wider = widerWindow(rows, window, limit);
      if (wider === undefined)
        return cutPage(
          rows.map((row) => this.#hit(row, request)),
          limit,
          c.distance,
        );
      window = wider;
    }
  }

  #hit(row: Row, request: SearchRequest): SearchHit {
    const hit: SearchHit = { id: row.id, score: Number(row.score) };
    const payload = selectPayload(row.payload ?? {}, request.withPayload);
    if (payload) hit.payload = payload;
    if (request.withVector && row.vector) hit.vector = Float32Array.from(row.vector);
    return hit;
  }

  /** Rows in the server's order (score, then id in byte order) for the exact path; graph order for HNSW. */
  async #fetch(
    c: CollectionTable,
    query: PreparedQuery,
    request: SearchRequest,
    path: 'exact' | 'hnsw',
    window: number,
  ): Promise<Row[]> {
    const params = new SqlParameters();
    const target = `${params.add(vectorText(query.vector))}::${c.storage}`;
    const distance = `embedding ${DISTANCE_OPERATORS[c.distance]} ${target}`;
    const score = scoreExpression(c.distance, distance);
    const where = this.#where(query, params);
    const fields = request.withPayload !== undefined && request.withPayload !== false;
    const limit = params.add(window);
    if (path === 'exact') {
      const inner = ['id', `${score} AS score`];
      if (fields) inner.push('payload');
      if (request.withVector) inner.push('embedding');
      const outer = ['id', 'score'];
      if (fields) outer.push('payload');
      if (request.withVector) outer.push(`${this.#realArray(c)} AS vector`);
      // OFFSET 0 keeps the subquery whole: PostgreSQL cannot order it by the HNSW index.
      const order = c.distance === 'EUCLIDEAN' ? 'ASC' : 'DESC';
      const text = `SELECT ${outer.join(', ')}
        FROM (SELECT ${inner.join(', ')} FROM ${c.table}${where} OFFSET 0) AS candidates
        ORDER BY score ${order}, id LIMIT ${limit}`;
      return (await this.#sql.query<Row>(text, params.values)).rows;
    }
    const columns = ['id', `${score} AS score`];
    if (fields) columns.push('payload');
    if (request.withVector) columns.push(`${this.#realArray(c)} AS vector`);
    const text = `SELECT ${columns.join(', ')} FROM ${c.table}${where} ORDER BY ${distance} LIMIT ${limit}`;
    const ef = Math.min(MAX_EF_SEARCH, Math.max(request.efSearch ?? c.hnsw.efSearch, window));
    const settings = { 'hnsw.ef_search': ef, 'hnsw.iterative_scan': 'relaxed_order' };
    return (await this.#sql.queryWithSettings<Row>(settings, text, params.values)).rows;
  }

  #where(query: PreparedQuery, params: SqlParameters): string {
    const conditions: string[] = [];
    const filters = filterConditions(query.filters, params);
    if (filters !== undefined) conditions.push(filters);
    if (query.exclude.length > 0) conditions.push(`id <> ALL(${params.add(query.exclude)}::text[])`);
    return conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
  }

  /**
   * Whether the query's filters leave at most `cap` rows: from a remembered count when one answers
   * (candidate-counts.ts), else counted up to `cap + 1` and remembered.
   */
  async #candidatesAtMost(c: CollectionTable, query: PreparedQuery, cap: number): Promise<boolean> {
    const params = new SqlParameters();
    const filters = filterConditions(query.filters, params) ?? 'true';
    const key = `${filters}\u0000${JSON.stringify(params.values)}`;
    const known = this.#candidateCounts.atMost(c.table, key, cap, performance.now());
    if (known !== undefined) return known;
    const generation = this.#candidateCounts.generation(c.table);
    // Searches that arrive together under one filter (a burst, or the count just expired) share
    // one count when it started since the table's last write and counts at least as far.
    const id = `${c.table}\u0000${key}`;
    const running = this.#counting.get(id);
    if (running !== undefined && running.generation === generation && running.cap >= cap) {
      return (await running.found) <= cap;
    }
    const text = `SELECT count(*) AS n FROM (SELECT 1 FROM ${c.table} WHERE ${filters} LIMIT ${params.add(cap + 1)}) AS matching`;
    this.#stats.candidateCounts++;
    const found = this.#sql
      .query<{ n: number }>(text, params.values)
      .then((result) => Number(result.rows[0]?.n ?? 0));
    const counting = { cap, generation, found };
    this.#counting.set(id, counting);
    try {
      const n = await found;
      this.#candidateCounts.record(c.table, key, cap, n, generation, performance.now());
      return n <= cap;
    } finally {
      if (this.#counting.get(id) === counting) this.#counting.delete(id);
    }
  }

  /** The table was written or is gone: what the planner remembered of it is forgotten. */
  #written(table: string): void {
    this.#pointCounts.delete(table);
    this.#candidateCounts.forget(table);
  }

  async #pointCount(c: CollectionTable): Promise<number> {
    const known = this.#pointCounts.get(c.table);
    const now = performance.now();
    if (known !== undefined && now - known.at <= this.#planner.pointCountMaxAgeMs) return known.points;
    const result = await this.#sql.query<{ n: number }>(`SELECT count(*) AS n FROM ${c.table}`);
    const points = Number(result.rows[0]?.n ?? 0);
    this.#pointCounts.set(c.table, { points, at: now });
    return points;
  }

  #realArray(c: CollectionTable): string {
    return c.storage === 'halfvec' ? 'embedding::vector::real[]' : 'embedding::real[]';
  }

  #assertOpen(): void {
    if (this.#closing !== undefined) throw closedError();
  }

  async #catalogRow(db: SqlQueryable, name: string): Promise<CatalogRow | undefined> {
    const result = await db.query<CatalogRow>(
      `SELECT ${CATALOG_COLUMNS} FROM ${this.#schema.catalog} WHERE name = $1`,
      [name],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : normalise(row);
  }

  /**
   * The collection as the catalog has it now, remembered for later calls. Concurrent calls for one
   * name share one read (a burst of searches on a collection this process has not seen yet), and
   * so settle together.
   */
  #load(name: string): Promise<CollectionTable> {
    let loading = this.#loading.get(name);
    if (loading === undefined) {
      loading = (async () => {
        try {
          const row = await this.#catalogRow(this.#sql, name);
          if (row === undefined) {
            this.#collections.delete(name);
            throw collectionNotFound(name);
          }
          const collection = this.#schema.collection(row);
          this.#collections.set(name, collection);
          return collection;
        } finally {
          this.#loading.delete(name);
        }
      })();
      this.#loading.set(name, loading);
    }
    return loading;
  }

  /**
   * Runs `work` on the named collection, known from an earlier call or read from the catalog. A
   * remembered collection may be stale: another process may have dropped it (its table is gone:
   * SQLSTATE 42P01) or created it again with another spec (a vector no longer fits: INVALID_ARGUMENT).
   * Either failure reads the catalog again, and `work` runs once more when the collection has a
   * new table since.
   */
  async #withCollection<T>(name: string, work: (c: CollectionTable) => Promise<T>): Promise<T> {
    this.#assertOpen();
    let c = this.#collections.get(name);
    let remembered = c !== undefined;
    c ??= await this.#load(name);
    for (;;) {
      try {
        return await work(c);
      } catch (err) {
        const gone = undefinedTable(err);
        if (!gone && !(remembered && isLatticeError(err, 'INVALID_ARGUMENT'))) throw err;
        this.#written(c.table);
        if (!remembered) {
          this.#collections.delete(name);
          throw collectionNotFound(name);
        }
        const now = await this.#load(name);
        if (now.table === c.table) {
          if (gone) throw collectionNotFound(name);
          throw err;
        }
        c = now;
        remembered = false;
      }
    }
  }
}

/** int8 columns may come back as strings or bigints from some drivers: numbers here. */
function normalise(row: CatalogRow): CatalogRow {
  return { ...row, table_id: Number(row.table_id) };
}
