/**
 * One Search query made ready to answer: its vector or candidate id, its effective filters (the
 * request's and its own, every field checked against the model), the hashes that key the cache and
 * pin page tokens, and the decoded cursor of its page token.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Query } from '../../gen/vss/v1/vss.js';
import { invalidArgument } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import type { Filter } from '../../platform/vectordb/index.js';
import type { ServedVariant } from './config-repository.js';
import type { FilterFields } from './filter-fields.js';
import { digest, type PageCursor, type PageTokens } from './page-token.js';
import { candidateIdOf, filtersOf, storableId, vectorOf } from './request-validation.js';

export interface PreparedQuery {
  index: number;
  candidateId: string | undefined;
  /** The candidate id cannot exist in any store (it holds a NUL): the query is answered not found. */
  unstorableId: boolean;
  vector: Float32Array | undefined;
  filters: Filter[];
  queryHash: string;
  filtersHash: string;
  pageToken: string;
  cursor: PageCursor | undefined;
}

/**
 * The filters every query of a request shares, made ready once: converted and checked, and the
 * start of the hash that pins page tokens (a hash state each query copies and completes with its own
 * filters, so a 100,000-value filter is serialized and hashed once per request, not once per query).
 */
export interface SharedFilters {
  filters: Filter[];
  /** The hash of `[...shared, ...own]` as JSON, without its own part and closing bracket. */
  hashPrefix: Hash;
}

export function sharedFilters(filters: Filter[]): SharedFilters {
  const inner = filters.map(filterJson).join(',');
  return { filters, hashPrefix: createHash('sha256').update(`[${inner}`) };
}

function filterJson(filter: Filter): string {
  return JSON.stringify([filter.field, filter.op, filter.values]);
}

/** The same digest as `digest(JSON.stringify([...shared, ...own].map(f => [f.field, f.op, f.values])))`. */
function filtersHashOf(shared: SharedFilters, own: readonly Filter[]): string {
  const hash = shared.hashPrefix.copy();
  const rest = own.map(filterJson).join(',');
  if (rest !== '') hash.update(shared.filters.length > 0 ? `,${rest}` : rest);
  return hash.update(']').digest('hex');
}

export async function prepareQuery(
  deps: { fields: FilterFields; tokens: PageTokens },
  served: ServedVariant,
  query: Query,
  i: number,
  shared: SharedFilters,
  context: CallContext,
): Promise<PreparedQuery> {
  const at = `queries[${i}]`;
  let vector: Float32Array | undefined;
  let candidateId: string | undefined;
  let queryHash: string;
  if (query.candidateId !== undefined && query.candidateId !== '') {
    candidateId = candidateIdOf(query.candidateId, `${at}.candidate_id`);
    queryHash = digest(`id:${candidateId}`);
  } else if (query.embedding !== undefined) {
    vector = vectorOf(query.embedding.values, served.model.config.vectorDimension, `${at}.embedding.values`);
    queryHash = digest(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
  } else {
    throw invalidArgument(`${at} must set candidate_id or embedding`, at);
  }
  const own = filtersOf(query.filters, `${at}.filters`);
  if (own.length > 0) await deps.fields.check(served, own, `${at}.filters`, context);
  const filters = own.length > 0 ? [...shared.filters, ...own] : shared.filters;
  const filtersHash = filtersHashOf(shared, own);
  let cursor: PageCursor | undefined;
  if (query.pageToken !== '') {
    cursor = deps.tokens.decode(query.pageToken, `${at}.page_token`);
    if (cursor.query !== queryHash || cursor.filters !== filtersHash) {
      throw invalidArgument(
        `${at}.page_token: bad page_token (it belongs to another query or other filters)`,
        `${at}.page_token`,
      );
    }
  }
  return {
    index: i,
    candidateId,
    unstorableId: candidateId !== undefined && !storableId(candidateId),
    vector,
    filters,
    queryHash,
    filtersHash,
    pageToken: query.pageToken,
    cursor,
  };
}
