/**
 * The filter operators of vss.v1 `FilterOp`, for the search playground's filter rows. The browser
 * code imports nothing from the services (test/architecture/layers.ts), so the list is written here
 * again; test/console/filter-ops.test.ts holds it equal to the vector database port's FILTER_OPS.
 */
export const FILTER_OPS = [
  'IN',
  'NOT_IN',
  'EXISTS',
  'NOT_EXISTS',
  'LT',
  'LTE',
  'GT',
  'GTE',
  'BETWEEN',
  'BETWEEN_INCLUSIVE',
] as const;

export type FilterOp = (typeof FILTER_OPS)[number];
