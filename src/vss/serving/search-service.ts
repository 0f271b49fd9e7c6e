/**
 * Queries of one Search answered at a time: each is a few vector DB calls (a Qdrant round trip, or
 * the embedded engine's CPU), so more in flight only queue behind each other and hold their memory.
 */
const QUERIES_IN_FLIGHT = 8;

/**
 * The Search handler. In order: check the request's shape and cost against the request limits →
 * resolve model, variant and read version (config repository) → validate every query → per query: result cache (memory, then distributed) → the candidate's
 * search embedding for a query by id → the page (result-pages.ts) → its attributes, from the same
 * vector DB answer that applied the filters (candidate-attributes.ts) → cache and recall sample.
 */
import type { QueryResult, SearchRequest, SearchResponse } from '../../gen/vss/v1/vss.js';
import { invalidArgument } from '../../platform/errors.js';
import type { CallContext } from '../../platform/grpc/index.js';
import { collectionName } from '../model/collection-name.js';
import type { ClusterVectorDbs } from '../model/index.js';
import { candidatesOf } from './candidate-attributes.js';
import type { CandidateLookup } from './candidate-lookup.js';
import type { ServedVariant, ServingConfigRepository } from './config-repository.js';
import type { FilterFields } from './filter-fields.js';
import { measuredCall } from './measured-call.js';
import type { PageTokens } from './page-token.js';
import type { RecallSampler } from './recall-sampler.js';
import { quote, SEARCH_LIMITS, tooDeep, tooManyFilterValues } from './request-limits.js';
import { pacedMap } from './request-pacing.js';
import {
  attributesOf,
  filtersOf,
  pageSizeOf,
  requireName,
  searchWidthRequested,
} from './request-validation.js';
import { type CachedPage, type ResultCache, resultKey } from './result-cache.js';
import type { ResultPages } from './result-pages.js';
import { type PreparedQuery, prepareQuery, sharedFilters } from './search-query.js';
import type { ServingLabels, ServingMetrics } from './serving-metrics.js';

export interface SearchServiceDeps {
  config: ServingConfigRepository;
  vectorDbs: ClusterVectorDbs;
  cache: ResultCache;
  tokens: PageTokens;
  metrics: ServingMetrics;
  recall: RecallSampler;
  lookup: CandidateLookup;
  pages: ResultPages;
  fields: FilterFields;
}

export class SearchService {
  constructor(private readonly deps: SearchServiceDeps) {}

  search(request: SearchRequest, context: CallContext): Promise<SearchResponse> {
    return measuredCall(this.deps.metrics, 'Search', (labels) => this.runSearch(request, context, labels));
  }

  private async runSearch(
    request: SearchRequest,
    context: CallContext,
    labels: ServingLabels,
  ): Promise<SearchResponse> {
    requireName(request.entity, 'entity');
    requireName(request.modelName, 'model_name');
    requireName(request.variant, 'variant');
    const pageSize = pageSizeOf(request.pageSize);
    const requestedWidth = searchWidthRequested(request.searchWidth);
    const attributes = attributesOf(request.attributes);
    if (request.queries.length === 0)
      throw invalidArgument('queries must hold at least one query', 'queries');
    if (request.queries.length > SEARCH_LIMITS.queries) {
      throw invalidArgument(
        `queries: ${request.queries.length} queries exceed the request limit max_queries (${SEARCH_LIMITS.queries})`,
        'queries',
      );
    }
    checkFilterValues(request);
    // Every first page already ranks page_size candidates per query.
    if (request.queries.length * pageSize > SEARCH_LIMITS.depth) {
      throw tooDeep(request.queries.length * pageSize);
    }
    const served = await this.deps.config.served({
      entity: request.entity,
      modelName: request.modelName,
      variant: request.variant,
    });
    Object.assign(labels, { entity: request.entity, model: request.modelName, variant: request.variant });
    // A Search's width widens the variant's, never narrows it (hnsw-params.ts searchWidthOf).
    const searchWidth = Math.max(served.searchWidth, requestedWidth);
    const shared = sharedFilters(filtersOf(request.filters, 'filters'));
    await this.deps.fields.check(served, shared.filters, 'filters', context);
    const prepared = await pacedMap(request.queries.length, 1, context, (i) =>
      prepareQuery(this.deps, served, request.queries[i]!, i, shared, context),
    );
    let depth = 0;
    for (const query of prepared) depth += (query.cursor?.offset ?? 0) + pageSize;
    if (depth > SEARCH_LIMITS.depth) throw tooDeep(depth);
    const results = await pacedMap(prepared.length, QUERIES_IN_FLIGHT, context, (i) =>
      this.answer(served, prepared[i]!, pageSize, attributes, searchWidth, labels, context),
    );
    return { results };
  }

  private async answer(
    served: ServedVariant,
    query: PreparedQuery,
    pageSize: number,
    attributes: readonly string[],
    searchWidth: number,
    labels: ServingLabels,
    context: CallContext,
  ): Promise<QueryResult> {
    const { model, variant } = served;
    const vectorDb = this.deps.vectorDbs.of(variant.cluster, variant.variant);
    const version = await this.deps.pages.versionFor(served, query);
    const key = this.deps.cache.enabled(variant.cache)
      ? resultKey({
          entity: model.entity,
          modelName: model.modelName,
          variant: variant.variant,
          readVersion: version,
          query: query.queryHash,
          filters: query.filtersHash,
          attributes,
          pageSize,
          searchWidth,
          pageToken: query.pageToken,
          clusterPrefix: this.deps.vectorDbs.cacheKeyPrefix(variant.cluster),
        })
      : undefined;
    let cached: Awaited<ReturnType<typeof this.deps.cache.get>> | undefined;
    if (key !== undefined) {
      const lookupStarted = performance.now();
      cached = await this.deps.cache.get(key, variant.cache);
      this.deps.metrics.cacheMs(labels, performance.now() - lookupStarted);
    }
    if (cached) {
      this.deps.metrics.cacheLookup(labels, 'hit', cached.level);
      return { candidates: cached.page.candidates, nextPageToken: cached.page.nextPageToken, error: '' };
    }
    this.deps.metrics.cacheLookup(labels, 'miss', 'all');
    const collection = collectionName(model.entity, model.modelName, version);
    let vector = query.vector;
    if (query.candidateId !== undefined) {
      if (!query.unstorableId) {
        const storeStarted = performance.now();
        vector = await this.deps.lookup.searchVector(
          vectorDb,
          model,
          collection,
          version,
          query.candidateId,
          context,
        );
        this.deps.metrics.storeMs(labels, performance.now() - storeStarted);
      }
      if (!vector) {
        return {
          candidates: [],
          nextPageToken: '',
          error: `NOT_FOUND: candidate ${quote(query.candidateId)} has no embedding in version ${version} of ${model.entity}/${model.modelName}`,
        };
      }
    }
    const page = await this.deps.pages.page({
      served,
      query,
      version,
      collection,
      vector: vector!,
      pageSize,
      attributes,
      searchWidth,
      labels,
      context,
    });
    const candidates = candidatesOf(page.hits, attributes);
    const result: CachedPage = { candidates, nextPageToken: page.nextPageToken };
    if (key !== undefined) {
      const entry = page.expiresAt === undefined ? result : { ...result, expiresAt: page.expiresAt };
      await this.deps.cache.set(key, entry, variant.cache);
    }
    this.deps.metrics.similarCandidates(labels, candidates.length);
    if (!query.cursor) {
      this.deps.recall.offer({
        labels: { ...labels },
        collection,
        version,
        vector: vector!,
        filters: page.filters,
        excludeIds: query.candidateId === undefined ? [] : [query.candidateId],
        served: page.hits.map((h) => h.id),
        vectorDb,
      });
    }
    return { ...result, error: '' };
  }
}

/** The request limit max_filter_values, on the decoded request (the byte pre-check counts the same). */
function checkFilterValues(request: SearchRequest): void {
  let shared = 0;
  for (const filter of request.filters) shared += filter.values.length;
  let total = shared * request.queries.length;
  for (const query of request.queries) for (const filter of query.filters) total += filter.values.length;
  if (total > SEARCH_LIMITS.filterValues) throw tooManyFilterValues(total);
}
