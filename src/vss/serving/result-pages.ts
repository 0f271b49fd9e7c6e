/**
 * Paging: which version a query's page reads (the token's, while it is still served), the ranking
 * the page is cut from (the vector DB's, indexed points of the variant only, under the filters), the
 * page after the token's cursor, and the token of the next page.
 */
import { isLatticeError, LatticeError } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import { variantColumn } from '../store/index.js';
import type { Filter, SearchHit, VectorDb } from '../vectordb/index.js';
import type { ServedVariant, ServingConfigRepository } from './config-repository.js';
import type { PageTokens } from './page-token.js';
import { ranksAfter } from './scoring.js';
import type { PreparedQuery } from './search-query.js';
import type { ServingLabels, ServingMetrics } from './serving-metrics.js';
import type { VectorDbGuard } from './vector-db-guard.js';

/** The port's largest `limit`: deeper pages pass their offset to the vector DB. */
const MAX_SEARCH_LIMIT = 10_000;

export interface ResultPagesDeps {
  config: ServingConfigRepository;
  vectorDb: VectorDb;
  guard: VectorDbGuard;
  tokens: PageTokens;
  metrics: ServingMetrics;
}

export interface PageRequest {
  served: ServedVariant;
  query: PreparedQuery;
  /** From {@link ResultPages.versionFor}. */
  version: number;
  collection: string;
  vector: Float32Array;
  pageSize: number;
  attributes: readonly string[];
  labels: ServingLabels;
  context: CallContext;
}

export interface ResultPage {
  /** Best first. */
  hits: SearchHit[];
  nextPageToken: string;
  /** The filters the vector DB applied: the variant's membership and the query's. */
  filters: Filter[];
}

export class ResultPages {
  constructor(private readonly deps: ResultPagesDeps) {}

  /** The token's version while it still exists; FAILED_PRECONDITION once it has been dropped. */
  async versionFor(served: ServedVariant, query: PreparedQuery): Promise<number> {
    const pinned = query.cursor?.readVersion;
    if (pinned === undefined || pinned === served.readVersion) return served.readVersion;
    const status = await this.deps.config.versionStatus(served.model, pinned);
    if (status === undefined || status === 'DROPPED' || status === 'FAILED') {
      throw staleToken(query.index, pinned);
    }
    return pinned;
  }

  async page(request: PageRequest): Promise<ResultPage> {
    const { served, query, version, collection, vector, pageSize, attributes } = request;
    const filters: Filter[] = [
      { field: variantColumn(served.variant.variant), op: 'IN', values: ['true'] },
      ...query.filters,
    ];
    const offset = query.cursor?.offset ?? 0;
    // Fetch the ranking from the top and cut after the cursor, unless the page is beyond the port's
    // limit; the cursor then still guarantees no overlap.
    const fromTop = offset + pageSize + 1 <= MAX_SEARCH_LIMIT;
    const started = performance.now();
    const hits = await this.vectorSearch(
      {
        collection,
        queries: [{ vector, excludeIds: query.candidateId === undefined ? [] : [query.candidateId] }],
        filters,
        limit: fromTop ? offset + pageSize + 1 : pageSize + 1,
        offset: fromTop ? 0 : offset,
        indexedOnly: true,
        withPayload: attributes.length > 0 ? attributes : false,
      },
      query,
      request.context,
    );
    this.deps.metrics.vectorDbMs(request.labels, performance.now() - started);
    const distance = served.model.config.distanceFunction;
    const cursor = query.cursor;
    const after = cursor
      ? hits.filter((h) => ranksAfter(distance, h.score, h.id, cursor.lastScore, cursor.lastId))
      : hits;
    const page = after.slice(0, pageSize);
    const last = page[page.length - 1];
    const nextPageToken =
      after.length > pageSize && last
        ? this.deps.tokens.encode({
            query: query.queryHash,
            filters: query.filtersHash,
            readVersion: version,
            offset: offset + page.length,
            lastScore: last.score,
            lastId: last.id,
          })
        : '';
    return { hits: page, nextPageToken, filters };
  }

  private async vectorSearch(
    request: Parameters<VectorDb['search']>[0],
    query: PreparedQuery,
    context: CallContext,
  ): Promise<SearchHit[]> {
    try {
      const [hits = []] = await this.deps.guard.run(() => this.deps.vectorDb.search(request), context.signal);
      return hits;
    } catch (err) {
      if (isLatticeError(err, 'NOT_FOUND') && err.field === 'collection') {
        if (query.cursor) throw staleToken(query.index, query.cursor.readVersion);
        throw new LatticeError('FAILED_PRECONDITION', `collection ${request.collection} does not exist`, {
          field: 'variant',
        });
      }
      throw err;
    }
  }
}

function staleToken(index: number, version: number): LatticeError {
  return new LatticeError(
    'FAILED_PRECONDITION',
    `queries[${index}].page_token is from version ${version}, which is no longer served: start again without a page_token`,
    { field: `queries[${index}].page_token` },
  );
}
