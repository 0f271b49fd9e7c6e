/**
 * Pieces both SQL adapters share so that they behave the same: parameter conversion, int8 parsing,
 * and the guard that keeps a transaction's statements on its own `tx`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { LatticeError } from '../errors.js';
import type { SqlSettings, SqlValue } from './sql-client.js';

/** Typed arrays other than bytes become plain arrays, which both drivers send as Postgres arrays. */
export function toDriverParams(params: readonly SqlValue[] | undefined): unknown[] {
  if (params === undefined) return [];
  return params.map(toDriverValue);
}

function toDriverValue(value: SqlValue): unknown {
  if (value instanceof Float32Array || value instanceof Float64Array || value instanceof Int32Array) {
    return Array.from(value);
  }
  if (Array.isArray(value)) return value.map(toDriverValue);
  return value;
}

/** int8 as a number while exact, a bigint beyond that (PGlite's own rule, applied to pg too). */
export function parseInt8(text: string): number | bigint {
  const n = BigInt(text);
  return n < BigInt(Number.MIN_SAFE_INTEGER) || n > BigInt(Number.MAX_SAFE_INTEGER) ? n : Number(n);
}

/** Whether a transaction is still running; its `tx` refuses statements once it has ended. */
export interface TransactionMark {
  readonly open: boolean;
}

/**
 * Knows, through async context, whether the current code runs inside one of this client's
 * transactions. A client-level statement there would wait forever on PGlite (one connection, held by
 * the transaction) and silently run outside the transaction on PostgreSQL, so both adapters refuse it.
 */
export class TransactionScope {
  readonly #storage = new AsyncLocalStorage<{ open: boolean }>();
  #running = 0;

  async run<T>(fn: (mark: TransactionMark) => Promise<T>): Promise<T> {
    const mark = { open: true };
    this.#running++;
    try {
      return await this.#storage.run(mark, () => fn(mark));
    } finally {
      mark.open = false;
      // While any AsyncLocalStorage is enabled, Node 20 runs async hooks on every promise in the
      // process (a few percent of a serving process's CPU in bench/vss-search); the next transaction
      // enables it again.
      if (--this.#running === 0) this.#storage.disable();
    }
  }

  assertOutside(what: string): void {
    if (this.#storage.getStore()?.open) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${what} called on the SQL client inside one of its transactions: use the transaction's tx instead`,
      );
    }
  }
}

export function assertOpen(mark: TransactionMark): void {
  if (!mark.open) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      'transaction already ended: tx is only valid inside its callback',
    );
  }
}

export function closedError(): LatticeError {
  return new LatticeError('UNAVAILABLE', 'SQL client is closed');
}

/** A LISTEN channel: a lower-case SQL name, so it can be placed in the statement unquoted. */
export function listenChannel(channel: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `channel must be a lower-case SQL name, got ${JSON.stringify(channel.slice(0, 64))}`,
      {
        field: 'channel',
      },
    );
  }
  return channel;
}

const SETTING_NAME = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;
const SETTING_WORD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The settings of `queryWithSettings` as `[name, value]` pairs in SQL text, checked: names are SQL
 * names, values finite numbers or single words, so nothing a caller passes can end the `SET`.
 */
export function settingAssignments(settings: SqlSettings): [string, string][] {
  return Object.entries(settings).map(([name, value]) => {
    if (!SETTING_NAME.test(name)) {
      throw new LatticeError('INVALID_ARGUMENT', `setting name "${name}" is not a lower-case SQL name`, {
        field: 'settings',
      });
    }
    const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value;
    if (typeof value === 'number' ? text === '' : !SETTING_WORD.test(text)) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `setting ${name} must be a finite number or a single word, got ${String(value)}`,
        { field: 'settings' },
      );
    }
    return [name, text];
  });
}

/** `SET` statements for `assignments`, as one script; `local` for SET LOCAL (inside a transaction). */
export function setStatements(assignments: readonly [string, string][], local: boolean): string {
  return assignments.map(([name, value]) => `SET ${local ? 'LOCAL ' : ''}${name} = ${value}`).join('; ');
}
