/**
 * The `VectorDb` port: collections of vectors with payloads, searched by nearest neighbour under
 * payload filters. vss depends on this file only; adapters are the embedded HNSW engine
 * (`embedded/collection/embedded-vector-db.ts`), Qdrant (`qdrant/`) and pgvector (`pgvector/`).
 * Every adapter passes the contract suite in test/platform/vectordb/contract.ts.
 *
 * One collection holds one model version. Variants are not collections: a variant's membership
 * (`to_be_indexed_<variant>`) and the aggregator attributes are payload fields, and a variant's
 * queries filter on them, so variants share one copy of every vector.
 *
 * Guarantees, the same for every adapter:
 *
 * - **Scores.** DOT and COSINE scores are similarities, higher is better, results descend. For
 *   EUCLIDEAN the score is the distance (not squared), lower is better, results ascend. Equal scores
 *   are ordered by id, so a ranking is deterministic.
 * - **Filters.** All filters of a query must hold (AND). See {@link FilterOp} for each operator.
 * - **Exactly `limit`.** A filtered search returns `limit` hits whenever at least `limit` searchable
 *   points match; fewer only when fewer match. There is no offset: serving cuts its pages from one
 *   ranking of its own and pins them with its tokens (vss.md), so the port only ever answers the
 *   best `limit`.
 * - **Exact on request.** `exact: true` answers by brute force (the true ranking); see
 *   {@link SearchRequest.exact}.
 * - **Indexed only.** A point is *indexed* once it is in the ANN structure. `indexedOnly` searches
 *   see indexed points only; other searches also see points still waiting to be indexed.
 * - **Errors** are {@link LatticeError}s: INVALID_ARGUMENT naming the offending field (`dimension`,
 *   `points[3].vector`, `queries[0].vector`, `filters[1].values`, …), NOT_FOUND for an unknown
 *   collection (field `collection`), ALREADY_EXISTS for a create that conflicts with an existing
 *   collection, UNAVAILABLE when the database cannot be reached or has been closed.
 */

export type DistanceFunction = 'DOT' | 'COSINE' | 'EUCLIDEAN';

export const DISTANCE_FUNCTIONS: readonly DistanceFunction[] = ['DOT', 'COSINE', 'EUCLIDEAN'];

/** Graph parameters of the HNSW index (the names Qdrant and the papers use). */
export interface HnswParams {
  /** Links per node; more links raise recall and memory. */
  m: number;
  /** Candidate list size while inserting; higher builds slower and better. */
  efConstruction: number;
  /** Candidate list size while searching; raised per query to at least `limit`. */
  efSearch: number;
}

/**
 * efSearch 96: on overlapping clusters in 256 dimensions (bench vss-recall, harder fixture, 100,000
 * points) recall@10 is 0.945 at ef 64, 0.966 at 80, 0.978 at 96, 0.990 at 112 and 0.993 at 128;
 * 96 is the smallest step with a clear margin over 0.95, and each step costs about 8 % of throughput.
 */
export const HNSW_DEFAULTS: Readonly<HnswParams> = { m: 16, efConstruction: 128, efSearch: 96 };

export interface CollectionSpec {
  /** Letters, digits, `_`, `-` and `.`, not starting with `.` or `-`; at most 200 characters. */
  name: string;
  /** Values per vector, 1 to 65,536. */
  dimension: number;
  distance: DistanceFunction;
  /** Omitted fields take {@link HNSW_DEFAULTS}. */
  hnsw?: Partial<HnswParams>;
}

/**
 * A payload value. Strings, numbers (finite) and booleans are scalars; a string array holds several
 * values of one field (tags), and a filter on it matches when any element matches.
 */
export type PayloadValue = string | number | boolean | string[];

export type Payload = Record<string, PayloadValue>;

export type VectorInput = Float32Array | readonly number[];

export interface PointInput {
  /** Any non-empty string up to 1,024 characters; an existing id is replaced (vector and payload). */
  id: string;
  vector: VectorInput;
  payload?: Payload;
}

/**
 * The operators of vss.v1 `FilterOp`. Values are strings, as on the wire; numbers in them are
 * parsed, and `"true"` / `"false"` match booleans.
 *
 * - `IN`: the field equals one of `values` (a string equals the same string, a number equals a value
 *   that parses to the same number, a boolean equals `"true"`/`"false"`; an array field matches when
 *   any element does). At least one value.
 * - `NOT_IN`: not `IN`; points without the field match.
 * - `EXISTS` / `NOT_EXISTS`: the field is present / absent (an empty array counts as absent);
 *   `values` must be empty.
 * - `LT`, `LTE`, `GT`, `GTE`: one numeric value; only numeric payload values match.
 * - `BETWEEN` (both ends excluded), `BETWEEN_INCLUSIVE` (both included): two numeric values, low
 *   then high; only numeric payload values match.
 */
export type FilterOp =
  | 'IN'
  | 'NOT_IN'
  | 'EXISTS'
  | 'NOT_EXISTS'
  | 'LT'
  | 'LTE'
  | 'GT'
  | 'GTE'
  | 'BETWEEN'
  | 'BETWEEN_INCLUSIVE';

export const FILTER_OPS: readonly FilterOp[] = [
  'IN',
  'NOT_IN',
  'EXISTS',
  'NOT_EXISTS',
  'LT',
  'LTE',
  'GT',
  'GTE',
  'BETWEEN',
  'BETWEEN_INCLUSIVE',
];

export interface Filter {
  field: string;
  op: FilterOp;
  values: readonly string[];
}

export interface SearchQuery {
  vector: VectorInput;
  /** Added to the request's filters (AND). */
  filters?: readonly Filter[];
  /** Ids never returned, such as the candidate a query-by-id starts from. */
  excludeIds?: readonly string[];
}

export interface SearchRequest {
  collection: string;
  queries: readonly SearchQuery[];
  /** Applied to every query. */
  filters?: readonly Filter[];
  /** Hits per query, 1 to 10,000. */
  limit: number;
  /** Search indexed points only (the serving path); default false. */
  indexedOnly?: boolean;
  /**
   * The HNSW candidate list width of this search, 1 to 4,096 (`efSearch`); the collection's when
   * omitted. A wider one finds more true neighbours for more work, so recall is tuned per search
   * (a variant's live `ef_search`, a client's `search_width`) without rebuilding the collection.
   * Adapters widen it to at least the depth they need, never narrow it.
   */
  efSearch?: number;
  /**
   * Exact (brute-force) search: every point the filters admit is scored, so the answer is the true
   * top `limit`, whatever the index. Default false (the index's approximate search). It is the
   * ground truth the admin's recall gate (vss verify_recall) measures the approximate search
   * against, so every adapter must implement it: the embedded engine scans its rows, Qdrant sends
   * `params.exact`. With `indexedOnly` the exact search covers the indexed points only (what an
   * `indexedOnly` approximate search could find). Slow on large collections: not for serving.
   */
  exact?: boolean;
  /** Return payloads: `true` for all fields, a list for those fields only; default false. */
  withPayload?: boolean | readonly string[];
  /** Return vectors; default false. */
  withVector?: boolean;
}

export interface SearchHit {
  id: string;
  score: number;
  payload?: Payload;
  vector?: Float32Array;
}

export interface GetPointsOptions {
  /** Default true. */
  withVector?: boolean;
  /** Default true; a list returns those fields only. */
  withPayload?: boolean | readonly string[];
}

export interface StoredPoint {
  id: string;
  vector?: Float32Array;
  payload?: Payload;
}

/** `READY`: every point is indexed. `INDEXING`: some wait to be. `FAILED`: indexing stopped. */
export type CollectionStatus = 'READY' | 'INDEXING' | 'FAILED';

export interface CollectionInfo {
  name: string;
  dimension: number;
  distance: DistanceFunction;
  hnsw: HnswParams;
  /** Live points (deleted ones excluded). */
  points: number;
  /** Live points searchable with `indexedOnly`. */
  indexedPoints: number;
  status: CollectionStatus;
}

export interface VectorDb {
  /**
   * Creates a collection. Creating one that exists with the same dimension, distance and HNSW
   * parameters does nothing (admin steps are retried); a different one is ALREADY_EXISTS.
   */
  createCollection(spec: CollectionSpec): Promise<void>;

  /** Drops a collection and its points; false when there was none. */
  dropCollection(name: string): Promise<boolean>;

  /** Names of the collections, sorted. */
  listCollections(): Promise<string[]>;

  /** Point counts and status; NOT_FOUND for an unknown collection. */
  collectionInfo(name: string): Promise<CollectionInfo>;

  /**
   * Inserts or replaces points (vector and whole payload). All are validated before any is written;
   * within one call a repeated id keeps its last occurrence.
   */
  upsert(collection: string, points: readonly PointInput[]): Promise<void>;

  /** Deletes points; unknown ids are ignored. Resolves to the number deleted. */
  delete(collection: string, ids: readonly string[]): Promise<number>;

  /**
   * Merges `payload` into each named point's payload (fields given replace, others stay). Unknown
   * ids are ignored; resolves to the number of points updated.
   */
  setPayload(collection: string, ids: readonly string[], payload: Payload): Promise<number>;

  /** Points by id, aligned with `ids`: undefined where there is none. */
  getPoints(
    collection: string,
    ids: readonly string[],
    options?: GetPointsOptions,
  ): Promise<(StoredPoint | undefined)[]>;

  /** Nearest neighbours for each query, aligned with `request.queries`, best first. */
  search(request: SearchRequest): Promise<SearchHit[][]>;

  /** Releases resources (and persists, for adapters that do); later calls fail UNAVAILABLE. Idempotent. */
  close(): Promise<void>;
}
