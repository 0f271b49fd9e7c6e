/**
 * The SQL port: what services (vss model state, embedding store, aggregator) need from a relational
 * database. Adapters: PGlite (embedded, `pglite-sql-client.ts`) and PostgreSQL (`postgres-sql-client.ts`).
 * Both speak PostgreSQL's dialect: `$1` parameters, RETURNING, arrays (`real[]`, `text[]`), ON CONFLICT.
 *
 * Values the adapters agree on, so repositories never branch on the adapter:
 * - parameters: strings, numbers, bigints, booleans, null, Dates, `Uint8Array` (bytea), arrays of
 *   those (Postgres arrays), and `Float32Array` / `Float64Array` / `Int32Array` (sent as a numeric
 *   array, e.g. for `real[]`). Pass JSON as a string (`JSON.stringify`) and cast it (`$1::jsonb`).
 * - results: int2/int4/float4/float8 as numbers; int8 (e.g. `count(*)`) as a number, or a bigint when
 *   beyond 2^53; numeric as a string; arrays as arrays; bytea as a `Uint8Array`; json/jsonb parsed;
 *   timestamps as Dates.
 * - errors: `LatticeError`s (see `sql-errors.ts`): a unique violation is ALREADY_EXISTS, an unreachable
 *   server UNAVAILABLE, a statement timeout DEADLINE_EXCEEDED, a bad statement INTERNAL with its SQLSTATE.
 */

export type SqlScalar = string | number | bigint | boolean | Date | Uint8Array | null;

/** A query parameter (see the module comment for how each kind is sent). */
export type SqlValue = SqlScalar | Float32Array | Float64Array | Int32Array | readonly SqlValue[];

export interface SqlResult<Row> {
  rows: Row[];
  /** Rows returned by a SELECT or affected by INSERT / UPDATE / DELETE; 0 for other statements. */
  rowCount: number;
}

export type SqlRow = Record<string, unknown>;

/** Something statements can run on: the client itself, or an open transaction. */
export interface SqlQueryable {
  /**
   * Runs one statement with `$1`-style parameters and returns its rows. With no parameters, `text`
   * may hold several statements separated by `;` (a migration script); the result is the last one's.
   * The `Row` type is the caller's promise about the selected columns, not checked at run time.
   */
  query<Row extends object = SqlRow>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>>;
}

/** An open transaction; only valid inside the callback given to `SqlClient.transaction`. */
export interface SqlTransaction extends SqlQueryable {}

export type SqlClientKind = 'pglite' | 'postgres';

/**
 * Run-time configuration parameters for {@link SqlClient.queryWithSettings}, by name (lower-case
 * SQL names, dotted for an extension's: `hnsw.ef_search`). Values are finite numbers or single words
 * (`relaxed_order`, `on`): they go into `SET` text, which takes no parameters.
 */
export type SqlSettings = Readonly<Record<string, number | string>>;

/** A subscription made by {@link SqlClient.listen}. */
export interface SqlListener {
  /** Stops listening; no callback runs once it has resolved. Idempotent. */
  close(): Promise<void>;
}

export interface SqlClient extends SqlQueryable {
  /** Which adapter this is, for diagnostics only: behaviour is the same for both. */
  readonly kind: SqlClientKind;

  /**
   * Runs `fn` inside one transaction: commits when it resolves, rolls back and rethrows when it
   * throws (with the callback's own error). Statements of the transaction go through `tx`; the
   * client's own methods called from inside the callback fail with FAILED_PRECONDITION (on PGlite's
   * single connection they would otherwise wait forever).
   */
  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T>;

  /**
   * Runs one statement, as `query` does, with `settings` in effect for it (the values `SET` would
   * give), in one round trip whenever the connection it runs on has them already. That is why the
   * settings may outlive the statement: PostgreSQL's adapter leaves them as the session values of
   * the pooled connection that ran it, and sets again only those a later call needs otherwise. So a
   * statement whose meaning depends on one of these settings must name it here, never rely on a
   * connection's default, and nothing else should `SET` them on the client's connections. A name
   * or value outside {@link SqlSettings} is INVALID_ARGUMENT, before anything runs.
   */
  queryWithSettings<Row extends object = SqlRow>(
    settings: SqlSettings,
    text: string,
    params?: readonly SqlValue[],
  ): Promise<SqlResult<Row>>;

  /**
   * PostgreSQL's LISTEN: `onNotify(payload)` runs for every `NOTIFY channel` (or `pg_notify`) committed
   * after the promise resolves, from any client of the database. `channel` is a lower-case SQL name.
   * Delivery is at most once: while the listening connection is lost (PostgreSQL restarts) the
   * adapter reconnects with backoff and then calls `onNotify(undefined)`, since notifications of
   * the gap are gone: a listener should then re-read what it follows. `onError` hears of each loss.
   */
  listen(
    channel: string,
    onNotify: (payload: string | undefined) => void,
    onError?: (err: unknown) => void,
  ): Promise<SqlListener>;

  /** Waits for running statements, then releases connections (or the embedded database). Idempotent. */
  close(): Promise<void>;
}
