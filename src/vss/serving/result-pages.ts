/**
 * Paging: which version a query's page reads (the token's, while it is still served), the candidate
 * window the page is cut from (candidate-window.ts: the vector DB's ranking of the variant's indexed
 * points under the filters, as deep as the page), the page after the token's cursor, and the token
 * of the next page: issued whenever candidates remain, up to the walk's depth bound.
 */
import { isLatticeError, LatticeError } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import type { Filter, SearchHit, VectorDb } from '../../platform/vectordb/index.js';
import { type ClusterVectorDbs, EXPIRES_AT_FIELD, expiryOf, unexpiredFilter } from '../model/index.js';
import { variantColumn } from '../store/index.js';
import { candidateWindow } from './candidate-window.js';
import type { ServedVariant, ServingConfigRepository } from './config-repository.js';
import type { PageCursor, PageTokens } from './page-token.js';
import { checkWalkDepth } from './request-limits.js';
import { stopIfOver } from './request-pacing.js';
import type { PreparedQuery } from './search-query.js';
import type { ServingLabels, ServingMetrics } from './serving-metrics.js';
import type { VectorDbGuard } from './vector-db-guard.js';

export interface ResultPagesDeps {
  config: ServingConfigRepository;
  /** A variant's pages come from its cluster's vector DB. */
  vectorDbs: ClusterVectorDbs;
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
  /** HNSW width of the vector DB searches (model/hnsw-params.ts searchWidthOf). */
  searchWidth: number;
  labels: ServingLabels;
  context: CallContext;
}

export interface ResultPage {
  /** Best first. */
  hits: SearchHit[];
  nextPageToken: string;
  /** The filters the vector DB applied: the variant's membership, unexpired embeddings, the query's. */
  filters: Filter[];
  /** When the page's first candidate expires (epoch ms); undefined when none does. */
  expiresAt: number | undefined;
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
    const { served, query, version, collection, vector, pageSize, attributes, searchWidth } = request;
    // An expired embedding never matches (vss.md), whatever the sweep has removed yet.
    const expiring = served.model.embeddingTtlSeconds > 0;
    const filters: Filter[] = [
      { field: variantColumn(served.variant.variant), op: 'IN', values: ['true'] },
      ...(expiring ? [unexpiredFilter(Date.now())] : []),
      ...query.filters,
    ];
    // The expiry comes back with the page, so a cached copy is not served past it.
    const payload = expiring ? [...attributes, EXPIRES_AT_FIELD] : attributes;
    const cursor = query.cursor;
    const offset = cursor?.offset ?? 0;
    checkWalkDepth(query.index, offset, pageSize);
    const started = performance.now();
    const window = await candidateWindow(offset + pageSize + 1, (width) =>
      this.vectorSearch(
        this.deps.vectorDbs.of(served.variant.cluster, served.variant.variant),
        {
          collection,
          queries: [{ vector, excludeIds: query.candidateId === undefined ? [] : [query.candidateId] }],
          filters,
          limit: width,
          indexedOnly: true,
          efSearch: searchWidth,
          // Attributes come from the answer that applied the filters: one snapshot, one source.
          withPayload: payload.length > 0 ? payload : false,
        },
        query,
        request.context,
      ),
    );
    this.deps.metrics.vectorDbMs(request.labels, performance.now() - started);
    const start = resumeAt(window.hits, cursor);
    const page = window.hits.slice(start, start + pageSize);
    const last = page[page.length - 1];
    const more = window.hits.length > start + page.length || !window.complete;
    const nextPageToken =
      more && last
        ? this.deps.tokens.encode({
            query: query.queryHash,
            filters: query.filtersHash,
            readVersion: version,
            offset: start + page.length,
            lastScore: last.score,
            lastId: last.id,
          })
        : '';
    let expiresAt: number | undefined;
    for (const hit of page) {
      const expiry = expiryOf(hit.payload);
      if (expiry !== undefined && (expiresAt === undefined || expiry < expiresAt)) expiresAt = expiry;
    }
    return { hits: page, nextPageToken, filters, expiresAt };
  }

  private async vectorSearch(
    vectorDb: VectorDb,
    request: Parameters<VectorDb['search']>[0],
    query: PreparedQuery,
    context: CallContext,
  ): Promise<SearchHit[]> {
    // Each step of a window is a new search: none once the call is over.
    stopIfOver(context);
    try {
      const [hits = []] = await this.deps.guard.run(() => vectorDb.search(request), context.signal);
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

/**
 * Where the next page starts: right after the cursor's candidate. Over an unchanged collection that
 * is the token's offset; when writes moved the candidate, its new place; when it left the ranking,
 * the offset.
 */
function resumeAt(hits: readonly SearchHit[], cursor: PageCursor | undefined): number {
  if (!cursor) return 0;
  if (hits[cursor.offset - 1]?.id === cursor.lastId) return cursor.offset;
  const moved = hits.findIndex((hit) => hit.id === cursor.lastId);
  return moved >= 0 ? moved + 1 : cursor.offset;
}
