/**
 * SQL identifiers that come from configuration: the per-entity table names a store registers, the
 * `to_be_indexed_<variant>` flag columns and the aggregator's attribute columns. Nothing else is
 * ever placed in SQL text: each name is checked against a strict pattern first (one branded type
 * proves it was), then double-quoted. Values always travel as parameters.
 */
import { LatticeError } from '../../platform/errors.js';
import { quote } from '../../platform/quote.js';

/** A lower-case name checked by this module; the only kind of name `quoteIdentifier` accepts. */
export type SqlIdentifier = string & { readonly __sqlIdentifier: unique symbol };

/** PostgreSQL truncates names over 63 bytes: longer ones would silently collide. */
const identifier = /^[a-z][a-z0-9_]{0,62}$/;

/** The flag column prefix; a variant name may use what is left of the 63 bytes. */
export const VARIANT_COLUMN_PREFIX = 'to_be_indexed_';
const variantPattern = /^[a-z][a-z0-9_]{0,48}$/;

/**
 * Entities and model names are values, never identifiers, but they name collections, cache keys and
 * URL segments: letters, digits, `_`, `-`, `.`; no slash, no space.
 */
const namePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Prefixes of the service's own tables and indexes, and of the system catalogs. */
const reservedTablePrefixes = ['vss_', 'pg_'];

function invalid(field: string, message: string): LatticeError {
  return new LatticeError('INVALID_ARGUMENT', `${field} ${message}`, { field });
}

/** Shows a refused value safely in a message (at most 64 characters of it, control characters escaped). */
function show(value: unknown): string {
  return quote(typeof value === 'string' ? value : String(value));
}

function checkIdentifier(value: unknown, field: string, pattern: RegExp, rule: string): SqlIdentifier {
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw invalid(field, `must be ${rule}, got ${show(value)}`);
  }
  return value as SqlIdentifier;
}

/** A configured table name (`embeddings_table`, `aggregator_table`). */
export function tableName(value: unknown, field: string): SqlIdentifier {
  const name = checkIdentifier(
    value,
    field,
    identifier,
    'a lower-case SQL name (a letter, then letters, digits or _, at most 63)',
  );
  const reserved = reservedTablePrefixes.find((prefix) => name.startsWith(prefix));
  if (reserved !== undefined)
    throw invalid(field, `must not start with "${reserved}" (reserved), got ${show(name)}`);
  return name;
}

/** A variant name; it becomes part of a column name, so it is an identifier too. */
export function variantName(value: unknown, field = 'variant'): SqlIdentifier {
  return checkIdentifier(
    value,
    field,
    variantPattern,
    'a lower-case name (a letter, then letters, digits or _, at most 49)',
  );
}

/** The embeddings-table column holding a variant's membership flag. */
export function variantColumn(variant: unknown, field = 'variant'): SqlIdentifier {
  return `${VARIANT_COLUMN_PREFIX}${variantName(variant, field)}` as SqlIdentifier;
}

/** An aggregator attribute label (one text column each); `id` is the key column. */
export function attributeLabel(value: unknown, field = 'label'): SqlIdentifier {
  const label = checkIdentifier(
    value,
    field,
    identifier,
    'a lower-case name (a letter, then letters, digits or _, at most 63)',
  );
  if (label === 'id') throw invalid(field, 'must not be "id", the aggregator key column');
  return label;
}

/** `entity`, `model_name`: values with a bounded, path-safe alphabet. */
export function resourceName(value: unknown, field: string): string {
  if (typeof value !== 'string' || !namePattern.test(value)) {
    throw invalid(
      field,
      `must be 1-128 letters, digits, "_", "-" or "." (starting with a letter or digit), got ${show(value)}`,
    );
  }
  return value;
}

/** The only way an identifier enters SQL text. */
export function quoteIdentifier(name: SqlIdentifier): string {
  // Unreachable for checked names; a guard against a cast that skipped the checks.
  if (!identifier.test(name)) throw invalid('identifier', `is not a checked SQL name: ${show(name)}`);
  return `"${name}"`;
}
