/**
 * What one vss.v1 request may cost. Each limit bounds a cost of serving it, at a value whose largest
 * request takes well under a second of server CPU on a 2-core VM (docs/vss.md, "vss serving: request
 * limits", has the measurements). Past any of them the call is INVALID_ARGUMENT, its message naming
 * the limit and the `field` trailer the field; error messages quote at most
 * 64 characters (src/platform/quote.ts) of a name or id from the request.
 */
import { invalidArgument } from '../../platform/errors.js';
// validation.js rather than the port's index: the CLI reads these limits for its help text, and the
// index loads both adapters.
import { LIMITS as VECTOR_DB_LIMITS } from '../../platform/vectordb/validation.js';

export { quote } from '../../platform/quote.js';

export const SEARCH_LIMITS = {
  /** Queries per Search call. */
  queries: 256,
  /** Candidates per page. */
  pageSize: 1000,
  /**
   * Filter values a Search evaluates: the request's `filters` count once per query (each query is
   * filtered by them), plus each query's own. Every value is a look-up in the vector DB's payload
   * index per search of the query.
   */
  filterValues: 100_000,
  /**
   * Candidates ranked for a Search: the sum over queries of `offset + page_size`, the depth each
   * query's candidate window must reach (a page at depth d costs a vector DB search about 4 × d
   * wide, and its candidates are encoded in the answer).
   */
  depth: 12_800,
  /**
   * Widest vector DB search a candidate window asks for: the VectorDb port's own `limit` bound, not a
   * serving choice.
   */
  windowWidth: VECTOR_DB_LIMITS.maxLimit,
  /**
   * A Search's `search_width`: the widest HNSW candidate list (ef) a client may ask for, the port's
   * own bound (past it a graph search does an exact scan's work).
   */
  searchWidth: VECTOR_DB_LIMITS.maxEfSearch,
  /**
   * How deep one query's walk may go: a page must end at or before this candidate (`offset +
   * page_size`). Half the widest search, because a window step searches twice as wide as it keeps
   * (candidate-window.ts) and the last step keeps this many. A token whose next page would pass it
   * is INVALID_ARGUMENT, never an empty page.
   */
  walkDepth: VECTOR_DB_LIMITS.maxLimit / 2,
  /** Ids per GetEmbeddings / ScoreCandidates call (GetEmbeddings also stops where its answer would not fit a message). */
  candidateIds: 10_000,
  /** Characters of a candidate id: the vector DB's limit, so no longer id can exist. */
  candidateIdLength: VECTOR_DB_LIMITS.maxIdLength,
} as const;

export function tooManyFilterValues(total: number): Error {
  return invalidArgument(
    `filters: ${total} filter values (the request's filters count once per query) exceed the request limit max_filter_values (${SEARCH_LIMITS.filterValues})`,
    'filters',
  );
}

export function tooDeep(total: number): Error {
  return invalidArgument(
    `queries: ${total} candidates to rank (offset + page_size summed over queries) exceed the request limit max_search_depth (${SEARCH_LIMITS.depth}); send fewer queries, smaller pages, or split the request`,
    'queries',
  );
}

/** INVALID_ARGUMENT naming the token when the page it asks for would end past the walk depth. */
export function checkWalkDepth(index: number, offset: number, pageSize: number): void {
  if (offset + pageSize <= SEARCH_LIMITS.walkDepth) return;
  const field = `queries[${index}].page_token`;
  throw invalidArgument(
    `${field}: this walk has returned ${offset} candidates; a page may end at most ${SEARCH_LIMITS.walkDepth} deep (offset + page_size), this one would end at ${offset + pageSize}: narrow the query with filters instead of paging further`,
    field,
  );
}
