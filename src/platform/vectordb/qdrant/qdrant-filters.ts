/**
 * The port's filters (compiled by ../filters.ts) as Qdrant payload filters, keeping the port's
 * semantics where Qdrant's differ:
 *
 * - Qdrant matches by JSON type (a keyword never equals a number), so `IN` becomes an OR of a keyword
 *   `match.any` for the strings, an integer `match.any` for whole numbers, a one-point `range` for
 *   other numbers (Qdrant's `match` takes integers only) and a `match.value` per boolean.
 * - `NOT_IN` puts those conditions under `must_not`: a point without the field matches none of them,
 *   so it passes, as the port wants (`match.except` would drop it).
 * - `EXISTS` / `NOT_EXISTS` are `is_empty` (missing, null or `[]`) negated or not.
 * - Ranges are Qdrant `range`, which only numeric values pass.
 *
 * Payload keys are Qdrant JSON paths: a name that is not plain letters, digits, `_` and `-` is quoted
 * so a dot in it stays part of the name. Qdrant's path syntax cannot quote `"` or `\`.
 */
import { invalidArgument } from '../../errors.js';
import type { CompiledFilter } from '../filters.js';
import { ID_FIELD } from './point-ids.js';

export type QdrantCondition = Record<string, unknown>;

export interface QdrantFilter {
  must?: QdrantCondition[];
  must_not?: QdrantCondition[];
}

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/** The Qdrant JSON path naming one top-level payload field, or undefined when Qdrant cannot name it. */
export function payloadKey(field: string): string | undefined {
  if (PLAIN_KEY.test(field)) return field;
  if (field.includes('"') || field.includes('\\')) return undefined;
  return `"${field}"`;
}

function keyOf(field: string, at: string): string {
  if (field === ID_FIELD) throw invalidArgument(`${at}.field "${field}" is reserved`, `${at}.field`);
  const key = payloadKey(field);
  if (key === undefined) {
    throw invalidArgument(
      `${at}.field ${JSON.stringify(field)}: Qdrant cannot filter on a field name containing '"' or '\\'`,
      `${at}.field`,
    );
  }
  return key;
}

/** The conditions any one of which makes an IN filter match. */
function matchConditions(key: string, filter: Extract<CompiledFilter, { kind: 'match' }>): QdrantCondition[] {
  const conditions: QdrantCondition[] = [];
  if (filter.strings.size > 0) conditions.push({ key, match: { any: [...filter.strings] } });
  const integers = [...filter.numbers].filter((n) => Number.isSafeInteger(n));
  if (integers.length > 0) conditions.push({ key, match: { any: integers } });
  for (const n of filter.numbers) {
    if (!Number.isSafeInteger(n)) conditions.push({ key, range: { gte: n, lte: n } });
  }
  for (const b of filter.booleans) conditions.push({ key, match: { value: b } });
  return conditions;
}

function rangeOf(filter: Extract<CompiledFilter, { kind: 'range' }>): Record<string, number> {
  const range: Record<string, number> = {};
  if (Number.isFinite(filter.low)) range[filter.lowInclusive ? 'gte' : 'gt'] = filter.low;
  if (Number.isFinite(filter.high)) range[filter.highInclusive ? 'lte' : 'lt'] = filter.high;
  return range;
}

/**
 * Adds compiled filters to a Qdrant filter. `path` is where the filters sat in the request
 * (`filters`, `queries[2].filters`), for errors.
 */
export function addFilters(target: Required<QdrantFilter>, filters: readonly CompiledFilter[], path: string) {
  filters.forEach((filter, i) => {
    const key = keyOf(filter.field, `${path}[${i}]`);
    switch (filter.kind) {
      case 'match': {
        const conditions = matchConditions(key, filter);
        if (filter.negate) target.must_not.push(...conditions);
        else target.must.push(conditions.length === 1 ? conditions[0]! : { should: conditions });
        break;
      }
      case 'exists':
        (filter.negate ? target.must : target.must_not).push({ is_empty: { key } });
        break;
      case 'range':
        target.must.push({ key, range: rangeOf(filter) });
        break;
    }
  });
}

/** Drops empty clauses; undefined when nothing filters. */
export function finishFilter(filter: Required<QdrantFilter>): QdrantFilter | undefined {
  const out: QdrantFilter = {};
  if (filter.must.length > 0) out.must = filter.must;
  if (filter.must_not.length > 0) out.must_not = filter.must_not;
  return out.must || out.must_not ? out : undefined;
}
