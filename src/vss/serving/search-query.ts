/**
 * One Search query made ready to answer: its vector or candidate id, its effective filters (the
 * request's and its own, every field checked against the model), the hashes that key the cache and
 * pin page tokens, and the decoded cursor of its page token.
 */
import type { Query } from '../../gen/vss/v1/vss.js';
import { invalidArgument } from '../../platform/errors.js';
import type { Filter } from '../../platform/vectordb/index.js';
import type { ServedVariant, ServingConfigRepository, ServingModel } from './config-repository.js';
import { digest, type PageCursor, type PageTokens } from './page-token.js';
import { filtersOf, vectorOf } from './request-validation.js';

export interface PreparedQuery {
  index: number;
  candidateId: string | undefined;
  vector: Float32Array | undefined;
  filters: Filter[];
  queryHash: string;
  filtersHash: string;
  pageToken: string;
  cursor: PageCursor | undefined;
}

/** INVALID_ARGUMENT naming `${path}[i].field` for a filter on a field the model does not know. */
export async function checkFilterFields(
  config: ServingConfigRepository,
  model: ServingModel,
  filters: readonly Filter[],
  path: string,
): Promise<void> {
  for (const [i, filter] of filters.entries()) {
    if (!(await config.isFilterField(model, filter.field))) {
      throw invalidArgument(
        `${path}[${i}].field: unknown filter field "${filter.field}" (known: the entity's aggregator attributes and to_be_indexed_<variant>)`,
        `${path}[${i}].field`,
      );
    }
  }
}

export async function prepareQuery(
  deps: { config: ServingConfigRepository; tokens: PageTokens },
  served: ServedVariant,
  query: Query,
  i: number,
  shared: readonly Filter[],
): Promise<PreparedQuery> {
  const at = `queries[${i}]`;
  let vector: Float32Array | undefined;
  let candidateId: string | undefined;
  let queryHash: string;
  if (query.candidateId !== undefined && query.candidateId !== '') {
    candidateId = query.candidateId;
    queryHash = digest(`id:${candidateId}`);
  } else if (query.embedding !== undefined) {
    vector = vectorOf(query.embedding.values, served.model.config.vectorDimension, `${at}.embedding.values`);
    queryHash = digest(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
  } else {
    throw invalidArgument(`${at} must set candidate_id or embedding`, at);
  }
  const own = filtersOf(query.filters, `${at}.filters`);
  await checkFilterFields(deps.config, served.model, own, `${at}.filters`);
  const filters = [...shared, ...own];
  const filtersHash = digest(JSON.stringify(filters.map((f) => [f.field, f.op, f.values])));
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
    vector,
    filters,
    queryHash,
    filtersHash,
    pageToken: query.pageToken,
    cursor,
  };
}
