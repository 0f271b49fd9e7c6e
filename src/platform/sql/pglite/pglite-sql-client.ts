/**
 * The embedded SQL adapter: PostgreSQL compiled to WASM (PGlite), in this process. With a data
 * directory the database lives on disk and survives restarts; without one it is in memory.
 * PGlite has a single connection and queues statements and transactions itself (a statement waits
 * for a running transaction), so this adapter adds only the shared value and error conventions.
 * One directory must be opened by one process at a time.
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { PGlite, type Results, type Transaction } from '@electric-sql/pglite';
import { type DirLock, lockDirectory } from '../../dir-lock.js';
import {
  assertOpen,
  closedError,
  type TransactionMark,
  TransactionScope,
  toDriverParams,
} from '../adapter-support.js';
import type { SqlClient, SqlResult, SqlTransaction, SqlValue } from '../sql-client.js';
import { toSqlError } from '../sql-errors.js';

export interface PgliteSqlClientOptions {
  /** Directory holding the database files (created when missing); in memory when omitted. */
  dataDir?: string;
}

/** What both a PGlite instance and its transactions offer. */
type PgliteQueryable = Pick<Transaction, 'query' | 'exec'>;

async function run<Row>(
  db: PgliteQueryable,
  text: string,
  params: readonly SqlValue[] | undefined,
  label: string,
): Promise<SqlResult<Row>> {
  try {
    // Without parameters, the simple protocol (exec) runs scripts of several statements, as pg does.
    const result: Results<Row> | undefined =
      params === undefined || params.length === 0
        ? ((await db.exec(text)).at(-1) as Results<Row> | undefined)
        : await db.query<Row>(text, toDriverParams(params));
    if (result === undefined) return { rows: [], rowCount: 0 };
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  } catch (err) {
    throw toSqlError(err, label);
  }
}

class PgliteTransaction implements SqlTransaction {
  constructor(
    private readonly tx: Transaction,
    private readonly mark: TransactionMark,
    private readonly label: string,
  ) {}

  async query<Row extends object>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>> {
    assertOpen(this.mark);
    return run<Row>(this.tx, text, params, this.label);
  }
}

export class PgliteSqlClient implements SqlClient {
  readonly kind = 'pglite' as const;
  readonly #db: PGlite;
  readonly #label: string;
  readonly #scope = new TransactionScope();
  readonly #running = new Set<Promise<unknown>>();
  #closing: Promise<void> | undefined;

  readonly #lock: DirLock | undefined;

  private constructor(db: PGlite, label: string, lock: DirLock | undefined) {
    this.#db = db;
    this.#lock = lock;
    this.#label = label;
  }

  /** Opens (and on first use initialises, which takes seconds) the embedded database. */
  static async open(options: PgliteSqlClientOptions = {}): Promise<PgliteSqlClient> {
    const dataDir = options.dataDir === undefined ? undefined : resolve(options.dataDir);
    const label = dataDir === undefined ? 'PGlite (in memory)' : `PGlite at ${dataDir}`;
    // Two processes on one data directory would corrupt it: the first one owns it until it closes.
    if (dataDir !== undefined) await mkdir(dataDir, { recursive: true });
    const lock = dataDir === undefined ? undefined : lockDirectory(dataDir, 'PGlite data directory');
    try {
      const db = dataDir === undefined ? await PGlite.create() : await PGlite.create(dataDir);
      return new PgliteSqlClient(db, label, lock);
    } catch (err) {
      lock?.release();
      throw toSqlError(err, label);
    }
  }

  query<Row extends object>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>> {
    return this.#track('query', () => run<Row>(this.#db, text, params, this.#label));
  }

  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    return this.#track('transaction', async () => {
      // The callback's own error is rethrown as is after the rollback; only PGlite's are mapped.
      let callbackError: { error: unknown } | undefined;
      try {
        return await this.#db.transaction((tx) =>
          this.#scope.run(async (mark) => {
            try {
              return await fn(new PgliteTransaction(tx, mark, this.#label));
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
    this.#running.add(running);
    const forget = () => this.#running.delete(running);
    running.then(forget, forget);
    return running;
  }
}
