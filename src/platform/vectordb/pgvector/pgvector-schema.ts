/**
 * What the pgvector adapter keeps in PostgreSQL, and the SQL that creates it.
 *
 * - The catalog, `<prefix>collections`: one row per collection with the spec it was created with,
 *   so `createCollection` can tell a retried create (same spec: nothing to do) from a conflicting one
 *   (ALREADY_EXISTS), and every process reads the same dimension, distance and HNSW parameters.
 * - One table per collection, `<prefix>points_<n>` (`n` from the catalog row: collection names are
 *   up to 200 characters with `.` and `-`, and PostgreSQL names are 63 bytes): `id text COLLATE "C"`
 *   (primary key), `embedding vector(d)` or `halfvec(d)`, `payload jsonb`. A collection dropped and
 *   created again gets a new table, so a process holding the old one's spec finds its table gone
 *   (SQLSTATE 42P01) instead of writing with a stale dimension.
 * - On each table an HNSW index with the collection's `m` and `ef_construction`, in the operator
 *   class of its distance, and a GIN index on the payload.
 *
 * Payload as JSONB rather than typed columns: the port has no schema. Fields arrive with the points
 * (a variant registered later adds its `to_be_indexed_<variant>` flag to every point), a field may
 * hold a string on one point and a number on another, and a filter may name any field; typed columns
 * would need DDL on the write path whenever a new field appears. The GIN index (`jsonb_ops`) answers
 * the containment and key-existence conditions that IN and EXISTS compile to (pgvector-filters.ts),
 * which are the selective filters vss serves (membership flags, aggregator attributes). Range
 * conditions are evaluated per row: on the planner's exact path they narrow rows that other
 * conditions (or a sequential scan) produce, on the HNSW path the rows the graph returns.
 *
 * Vector types by dimension (pgvector's limits): HNSW indexes `vector` up to 2,000 dimensions and
 * `halfvec` (16-bit floats) up to 4,000. Collections of 2,001 to 4,000 dimensions are stored as
 * halfvec: vectors read back and scores carry half precision (about 3 significant digits, values
 * beyond ±65,504 are refused). Beyond 4,000 no HNSW index can be built, and an adapter that would
 * answer every search by a full exact scan is no ANN database: `createCollection` refuses with
 * INVALID_ARGUMENT naming `dimension`.
 */
import { invalidArgument } from '../../errors.js';
import type { DistanceFunction, HnswParams } from '../vector-db.js';

export const MAX_VECTOR_DIMENSION = 2000;
export const MAX_HALFVEC_DIMENSION = 4000;

export type VectorStorage = 'vector' | 'halfvec';

export function storageFor(dimension: number): VectorStorage | undefined {
  if (dimension <= MAX_VECTOR_DIMENSION) return 'vector';
  if (dimension <= MAX_HALFVEC_DIMENSION) return 'halfvec';
  return undefined;
}

/** pgvector's operators: `<#>` is the negated inner product, `<=>` the cosine distance, `<->` L2. */
export const DISTANCE_OPERATORS: Record<DistanceFunction, string> = {
  DOT: '<#>',
  COSINE: '<=>',
  EUCLIDEAN: '<->',
};

const OPERATOR_CLASSES: Record<DistanceFunction, string> = {
  DOT: 'ip_ops',
  COSINE: 'cosine_ops',
  EUCLIDEAN: 'l2_ops',
};

/**
 * The port's score of a point, from pgvector's distance `d`: DOT −d (the inner product), COSINE
 * 1 − d (the similarity; pgvector answers NaN when either vector is zero, which scores 0 here, as
 * the embedded engine scores it), EUCLIDEAN d.
 */
export function scoreExpression(distance: DistanceFunction, d: string): string {
  switch (distance) {
    case 'DOT':
      return `(-(${d}))`;
    case 'COSINE':
      return `coalesce(1 - nullif(${d}, 'NaN'::float8), 0)`;
    case 'EUCLIDEAN':
      return `(${d})`;
  }
}

/** A catalog row. */
export interface CatalogRow {
  name: string;
  table_id: number;
  dimension: number;
  distance: DistanceFunction;
  m: number;
  ef_construction: number;
  ef_search: number;
  storage: VectorStorage;
}

/** A collection as the adapter works with it. */
export interface CollectionTable {
  name: string;
  /** The points table, e.g. `vectordb_points_12`. */
  table: string;
  hnswIndex: string;
  dimension: number;
  distance: DistanceFunction;
  hnsw: HnswParams;
  storage: VectorStorage;
}

export class PgvectorSchema {
  readonly catalog: string;

  /** `prefix`: lower-case letters, digits and `_`, starting with a letter or `_`, at most 30 characters. */
  constructor(readonly prefix: string) {
    if (!/^[a-z_][a-z0-9_]{0,29}$/.test(prefix)) {
      throw invalidArgument(
        `tablePrefix must be 1-30 lower-case letters, digits or "_", not starting with a digit, got ${JSON.stringify(prefix)}`,
        'tablePrefix',
      );
    }
    this.catalog = `${prefix}collections`;
  }

  /** The table of a catalog row. */
  collection(row: CatalogRow): CollectionTable {
    const table = `${this.prefix}points_${row.table_id}`;
    return {
      name: row.name,
      table,
      hnswIndex: `${table}_hnsw`,
      dimension: row.dimension,
      distance: row.distance,
      hnsw: { m: row.m, efConstruction: row.ef_construction, efSearch: row.ef_search },
      storage: row.storage,
    };
  }

  /** The catalog table (a migration: see pgvector-vector-db.ts). */
  catalogDdl(): string {
    return `CREATE TABLE ${this.catalog} (
  name text COLLATE "C" NOT NULL,
  table_id bigint GENERATED ALWAYS AS IDENTITY,
  dimension integer NOT NULL,
  distance text NOT NULL CONSTRAINT distance CHECK (distance IN ('DOT', 'COSINE', 'EUCLIDEAN')),
  m integer NOT NULL,
  ef_construction integer NOT NULL,
  ef_search integer NOT NULL,
  storage text NOT NULL CONSTRAINT storage CHECK (storage IN ('vector', 'halfvec')),
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT ${this.catalog}_pkey PRIMARY KEY (name),
  CONSTRAINT ${this.catalog}_table_id_key UNIQUE (table_id)
)`;
  }

  /** The statements creating a collection's table and indexes, in order. */
  collectionDdl(c: CollectionTable): string[] {
    return [
      `CREATE TABLE ${c.table} (
  id text COLLATE "C" NOT NULL,
  embedding ${c.storage}(${c.dimension}) NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  CONSTRAINT ${c.table}_pkey PRIMARY KEY (id)
)`,
      // Built on the empty table, the index takes every point as it is inserted (pgvector indexes
      // synchronously): a point is in the graph once its upsert has committed.
      `CREATE INDEX ${c.hnswIndex} ON ${c.table} USING hnsw (embedding ${c.storage}_${OPERATOR_CLASSES[c.distance]}) WITH (m = ${c.hnsw.m}, ef_construction = ${c.hnsw.efConstruction})`,
      `CREATE INDEX ${c.table}_payload ON ${c.table} USING gin (payload)`,
    ];
  }
}
