/**
 * The embedded SQL adapter: PostgreSQL compiled to WASM (PGlite), in this process: on a worker
 * thread of its own by default (pglite-worker-database.ts), or on the caller's thread. With a data
 * directory the database lives on disk and survives restarts; without one it is in memory.
 * PGlite has a single connection and queues statements and transactions itself (a statement waits
 * for a running transaction), so this adapter adds only the shared value and error conventions.
 * One directory must be opened by one process at a time.
 *
 * Statement timeout: PGlite runs a statement synchronously on its thread and never fires
 * PostgreSQL's `statement_timeout` (it has no timer signals), so nothing can interrupt a running
 * statement. `statementTimeoutMs` is therefore a bound on the caller's wait instead: a statement that
 * has not answered by then fails with DEADLINE_EXCEEDED at once when it is still waiting for the
 * single connection (behind a transaction or other statements), and as soon as it returns when it ran
 * past the bound itself. Either way its outcome is unknown, as DEADLINE_EXCEEDED always means: a
 * statement failed while waiting still runs later, and an autocommitted change that ran too long
 * stands (inside a transaction the error rolls the transaction back, as on PostgreSQL).
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { type DirLock, lockDirectory } from '../../dir-lock.js';
import { LatticeError } from '../../errors.js';
import {
  assertOpen,
  closedError,
  listenChannel,
  settingAssignments,
  type TransactionMark,
  TransactionScope,
  toDriverParams,
} from '../adapter-support.js';
import type {
  SqlClient,
  SqlListener,
  SqlResult,
  SqlSettings,
  SqlTransaction,
  SqlValue,
} from '../sql-client.js';
import { toSqlError } from '../sql-errors.js';
import { inThisThread, openPglite, type PgliteDatabase, type PgliteStatements } from './pglite-database.js';
import { PgliteWorkerDatabase } from './pglite-worker-database.js';

export interface PgliteSqlClientOptions {
  /** Directory holding the database files (created when missing); in memory when omitted. */
  dataDir?: string;
  /** Bound on each statement's wait for its answer (see the module comment); none by default. */
  statementTimeoutMs?: number;
  /**
   * Run the database on a worker thread of its own (default true), so its statements use another
   * core than the caller's event loop; false runs them on the caller's thread.
   */
  worker?: boolean;
  /** PostgreSQL's `shared_buffers` in MB (see PgliteTuning); PostgreSQL's default when omitted. */
  sharedBuffersMb?: number;
  /** Make pgvector available (`CREATE EXTENSION vector`), for the pgvector vector DB adapter. */
  vector?: boolean;
}

async function run<Row>(
  db: PgliteStatements,
  text: string,
  params: readonly SqlValue[] | undefined,
  label: string,
): Promise<SqlResult<Row>> {
  try {
    return await db.run<Row>(text, params === undefined ? undefined : toDriverParams(params));
  } catch (err) {
    throw toSqlError(err, label);
  }
}

/** Bounds the caller's wait for statements (see the module comment); the work itself runs on. */
class StatementDeadline {
  constructor(
    private readonly timeoutMs: number | undefined,
    private readonly label: string,
    /** Told of the statement itself, which may outlive the caller's wait. */
    private readonly started: (statement: Promise<unknown>) => void,
  ) {}

  run<T>(statement: () => Promise<T>): Promise<T> {
    const timeoutMs = this.timeoutMs;
    if (timeoutMs === undefined) return statement();
    const startedAt = performance.now();
    const work = statement();
    this.started(work);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new LatticeError(
              'DEADLINE_EXCEEDED',
              `${this.label}: statement did not answer within the statement timeout of ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      );
    });
    const bounded = work.then((result) => {
      const ranMs = Math.round(performance.now() - startedAt);
      if (ranMs > timeoutMs) {
        throw new LatticeError(
          'DEADLINE_EXCEEDED',
          `${this.label}: statement ran ${ranMs} ms, past the statement timeout of ${timeoutMs} ms (PGlite cannot interrupt a running statement: it ran to completion)`,
        );
      }
      return result;
    });
    work.catch(() => {}); // a statement that fails after its caller stopped waiting is nobody's error
    return Promise.race([bounded, timedOut]).finally(() => clearTimeout(timer));
  }
}

class PgliteTransaction implements SqlTransaction {
  constructor(
    private readonly tx: PgliteStatements,
    private readonly mark: TransactionMark,
    private readonly label: string,
    private readonly deadline: StatementDeadline,
  ) {}

  async query<Row extends object>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>> {
    assertOpen(this.mark);
    return this.deadline.run(() => run<Row>(this.tx, text, params, this.label));
  }
}

export class PgliteSqlClient implements SqlClient {
  readonly kind = 'pglite' as const;
  readonly #db: PgliteDatabase;
  readonly #label: string;
  readonly #scope = new TransactionScope();
  readonly #running = new Set<Promise<unknown>>();
  readonly #deadline: StatementDeadline;
  #closing: Promise<void> | undefined;

  readonly #lock: DirLock | undefined;

  private constructor(
    db: PgliteDatabase,
    label: string,
    lock: DirLock | undefined,
    statementTimeoutMs?: number,
  ) {
    this.#db = db;
    this.#lock = lock;
    this.#label = label;
    this.#deadline = new StatementDeadline(statementTimeoutMs, label, (statement) =>
      this.#remember(statement),
    );
  }

  /** Opens (and on first use initialises, which takes seconds) the embedded database. */
  static async open(options: PgliteSqlClientOptions = {}): Promise<PgliteSqlClient> {
    const dataDir = options.dataDir === undefined ? undefined : resolve(options.dataDir);
    const label = dataDir === undefined ? 'PGlite (in memory)' : `PGlite at ${dataDir}`;
    const timeout = options.statementTimeoutMs;
    if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0)) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `statementTimeoutMs must be a positive integer, got ${timeout}`,
        {
          field: 'statementTimeoutMs',
        },
      );
    }
    const tuning = { sharedBuffersMb: options.sharedBuffersMb, vector: options.vector };
    // Two processes on one data directory would corrupt it: the first one owns it until it closes.
    if (dataDir !== undefined) await mkdir(dataDir, { recursive: true });
    const lock = dataDir === undefined ? undefined : lockDirectory(dataDir, 'PGlite data directory');
    try {
      const db =
        options.worker === false
          ? inThisThread(await openPglite(dataDir, tuning))
          : await PgliteWorkerDatabase.start(dataDir, label, tuning);
      return new PgliteSqlClient(db, label, lock, timeout);
    } catch (err) {
      lock?.release();
      throw toSqlError(err, label);
    }
  }

  query<Row extends object>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>> {
    return this.#track('query', () =>
      this.#deadline.run(() => run<Row>(this.#db, text, params, this.#label)),
    );
  }

  /**
   * SET LOCAL in a transaction of the statement's own, all of it one call of the database's (one
   * message to its worker): the single connection keeps no settings between statements.
   */
  queryWithSettings<Row extends object>(
    settings: SqlSettings,
    text: string,
    params?: readonly SqlValue[],
  ): Promise<SqlResult<Row>> {
    let assignments: [string, string][];
    try {
      assignments = settingAssignments(settings);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#track('queryWithSettings', () =>
      this.#deadline.run(async () => {
        try {
          return await this.#db.runWithSettings<Row>(
            assignments,
            text,
            params === undefined ? undefined : toDriverParams(params),
          );
        } catch (err) {
          throw toSqlError(err, this.#label);
        }
      }),
    );
  }

  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    return this.#track('transaction', async () => {
      // The callback's own error is rethrown as is after the rollback; only PGlite's are mapped.
      let callbackError: { error: unknown } | undefined;
      try {
        return await this.#db.transaction((tx) =>
          this.#scope.run(async (mark) => {
            try {
              return await fn(new PgliteTransaction(tx, mark, this.#label, this.#deadline));
            } catch (error) {
              callbackError = { error };
              throw error;
            }
          }),
        );
      } catch (err) {
        if (callbackError !== undefined && err === callbackError.error) throw err;
        throw toSqlError(err, this.#label);
      }
    });
  }

  /** PGlite delivers the notifications of its own single connection: every writer is this process. */
  async listen(channel: string, onNotify: (payload: string | undefined) => void): Promise<SqlListener> {
    const name = listenChannel(channel);
    if (this.#closing !== undefined) throw closedError();
    let open = true;
    let unlisten: () => Promise<void>;
    try {
      unlisten = await this.#db.listen(name, (payload) => {
        if (open) onNotify(payload);
      });
    } catch (err) {
      throw toSqlError(err, this.#label);
    }
    let closing: Promise<void> | undefined;
    return {
      close: () => {
        open = false;
        closing ??= this.#closing === undefined ? unlisten().catch(() => {}) : Promise.resolve();
        return closing;
      },
    };
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled(this.#running);
      try {
        await this.#db.close();
      } finally {
        this.#lock?.release();
      }
    })();
    return this.#closing;
  }

  #track<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) return Promise.reject(closedError());
    try {
      this.#scope.assertOutside(what);
    } catch (err) {
      return Promise.reject(err);
    }
    const running = work();
    this.#remember(running);
    return running;
  }

  /** `close` waits for `work`, including statements whose callers stopped waiting. */
  #remember(work: Promise<unknown>): void {
    this.#running.add(work);
    const forget = () => this.#running.delete(work);
    work.then(forget, forget);
  }
}
