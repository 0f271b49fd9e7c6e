/**
 * Boundary checks of the vss.v1 requests: each failure is INVALID_ARGUMENT naming the request field
 * (`page_size`, `queries[2].embedding.values`, `filters[0].op`, …) so a caller can fix it.
 */
import { type Filter as WireFilter, FilterOp as WireFilterOp } from '../../gen/vss/v1/vss.js';
import { invalidArgument } from '../../platform/errors.js';
import { compileFilters, type Filter, type FilterOp } from '../../platform/vectordb/index.js';
import { attributeLabel, resourceName, variantName } from '../store/index.js';
import { quote, SEARCH_LIMITS } from './request-limits.js';

export const DEFAULT_PAGE_SIZE = 10;

const OPS: Record<number, FilterOp> = {
  [WireFilterOp.FILTER_OP_IN]: 'IN',
  [WireFilterOp.FILTER_OP_NOT_IN]: 'NOT_IN',
  [WireFilterOp.FILTER_OP_EXISTS]: 'EXISTS',
  [WireFilterOp.FILTER_OP_NOT_EXISTS]: 'NOT_EXISTS',
  [WireFilterOp.FILTER_OP_LT]: 'LT',
  [WireFilterOp.FILTER_OP_LTE]: 'LTE',
  [WireFilterOp.FILTER_OP_GT]: 'GT',
  [WireFilterOp.FILTER_OP_GTE]: 'GTE',
  [WireFilterOp.FILTER_OP_BETWEEN]: 'BETWEEN',
  [WireFilterOp.FILTER_OP_BETWEEN_INCLUSIVE]: 'BETWEEN_INCLUSIVE',
};

/**
 * `entity` / `model_name` / `variant`: required, and of the alphabet registration enforces (a name
 * outside it names nothing, so it never reaches SQL: a NUL there was a raw PostgreSQL error).
 */
export function requireName(value: string, field: 'entity' | 'model_name' | 'variant'): string {
  if (value === '') throw invalidArgument(`${field} is required`, field);
  if (field === 'variant') variantName(value, field);
  else resourceName(value, field);
  return value;
}

/**
 * A candidate id as the request gives it: empty or longer than any stored id can be is
 * INVALID_ARGUMENT naming `field`. An id that cannot be stored (it holds a NUL, which PostgreSQL text
 * refuses) is left to {@link storableId}: it is simply not found.
 */
export function candidateIdOf(id: string, field: string): string {
  if (id === '') throw invalidArgument(`${field} must not be empty`, field);
  if (id.length > SEARCH_LIMITS.candidateIdLength) {
    throw invalidArgument(
      `${field}: candidate id of ${id.length} characters exceeds the request limit max_candidate_id_length (${SEARCH_LIMITS.candidateIdLength}): ${quote(id)}`,
      field,
    );
  }
  return id;
}

/** Whether an id can exist in the stores at all (no NUL): others are not found without a look-up. */
export function storableId(id: string): boolean {
  return !id.includes('\u0000');
}

/** 0 means the default; 1 to `SEARCH_LIMITS.pageSize` otherwise. */
export function pageSizeOf(value: number): number {
  if (value === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(value) || value < 1 || value > SEARCH_LIMITS.pageSize) {
    throw invalidArgument(
      `page_size must be 1 to ${SEARCH_LIMITS.pageSize} (0 for ${DEFAULT_PAGE_SIZE}), got ${value}`,
      'page_size',
    );
  }
  return value;
}

/** A Search's `search_width`: 0 for the variant's own; 1 to `SEARCH_LIMITS.searchWidth` otherwise. */
export function searchWidthRequested(value: number): number {
  if (value === 0) return 0;
  if (!Number.isInteger(value) || value < 1 || value > SEARCH_LIMITS.searchWidth) {
    throw invalidArgument(
      `search_width must be 1 to ${SEARCH_LIMITS.searchWidth} (0 for the variant's ef_search), got ${value}`,
      'search_width',
    );
  }
  return value;
}

/** Attribute names are aggregator labels. */
export function attributesOf(attributes: readonly string[]): string[] {
  return attributes.map((name, i) => attributeLabel(name, `attributes[${i}]`));
}

/** Wire filters → port filters, shape-checked (operator, operand count, numbers). */
export function filtersOf(filters: readonly WireFilter[], path: string): Filter[] {
  const converted = filters.map((filter, i): Filter => {
    const op = OPS[filter.op];
    if (op === undefined) {
      throw invalidArgument(`${path}[${i}].op must be set to a FILTER_OP_* operator`, `${path}[${i}].op`);
    }
    return { field: filter.field, op, values: filter.values };
  });
  compileFilters(converted, path);
  return converted;
}

/** A query vector of the model's dimension with finite values. */
export function vectorOf(
  values: readonly number[] | undefined,
  dimension: number,
  field: string,
): Float32Array {
  if (!values || values.length !== dimension) {
    throw invalidArgument(
      `${field} must hold ${dimension} values (the model's vector dimension), got ${values?.length ?? 0}`,
      field,
    );
  }
  const vector = Float32Array.from(values);
  for (let i = 0; i < vector.length; i++) {
    if (!Number.isFinite(vector[i]!)) throw invalidArgument(`${field}[${i}] must be a finite number`, field);
  }
  return vector;
}

export function candidateIdsOf(ids: readonly string[]): string[] {
  if (ids.length === 0)
    throw invalidArgument('candidate_ids must name at least one candidate', 'candidate_ids');
  if (ids.length > SEARCH_LIMITS.candidateIds) {
    throw invalidArgument(
      `candidate_ids: ${ids.length} ids exceed the request limit max_candidate_ids (${SEARCH_LIMITS.candidateIds})`,
      'candidate_ids',
    );
  }
  ids.forEach((id, i) => {
    candidateIdOf(id, `candidate_ids[${i}]`);
  });
  return [...ids];
}
