/**
 * The PGlite database behind the embedded SQL adapter (pglite-sql-client.ts), wherever it runs: in
 * this thread ({@link inThisThread}) or on a worker thread of its own (pglite-worker-database.ts).
 * Both answer with PGlite's own results and errors; the adapter maps errors and values the same way
 * for either.
 */
import { PGlite, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { setStatements } from '../adapter-support.js';
import { durableStartParams, FlushingNodeFS } from './flushing-node-fs.js';

export interface StatementResult<Row> {
  rows: Row[];
  rowCount: number;
}

/** Runs statements on the database or inside one of its transactions. */
export interface PgliteStatements {
  /**
   * One statement with `$n` parameters (the extended protocol), or without parameters a script of
   * several (the simple protocol, as pg runs them), answering with the last statement's result.
   * Parameters are driver values (adapter-support.ts, toDriverParams).
   */
  run<Row>(text: string, params: readonly unknown[] | undefined): Promise<StatementResult<Row>>;
}

export interface PgliteDatabase extends PgliteStatements {
  /**
   * One statement as `run` does, with `assignments` (checked name and value texts) SET LOCAL for it:
   * BEGIN, the SETs, the statement and COMMIT run together, as one call of the database's.
   */
  runWithSettings<Row>(
    assignments: readonly [string, string][],
    text: string,
    params: readonly unknown[] | undefined,
  ): Promise<StatementResult<Row>>;
  /** BEGIN, `fn`, then COMMIT when it resolves or ROLLBACK when it throws (rethrown as is). */
  transaction<T>(fn: (tx: PgliteStatements) => Promise<T>): Promise<T>;
  /** LISTEN on `channel`; resolves to the UNLISTEN. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const BYTEA = 17;

/**
 * Bytes go to the database as they are, in binary format: PGlite sends a parameter its serializer
 * returns as a typed array that way, while bytea's own serializer spells it in hex text one byte at a
 * time in JavaScript (and its protocol writer walks every text parameter twice more). Typed as a
 * string-returning serializer, which is all PGlite's types admit.
 */
const QUERY_OPTIONS: QueryOptions = {
  serializers: {
    [BYTEA]: ((value: unknown) => (value instanceof Uint8Array ? value : String(value))) as (
      value: unknown,
    ) => string,
  },
};

/** What both a PGlite instance and its transactions offer. */
type PgliteQueryable = Pick<Transaction, 'query' | 'exec'>;

export async function runStatement<Row>(
  db: PgliteQueryable,
  text: string,
  params: readonly unknown[] | undefined,
): Promise<StatementResult<Row>> {
  const result: Results<Row> | undefined =
    params === undefined || params.length === 0
      ? ((await db.exec(text)).at(-1) as Results<Row> | undefined)
      : await db.query<Row>(text, params as unknown[], QUERY_OPTIONS);
  if (result === undefined) return { rows: [], rowCount: 0 };
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}

/** How a database is opened, besides where. */
export interface PgliteTuning {
  /**
   * PostgreSQL's `shared_buffers`, in MB. PGlite's buffer pool lives in its WebAssembly memory,
   * which grows as pages are touched and never shrinks, so the pool's size is resident for the
   * process's lifetime once a large ingestion has filled it; the files below it sit in the OS page
   * cache anyway. Default PostgreSQL's own (128 MB) when undefined.
   */
  sharedBuffersMb?: number | undefined;
  /**
   * Make pgvector available (`CREATE EXTENSION vector` then works), for the pgvector vector DB
   * adapter. Off by default: the extension's files are unpacked into the database's file system at
   * every open, which a database without vectors need not pay for.
   */
  vector?: boolean | undefined;
}

/**
 * Opens (and on first use initialises, which takes seconds) a database: on disk, where commits and
 * checkpoints are flushed to disk (flushing-node-fs.ts; `onFlush` hears each file flushed), or in
 * memory.
 */
export function openPglite(
  dataDir: string | undefined,
  tuning: PgliteTuning = {},
  onFlush?: (path: string) => void,
): Promise<PGlite> {
  const buffers =
    tuning.sharedBuffersMb === undefined ? [] : ['-c', `shared_buffers=${tuning.sharedBuffersMb}MB`];
  const extensions = tuning.vector === true ? { extensions: { vector } } : {};
  if (dataDir === undefined)
    return PGlite.create({ startParams: [...PGlite.defaultStartParams, ...buffers], ...extensions });
  return PGlite.create({
    fs: new FlushingNodeFS(dataDir, onFlush),
    startParams: [...durableStartParams(), ...buffers],
    ...extensions,
  });
}

/** `runWithSettings` of {@link PgliteDatabase}, on the thread that holds the database. */
export function runWithSettings<Row>(
  db: PGlite,
  assignments: readonly [string, string][],
  text: string,
  params: readonly unknown[] | undefined,
): Promise<StatementResult<Row>> {
  // PGlite's transaction holds its connection from BEGIN to COMMIT: no other statement runs between.
  return db.transaction(async (tx) => {
    if (assignments.length > 0) await tx.exec(setStatements(assignments, true));
    return runStatement<Row>(tx, text, params);
  });
}

const statementsOf = (db: PgliteQueryable): PgliteStatements => ({
  run: (text, params) => runStatement(db, text, params),
});

/** The database in this thread: every statement runs on the caller's event loop. */
export function inThisThread(db: PGlite): PgliteDatabase {
  return {
    ...statementsOf(db),
    runWithSettings: (assignments, text, params) => runWithSettings(db, assignments, text, params),
    transaction: (fn) => db.transaction((tx) => fn(statementsOf(tx))),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  };
}
