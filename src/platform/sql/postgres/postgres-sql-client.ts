/**
 * The distributed SQL adapter: a pool of connections to a PostgreSQL server (`pg`). Connection
 * attempts are bounded (`connectTimeoutMs`), statements optionally (`statementTimeoutMs`), and every
 * failure becomes a LatticeError naming the server's address.
 */
import pg from 'pg';
import { LatticeError } from '../../errors.js';
import { Backoff } from '../../scheduling/index.js';
import { withTimeout } from '../../timeout.js';
import {
  assertOpen,
  closedError,
  listenChannel,
  parseInt8,
  setStatements,
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

export interface PostgresSqlClientOptions {
  /** `postgres://user[:password]@host[:port]/database[?options]` */
  url: string;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** Bound on opening a connection or waiting for a free one (default 5000 ms). */
  connectTimeoutMs?: number;
  /** Server-side `statement_timeout` for every statement; none by default. */
  statementTimeoutMs?: number;
  /** Schemas to resolve unqualified names in (`search_path`), e.g. a per-tenant or per-test schema. */
  searchPath?: string;
  /** Shown in `pg_stat_activity` (default `lattice`). */
  applicationName?: string;
}

const INT8 = 20;
const INT8_ARRAY = 1016;
const TEXT_ARRAY = 1009 as Parameters<typeof pg.types.getTypeParser>[0];
const parseTextArray: (text: string) => (string | null)[] = pg.types.getTypeParser(TEXT_ARRAY, 'text');

/** Same value conventions as PGlite (see sql-client.ts): int8 as a number while exact. */
const latticeTypes: pg.CustomTypesConfig = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => {
    if (format !== 'binary' && oid === INT8) return parseInt8;
    if (format !== 'binary' && oid === INT8_ARRAY) {
      return (text: string) =>
        parseTextArray(text).map((entry) => (entry === null ? null : parseInt8(entry)));
    }
    return pg.types.getTypeParser(oid, format);
  },
};

const identifierList = /^[A-Za-z_][A-Za-z0-9_$]*(\s*,\s*[A-Za-z_][A-Za-z0-9_$]*)*$/;

function serverLabel(url: string): string {
  try {
    const parsed = new URL(url);
    const socketHost = parsed.searchParams.get('host');
    const host = socketHost ?? (parsed.hostname === '' ? 'localhost' : parsed.hostname);
    return `PostgreSQL at ${host}:${parsed.port === '' ? '5432' : parsed.port}`;
  } catch {
    throw new LatticeError('INVALID_ARGUMENT', 'PostgreSQL url is not a valid URL', { field: 'url' });
  }
}

function positiveInteger(value: number | undefined, field: string): void {
  if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
    throw new LatticeError('INVALID_ARGUMENT', `${field} must be a positive integer, got ${value}`, {
      field,
    });
  }
}

function toResult<Row>(result: pg.QueryResult | pg.QueryResult[]): SqlResult<Row> {
  // A parameterless script of several statements yields one result per statement: keep the last.
  const last = Array.isArray(result) ? result.at(-1) : result;
  if (last === undefined) return { rows: [], rowCount: 0 };
  return { rows: last.rows as Row[], rowCount: last.rowCount ?? 0 };
}

async function run<Row>(
  target: pg.Pool | pg.PoolClient,
  text: string,
  params: readonly SqlValue[] | undefined,
  label: string,
): Promise<SqlResult<Row>> {
  try {
    // No values → pg's simple protocol, which accepts several statements (as PGlite's exec does).
    const result: pg.QueryResult | pg.QueryResult[] =
      params === undefined || params.length === 0
        ? await target.query(text)
        : await target.query(text, toDriverParams(params));
    return toResult<Row>(result);
  } catch (err) {
    throw toSqlError(err, label);
  }
}

class PostgresTransaction implements SqlTransaction {
  constructor(
    private readonly connection: pg.PoolClient,
    private readonly mark: TransactionMark,
    private readonly label: string,
  ) {}

  async query<Row extends object>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>> {
    assertOpen(this.mark);
    return run<Row>(this.connection, text, params, this.label);
  }
}

export class PostgresSqlClient implements SqlClient {
  readonly kind = 'postgres' as const;
  readonly #pool: pg.Pool;
  readonly #label: string;
  readonly #scope = new TransactionScope();
  readonly #listeners = new Set<SqlListener>();
  /**
   * What `queryWithSettings` has SET on each pooled connection (session values), so a later call
   * sends SET only for what differs. A connection the pool replaces starts with nothing known.
   */
  readonly #sessionSettings = new WeakMap<pg.PoolClient, Map<string, string>>();
  #closing: Promise<void> | undefined;

  private constructor(pool: pg.Pool, label: string) {
    this.#pool = pool;
    this.#label = label;
  }

  /**
   * A connection of its own per listener (outside the pool, so LISTEN takes none of its capacity),
   * with the pool's settings. When it breaks, the listener reconnects (1 s, doubling to 30 s) and
   * then tells its callback with `undefined`.
   */
  async listen(
    channel: string,
    onNotify: (payload: string | undefined) => void,
    onError?: (err: unknown) => void,
  ): Promise<SqlListener> {
    const name = listenChannel(channel);
    if (this.#closing !== undefined) throw closedError();
    let open = true;
    let connection: pg.Client | undefined;
    let retry: NodeJS.Timeout | undefined;
    const backoff = new Backoff({ initialMs: 1000, maxMs: 30_000 });
    const attach = async (): Promise<void> => {
      const client = new pg.Client(this.#pool.options);
      const lost = (err: unknown) => {
        client.off('notification', deliver);
        client.off('error', lost);
        client.on('error', () => {});
        void client.end().catch(() => {});
        if (connection === client) connection = undefined;
        if (!open) return;
        onError?.(toSqlError(err, this.#label));
        schedule();
      };
      const deliver = (message: pg.Notification) => {
        if (open && message.channel === name) onNotify(message.payload);
      };
      client.on('notification', deliver);
      client.on('error', lost);
      client.on('end', () => {
        if (connection === client) lost(new Error('LISTEN connection ended'));
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${name}`);
      } catch (err) {
        lost(err);
        throw err;
      }
      connection = client;
    };
    const schedule = () => {
      retry = setTimeout(() => {
        retry = undefined;
        if (!open) return;
        attach().then(
          () => {
            backoff.reset();
            if (open) onNotify(undefined);
          },
          // attach() reported the failure (lost() scheduled the next attempt).
          () => {},
        );
      }, backoff.next());
      retry.unref();
    };
    try {
      await attach();
    } catch (err) {
      open = false;
      if (retry) clearTimeout(retry);
      throw toSqlError(err, this.#label);
    }
    const listener: SqlListener = {
      close: async () => {
        if (!open) return;
        open = false;
        this.#listeners.delete(listener);
        if (retry) clearTimeout(retry);
        const client = connection;
        connection = undefined;
        if (!client) return;
        client.on('error', () => {});
        await client.end().catch(() => {});
      },
    };
    this.#listeners.add(listener);
    return listener;
  }

  /**
   * Creates the pool and proves the server answers (`SELECT 1`), so a wrong address fails at
   * start-up with UNAVAILABLE rather than on the first request.
   */
  static async connect(options: PostgresSqlClientOptions): Promise<PostgresSqlClient> {
    const label = serverLabel(options.url);
    positiveInteger(options.poolSize, 'poolSize');
    positiveInteger(options.connectTimeoutMs, 'connectTimeoutMs');
    positiveInteger(options.statementTimeoutMs, 'statementTimeoutMs');
    if (options.searchPath !== undefined && !identifierList.test(options.searchPath)) {
      throw new LatticeError('INVALID_ARGUMENT', `searchPath must be a list of schema names`, {
        field: 'searchPath',
      });
    }
    const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: connectTimeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: options.applicationName ?? 'lattice',
      types: latticeTypes,
      ...(options.statementTimeoutMs === undefined
        ? {}
        : {
            statement_timeout: options.statementTimeoutMs,
            // A client-side bound too, for a server that stops answering altogether.
            query_timeout: options.statementTimeoutMs + connectTimeoutMs,
          }),
      ...(options.searchPath === undefined
        ? {}
        : { options: `-c search_path=${options.searchPath.replace(/\s+/g, '')}` }),
    });
    // An idle connection that breaks (server restart) is dropped from the pool and reported here;
    // without a listener the process would crash. The next statement opens a fresh connection.
    pool.on('error', () => {});
    const client = new PostgresSqlClient(pool, label);
    const probe = client.query('SELECT 1');
    probe.catch(() => {}); // observed below; may settle after the deadline
    try {
      await withTimeout(`connecting to ${label}`, connectTimeoutMs + 1000, probe, 'UNAVAILABLE');
    } catch (err) {
      void pool.end().catch(() => {}); // not awaited: it waits for the attempt still in flight
      throw toSqlError(err, label);
    }
    return client;
  }

  query<Row extends object>(text: string, params?: readonly SqlValue[]): Promise<SqlResult<Row>> {
    if (this.#closing !== undefined) return Promise.reject(closedError());
    try {
      this.#scope.assertOutside('query');
    } catch (err) {
      return Promise.reject(err);
    }
    return run<Row>(this.#pool, text, params, this.#label);
  }

  /**
   * The statement on one pooled connection, after a SET of the settings that connection does not
   * have yet (a round trip of its own, only when some differ). The connection is held from the SET
   * to the statement, so concurrent calls with other values each run under their own.
   */
  async queryWithSettings<Row extends object>(
    settings: SqlSettings,
    text: string,
    params?: readonly SqlValue[],
  ): Promise<SqlResult<Row>> {
    if (this.#closing !== undefined) throw closedError();
    this.#scope.assertOutside('queryWithSettings');
    const assignments = settingAssignments(settings);
    let connection: pg.PoolClient;
    try {
      connection = await this.#pool.connect();
    } catch (err) {
      throw toSqlError(err, this.#label);
    }
    let failed: Error | undefined;
    // A checked-out connection that breaks emits 'error'; unheard, it would end the process.
    const lost = (err: Error) => {
      failed = err;
    };
    connection.on('error', lost);
    try {
      const known = this.#sessionSettings.get(connection) ?? new Map<string, string>();
      const changes = assignments.filter(([name, value]) => known.get(name) !== value);
      if (changes.length > 0) {
        // Unknown until the SET has answered (a failed script may have set some of them).
        this.#sessionSettings.delete(connection);
        await run(connection, setStatements(changes, false), undefined, this.#label);
        for (const [name, value] of changes) known.set(name, value);
        this.#sessionSettings.set(connection, known);
      }
      return await run<Row>(connection, text, params, this.#label);
    } catch (err) {
      // As pool.query does: a connection whose statement failed is not reused.
      failed = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      connection.off('error', lost);
      connection.release(failed);
    }
  }

  async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) throw closedError();
    this.#scope.assertOutside('transaction');
    let connection: pg.PoolClient;
    try {
      connection = await this.#pool.connect();
    } catch (err) {
      throw toSqlError(err, this.#label);
    }
    // A failed BEGIN / COMMIT / ROLLBACK leaves the connection in an unknown state: destroy it.
    let broken: Error | undefined;
    const control = async (statement: string) => {
      try {
        await run(connection, statement, undefined, this.#label);
      } catch (err) {
        broken = err instanceof Error ? err : new Error(String(err));
        throw err;
      }
    };
    try {
      await control('BEGIN');
      let result: T;
      try {
        result = await this.#scope.run((mark) => fn(new PostgresTransaction(connection, mark, this.#label)));
      } catch (error) {
        await control('ROLLBACK').catch(() => {});
        throw error;
      }
      await control('COMMIT');
      return result;
    } finally {
      connection.release(broken);
    }
  }

  close(): Promise<void> {
    // pool.end() waits for checked-out connections to be released, so running work finishes first;
    // listeners hold theirs until closed.
    this.#closing ??= Promise.allSettled([...this.#listeners].map((l) => l.close())).then(() =>
      this.#pool.end().catch(() => {}),
    );
    return this.#closing;
  }
}
