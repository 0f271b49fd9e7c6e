/**
 * Compiled filters (filters.ts) as SQL conditions over a collection table's `payload jsonb`, with
 * exactly the port's semantics ({@link FilterOp}):
 *
 * - `IN`: JSONB containment, `payload @> ANY(docs)`, one document per accepted value: `{"f": "red"}`
 *   and `{"f": ["red"]}` for a string (a list field matches when it holds the element), `{"f": 4.5}`
 *   for a value that parses as a number (jsonb compares numbers by value, so "4.50" finds 4.5),
 *   `{"f": true}` for "true". Containment is what the payload's GIN index answers, so a selective
 *   IN (a variant's membership flag, an aggregator attribute) is a bitmap index scan.
 * - `NOT_IN`: the negation (points without the field match).
 * - `EXISTS`: the key is there and is not an empty list; `NOT_EXISTS` the negation (`?` is a GIN
 *   operator too).
 * - Ranges: numeric values only. The value is read through a CASE on `jsonb_typeof`, since SQL does
 *   not promise to evaluate `AND`'s operands in order and a cast of a string would fail. Bounds are
 *   float8, compared with the payload's number as float8: payload numbers come from JavaScript
 *   doubles and are stored in their shortest round-trip text, so the comparison is JavaScript's.
 *
 * filters.ts `matchesFilter` is the reference these conditions follow; the contract suite holds the
 * adapters to the same answers.
 */
import type { CompiledFilter } from '../filters.js';
import { type SqlParameters, sqlLiteral } from './sql-parameters.js';

function containmentDocuments(filter: Extract<CompiledFilter, { kind: 'match' }>): string[] {
  const docs: string[] = [];
  const doc = (value: unknown) => JSON.stringify({ [filter.field]: value });
  for (const s of filter.strings) docs.push(doc(s), doc([s]));
  for (const n of filter.numbers) docs.push(doc(n));
  for (const b of filter.booleans) docs.push(doc(b));
  return docs;
}

/** The SQL value of a numeric payload field, NULL when it is absent or not a number. */
export function numericField(field: string): string {
  const key = sqlLiteral(field);
  return `(CASE WHEN jsonb_typeof(payload -> ${key}) = 'number' THEN (payload -> ${key})::float8 END)`;
}

function condition(filter: CompiledFilter, params: SqlParameters): string {
  switch (filter.kind) {
    case 'match': {
      // text[] cast to jsonb[] in SQL: each driver sends a text array the same way.
      const docs = params.add(containmentDocuments(filter));
      const matches = `payload @> ANY(CAST(${docs}::text[] AS jsonb[]))`;
      return filter.negate ? `NOT (${matches})` : matches;
    }
    case 'exists': {
      const key = sqlLiteral(filter.field);
      const present = `(payload ? ${key} AND payload -> ${key} <> '[]'::jsonb)`;
      return filter.negate ? `NOT ${present}` : present;
    }
    case 'range': {
      const value = numericField(filter.field);
      const parts: string[] = [];
      if (filter.low !== Number.NEGATIVE_INFINITY) {
        parts.push(`${value} ${filter.lowInclusive ? '>=' : '>'} ${params.add(filter.low)}::float8`);
      }
      if (filter.high !== Number.POSITIVE_INFINITY) {
        parts.push(`${value} ${filter.highInclusive ? '<=' : '<'} ${params.add(filter.high)}::float8`);
      }
      // Both bounds infinite cannot be asked for (bounds are finite numbers), but keep the meaning.
      return parts.length === 0 ? `${value} IS NOT NULL` : `(${parts.join(' AND ')})`;
    }
  }
}

/** The conditions of `filters` (AND), or undefined when there are none. */
export function filterConditions(
  filters: readonly CompiledFilter[],
  params: SqlParameters,
): string | undefined {
  if (filters.length === 0) return undefined;
  return filters.map((filter) => condition(filter, params)).join(' AND ');
}
