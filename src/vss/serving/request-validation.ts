/**
 * Boundary checks of the vss.v1 requests: each failure is INVALID_ARGUMENT naming the request field
 * (`page_size`, `queries[2].embedding.values`, `filters[0].op`, …) so a caller can fix it.
 */
import { type Filter as WireFilter, FilterOp as WireFilterOp } from '../../gen/vss/v1/vss.js';
import { invalidArgument } from '../../platform/errors.js';
import { compileFilters, type Filter, type FilterOp } from '../../platform/vectordb/index.js';
import { attributeLabel } from '../store/index.js';

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 1000;
/** Queries per Search call. */
export const MAX_QUERIES = 256;
/** Ids per GetEmbeddings / ScoreCandidates call. */
export const MAX_CANDIDATE_IDS = 10_000;

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

export function requireName(value: string, field: string): string {
  if (value === '') throw invalidArgument(`${field} is required`, field);
  return value;
}

/** 0 means the default; 1..1000 otherwise. */
export function pageSizeOf(value: number): number {
  if (value === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE_SIZE) {
    throw invalidArgument(
      `page_size must be 1 to ${MAX_PAGE_SIZE} (0 for ${DEFAULT_PAGE_SIZE}), got ${value}`,
      'page_size',
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
  if (ids.length > MAX_CANDIDATE_IDS) {
    throw invalidArgument(
      `candidate_ids holds ${ids.length} ids, at most ${MAX_CANDIDATE_IDS}`,
      'candidate_ids',
    );
  }
  ids.forEach((id, i) => {
    if (id === '') throw invalidArgument(`candidate_ids[${i}] must not be empty`, `candidate_ids[${i}]`);
  });
  return [...ids];
}
