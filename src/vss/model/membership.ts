/**
 * Variant membership: whether a candidate belongs to a variant's index space. A variant's
 * `vss_filter` is the original system's criteria object (vss.md), so existing tooling keeps working:
 *
 *     {"criteria": [{"column_name": "is_live", "filter_value": "true", "default_value": "false"}]}
 *
 * A candidate is a member when its index flag (`variants_index_map`) is true and every criterion
 * holds on its attributes: the attribute `column_name` (event payload first, else the aggregator
 * row; `default_value` when both lack it) equals `filter_value`. A criterion may add `"op"` (a
 * vss.v1 `FilterOp` name) and `"values"`; without `op` it is equality. `{}` or an empty list admits
 * every flagged candidate.
 *
 * Ingestion and the real-time consumers decide membership here, and serving searches the resulting
 * `to_be_indexed_<variant>` payload flag, so a rule means one thing everywhere. The comparison is the
 * vector DB filters' own (platform/vectordb/filters.ts): `"1"` matches 1 and `"true"` matches true.
 */
import { invalidArgument } from '../../platform/errors.js';
import {
  type CompiledFilter,
  compileFilters,
  type Filter,
  isFilterOp,
  matchesFilter,
  type Payload,
  type PayloadValue,
} from '../../platform/vectordb/index.js';
import { attributeValue } from './attribute-value.js';

/** The payload flag holding a variant's membership on each point (and the embeddings-table column). */
export const membershipFlag = (variant: string): string => `to_be_indexed_${variant}`;

interface CompiledCriterion {
  readonly column: string;
  readonly defaultValue: string | undefined;
  readonly filter: CompiledFilter;
}

/** A variant's compiled `vss_filter`. */
export interface MembershipRule {
  readonly criteria: readonly CompiledCriterion[];
  /** The attributes the rule reads: an update touching none of them cannot change membership. */
  readonly reads: ReadonlySet<string>;
}

/** Attributes as the rule sees them: the event payload merged over the aggregator row. */
export type Attributes = Readonly<Record<string, PayloadValue | null | undefined>>;

function scalarText(value: unknown, field: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  throw invalidArgument(`${field} must be a string, number or boolean`, field);
}

/**
 * Validates and compiles a variant's `vss_filter`. Errors are INVALID_ARGUMENT naming the field
 * (`vss_filter.criteria[1].op`).
 */
export function compileMembership(vssFilter: unknown, path = 'vss_filter'): MembershipRule {
  if (vssFilter === null || typeof vssFilter !== 'object' || Array.isArray(vssFilter)) {
    throw invalidArgument(`${path} must be an object`, path);
  }
  const raw = (vssFilter as Record<string, unknown>).criteria;
  if (raw === undefined) return { criteria: [], reads: new Set() };
  if (!Array.isArray(raw)) throw invalidArgument(`${path}.criteria must be a list`, `${path}.criteria`);
  const parsed = raw.map((entry: unknown, i) => {
    const at = `${path}.criteria[${i}]`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw invalidArgument(`${at} must be an object`, at);
    }
    const c = entry as Record<string, unknown>;
    if (typeof c.column_name !== 'string' || c.column_name === '') {
      throw invalidArgument(`${at}.column_name must be a non-empty string`, `${at}.column_name`);
    }
    const defaultValue =
      c.default_value === undefined || c.default_value === null
        ? undefined
        : scalarText(c.default_value, `${at}.default_value`);
    let filter: Filter;
    if (c.op === undefined) {
      filter = { field: c.column_name, op: 'IN', values: [scalarText(c.filter_value, `${at}.filter_value`)] };
    } else {
      if (!isFilterOp(c.op)) throw invalidArgument(`${at}.op must be a FilterOp name`, `${at}.op`);
      const values = c.values ?? (c.filter_value === undefined ? [] : [c.filter_value]);
      if (!Array.isArray(values)) throw invalidArgument(`${at}.values must be a list`, `${at}.values`);
      filter = {
        field: c.column_name,
        op: c.op,
        values: values.map((v: unknown, j) => scalarText(v, `${at}.values[${j}]`)),
      };
    }
    return { column: c.column_name, defaultValue, filter };
  });
  // Compiled together so a bad value is named by its own index (`vss_filter.criteria[2].values`).
  const compiled = compileFilters(
    parsed.map((c) => c.filter),
    `${path}.criteria`,
  );
  const criteria = parsed.map(
    (c, i): CompiledCriterion => ({
      column: c.column,
      defaultValue: c.defaultValue,
      filter: compiled[i] as CompiledFilter,
    }),
  );
  return { criteria, reads: new Set(criteria.map((c) => c.column)) };
}

/**
 * Whether a candidate is a member: its index flag is true and every criterion holds on
 * `attributes` (absent or null attributes take the criterion's `default_value`).
 */
export function isMember(rule: MembershipRule, indexFlag: boolean, attributes: Attributes): boolean {
  if (!indexFlag) return false;
  for (const criterion of rule.criteria) {
    const value = attributes[criterion.column] ?? criterion.defaultValue;
    const payload: Payload = value === undefined ? {} : { [criterion.column]: value };
    if (!matchesFilter(payload, criterion.filter)) return false;
  }
  return true;
}

/**
 * A point's attributes: the event payload first, then the aggregator row's attributes for what the
 * payload lacks (vss.md), each value typed by the one rule (attribute-value.ts: numeric text is a
 * number). Null aggregator values (cleared attributes) are left out.
 */
export function mergeAttributes(
  eventPayload: Readonly<Payload> | undefined,
  aggregatorRow: Readonly<Record<string, string | null>> | undefined,
): Payload {
  const merged: Payload = {};
  if (aggregatorRow !== undefined) {
    for (const [label, value] of Object.entries(aggregatorRow)) {
      if (value !== null) merged[label] = attributeValue(value);
    }
  }
  if (eventPayload !== undefined) {
    for (const field in eventPayload) {
      if (Object.hasOwn(eventPayload, field)) merged[field] = attributeValue(eventPayload[field]!);
    }
  }
  return merged;
}
