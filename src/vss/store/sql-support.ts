/**
 * Small helpers every repository uses: running work atomically on either a client or an open
 * transaction, compare-and-set updates, JSON parameters and integer checks.
 */
import { LatticeError } from '../../platform/errors.js';
import type { SqlClient, SqlQueryable, SqlValue } from '../../platform/sql/index.js';

function isClient(db: SqlQueryable): db is SqlClient {
  return typeof (db as Partial<SqlClient>).transaction === 'function';
}

/**
 * Runs `fn` in a transaction: a new one on a client, or the caller's own when `db` already is one
 * (repositories bound to a transaction compose into it; see VssStore.transaction).
 */
export function atomically<T>(db: SqlQueryable, fn: (tx: SqlQueryable) => Promise<T>): Promise<T> {
  return isClient(db) ? db.transaction(fn) : fn(db);
}

/** A JSON parameter (cast it in SQL: `$1::jsonb`). */
export function json(value: unknown): string {
  return JSON.stringify(value);
}

/** SQL text standing for a value (`now()`); only ever a constant written in this folder's code. */
export interface SqlExpression {
  readonly sql: string;
}

export const NOW: SqlExpression = { sql: 'now()' };

export interface CompareAndSet {
  /** A table of this schema (a code constant, never input). */
  table: string;
  /** The row's primary key, column → value. */
  key: Readonly<Record<string, SqlValue>>;
  /** What the row must still hold for the update to apply (null: IS NULL). */
  expect: Readonly<Record<string, SqlValue>>;
  set: Readonly<Record<string, SqlValue | SqlExpression>>;
}

/**
 * `UPDATE … WHERE key AND expected` in one statement that also tells a missing row from a row whose
 * values moved on. Concurrent callers expecting the same values: exactly one applies (the others
 * wait for its row lock, then find the row changed).
 */
export async function compareAndSet(
  db: SqlQueryable,
  update: CompareAndSet,
): Promise<{ applied: boolean; present: boolean }> {
  const params: SqlValue[] = [];
  const bind = (value: SqlValue) => {
    params.push(value);
    return `$${params.length}`;
  };
  const keyWhere = Object.entries(update.key).map(([column, value]) => `${column} = ${bind(value)}`);
  const expectWhere = Object.entries(update.expect).map(([column, value]) =>
    value === null ? `${column} IS NULL` : `${column} = ${bind(value)}`,
  );
  const assignments = Object.entries({ ...update.set, updated_at: NOW }).map(
    ([column, value]) => `${column} = ${isExpression(value) ? value.sql : bind(value)}`,
  );
  const { rows } = await db.query<{ applied: boolean; present: boolean }>(
    `WITH applied AS (
       UPDATE ${update.table} SET ${assignments.join(', ')}
        WHERE ${[...keyWhere, ...expectWhere].join(' AND ')}
        RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM applied) AS applied,
            EXISTS (SELECT 1 FROM ${update.table} WHERE ${keyWhere.join(' AND ')}) AS present`,
    params,
  );
  const row = rows[0];
  return { applied: row?.applied === true, present: row?.present === true };
}

function isExpression(value: SqlValue | SqlExpression): value is SqlExpression {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'sql' in value;
}

/** An integer within bounds, or INVALID_ARGUMENT naming the field. */
export function integerField(value: number, field: string, min: number, max = 2 ** 31 - 1): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `${field} must be an integer from ${min} to ${max}, got ${value}`,
      {
        field,
      },
    );
  }
  return value;
}
