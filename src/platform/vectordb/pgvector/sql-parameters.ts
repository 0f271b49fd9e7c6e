/**
 * The `$n` parameters of one statement, gathered while its text is assembled, so the pieces of a
 * statement (filters, exclusions, the query vector) can be written in any order.
 */
import type { SqlValue } from '../../sql/index.js';

export class SqlParameters {
  readonly values: SqlValue[] = [];

  /** Adds a value and answers its placeholder. */
  add(value: SqlValue): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * A string literal for SQL text (standard_conforming_strings, on since PostgreSQL 9.1): payload field
 * names go into statements as literals rather than parameters, so that an expression index on a
 * field (`payload -> 'size'`) can match the statement's expression.
 */
export function sqlLiteral(text: string): string {
  if (text.includes('\0')) throw new TypeError('a SQL literal cannot hold a NUL character');
  return `'${text.replaceAll("'", "''")}'`;
}
