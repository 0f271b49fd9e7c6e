/**
 * The `vss.v1.SimilaritySearch` handlers. Search, in order: resolve model, variant and read version
 * (config repository) → validate the whole request → per query: result cache (memory, then
 * distributed) → vector DB search on the read version's collection, indexed points of the variant
 * only, with the filters → page after the token's cursor → attributes (payload, overlaid by the
 * aggregator's current values) → next page token. GetEmbeddings and ScoreCandidates read the model's
 * newest served version from the embedding store, falling back to the vector DB point.
 */
import type {
  Candidate,
  GetEmbeddingsRequest,
  GetEmbeddingsResponse,
  Query,
  QueryResult,
  ScoreCandidatesRequest,
  ScoreCandidatesResponse,
  SearchRequest,
  SearchResponse,
  SimilaritySearchService,
} from '../../gen/vss/v1/vss.js';
import { invalidArgument, isLatticeError, LatticeError } from '../../platform/errors.js';
import type { CallContext, UnaryHandlers } from '../../platform/grpc/index.js';
import { type StoredEmbedding, type VssStore, variantColumn } from '../store/index.js';
import type { Filter, PayloadValue, SearchHit, VectorDb } from '../vectordb/index.js';
import { collectionName } from './collection-name.js';
import type { ServedVariant, ServingConfigRepository, ServingModel } from './config-repository.js';
import { digest, type PageCursor, type PageTokens } from './page-token.js';
import type { RecallSampler } from './recall-sampler.js';
import {
  attributesOf,
  candidateIdsOf,
  filtersOf,
  MAX_QUERIES,
  pageSizeOf,
  requireName,
  vectorOf,
} from './request-validation.js';
import { type CachedPage, type ResultCache, resultKey } from './result-cache.js';
import { ranksAfter, score } from './scoring.js';
import { type ServingLabels, type ServingMetrics, UNKNOWN_LABELS } from './serving-metrics.js';
import type { VectorDbGuard } from './vector-db-guard.js';

export interface SearchServiceDeps {
  store: VssStore;
  config: ServingConfigRepository;
  vectorDb: VectorDb;
  guard: VectorDbGuard;
  cache: ResultCache;
  tokens: PageTokens;
  metrics: ServingMetrics;
  recall: RecallSampler;
}

/** The port's largest `limit`: deeper pages pass their offset to the vector DB. */
const MAX_SEARCH_LIMIT = 10_000;

interface PreparedQuery {
  index: number;
  candidateId: string | undefined;
  vector: Float32Array | undefined;
  filters: Filter[];
  queryHash: string;
  filtersHash: string;
  pageToken: string;
  cursor: PageCursor | undefined;
}

export function similaritySearchHandlers(
  deps: SearchServiceDeps,
): UnaryHandlers<typeof SimilaritySearchService> {
  const service = new SearchService(deps);
  return {
    search: (request, context) => service.search(request, context),
    getEmbeddings: (request, context) => service.getEmbeddings(request, context),
    scoreCandidates: (request, context) => service.scoreCandidates(request, context),
  };
}

export class SearchService {
  constructor(private readonly deps: SearchServiceDeps) {}

  search(request: SearchRequest, context: CallContext): Promise<SearchResponse> {
    return this.measured('Search', (labels) => this.runSearch(request, context, labels));
  }

  getEmbeddings(request: GetEmbeddingsRequest, context: CallContext): Promise<GetEmbeddingsResponse> {
    return this.measured('GetEmbeddings', async (labels) => {
      const model = await this.model(request.entity, request.modelName, labels);
      const ids = candidateIdsOf(request.candidateIds);
      const found = await this.embeddings(model, ids, context);
      return {
        embeddings: ids.map((id) => {
          const stored = found.get(id);
          if (!stored)
            return { id, found: false, embedding: { values: [] }, searchEmbedding: { values: [] } };
          return {
            id,
            found: true,
            embedding: { values: Array.from(stored.embedding) },
            searchEmbedding: { values: Array.from(stored.searchEmbedding) },
          };
        }),
      };
    });
  }

  scoreCandidates(request: ScoreCandidatesRequest, context: CallContext): Promise<ScoreCandidatesResponse> {
    return this.measured('ScoreCandidates', async (labels) => {
      const model = await this.model(request.entity, request.modelName, labels);
      const query = vectorOf(request.embedding?.values, model.config.vectorDimension, 'embedding.values');
      const ids = candidateIdsOf(request.candidateIds);
      const found = await this.embeddings(model, ids, context);
      return {
        scores: ids.map((id) => {
          const stored = found.get(id);
          if (!stored) return { id, found: false, score: 0 };
          return { id, found: true, score: score(model.config.distanceFunction, query, stored.embedding) };
        }),
      };
    });
  }

  /** Times a call and counts its failure by code, under the labels the handler resolved. */
  private async measured<T>(method: string, work: (labels: ServingLabels) => Promise<T>): Promise<T> {
    const labels: ServingLabels = { ...UNKNOWN_LABELS };
    const started = performance.now();
    try {
      return await work(labels);
    } catch (err) {
      this.deps.metrics.error(labels, isLatticeError(err) ? err.code : 'INTERNAL');
      throw err;
    } finally {
      this.deps.metrics.requestMs(labels, method, performance.now() - started);
    }
  }

  private async model(entity: string, modelName: string, labels: ServingLabels): Promise<ServingModel> {
    requireName(entity, 'entity');
    requireName(modelName, 'model_name');
    const model = await this.deps.config.model({ entity, modelName });
    labels.entity = entity;
    labels.model = modelName;
    return model;
  }

  private async runSearch(
    request: SearchRequest,
    context: CallContext,
    labels: ServingLabels,
  ): Promise<SearchResponse> {
    requireName(request.entity, 'entity');
    requireName(request.modelName, 'model_name');
    requireName(request.variant, 'variant');
    const served = await this.deps.config.served({
      entity: request.entity,
      modelName: request.modelName,
      variant: request.variant,
    });
    Object.assign(labels, { entity: request.entity, model: request.modelName, variant: request.variant });
    const pageSize = pageSizeOf(request.pageSize);
    const attributes = attributesOf(request.attributes);
    if (request.queries.length === 0)
      throw invalidArgument('queries must hold at least one query', 'queries');
    if (request.queries.length > MAX_QUERIES) {
      throw invalidArgument(
        `queries holds ${request.queries.length} queries, at most ${MAX_QUERIES}`,
        'queries',
      );
    }
    const shared = filtersOf(request.filters, 'filters');
    await this.checkFields(served.model, shared, 'filters');
    const prepared: PreparedQuery[] = [];
    for (const [i, query] of request.queries.entries()) {
      prepared.push(await this.prepare(served, query, i, shared));
    }
    const results = await Promise.all(
      prepared.map((query) => this.answer(served, query, pageSize, attributes, labels, context)),
    );
    return { results };
  }

  private async checkFields(model: ServingModel, filters: readonly Filter[], path: string): Promise<void> {
    for (const [i, filter] of filters.entries()) {
      if (!(await this.deps.config.isFilterField(model, filter.field))) {
        throw invalidArgument(
          `${path}[${i}].field: unknown filter field "${filter.field}" (known: the entity's aggregator attributes and to_be_indexed_<variant>)`,
          `${path}[${i}].field`,
        );
      }
    }
  }

  private async prepare(
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
      vector = vectorOf(
        query.embedding.values,
        served.model.config.vectorDimension,
        `${at}.embedding.values`,
      );
      queryHash = digest(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
    } else {
      throw invalidArgument(`${at} must set candidate_id or embedding`, at);
    }
    const own = filtersOf(query.filters, `${at}.filters`);
    await this.checkFields(served.model, own, `${at}.filters`);
    const filters = [...shared, ...own];
    const filtersHash = digest(JSON.stringify(filters.map((f) => [f.field, f.op, f.values])));
    let cursor: PageCursor | undefined;
    if (query.pageToken !== '') {
      cursor = this.deps.tokens.decode(query.pageToken, `${at}.page_token`);
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

  private async answer(
    served: ServedVariant,
    query: PreparedQuery,
    pageSize: number,
    attributes: readonly string[],
    labels: ServingLabels,
    context: CallContext,
  ): Promise<QueryResult> {
    const { model, variant } = served;
    const version = await this.versionFor(served, query);
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
          pageToken: query.pageToken,
        })
      : undefined;
    const cached = key === undefined ? undefined : await this.deps.cache.get(key, variant.cache);
    if (cached) {
      this.deps.metrics.cacheLookup(labels, 'hit', cached.level);
      return { candidates: cached.page.candidates, nextPageToken: cached.page.nextPageToken, error: '' };
    }
    this.deps.metrics.cacheLookup(labels, 'miss', 'all');
    const collection = collectionName(model.entity, model.modelName, version);
    let vector = query.vector;
    if (query.candidateId !== undefined) {
      vector = await this.candidateVector(model, collection, version, query.candidateId, context);
      if (!vector) {
        return {
          candidates: [],
          nextPageToken: '',
          error: `NOT_FOUND: candidate "${query.candidateId}" has no embedding in version ${version} of ${model.entity}/${model.modelName}`,
        };
      }
    }
    const filters: Filter[] = [
      { field: variantColumn(variant.variant), op: 'IN', values: ['true'] },
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
        queries: [
          { vector: vector!, excludeIds: query.candidateId === undefined ? [] : [query.candidateId] },
        ],
        filters,
        limit: fromTop ? offset + pageSize + 1 : pageSize + 1,
        offset: fromTop ? 0 : offset,
        indexedOnly: true,
        withPayload: attributes.length > 0 ? attributes : false,
      },
      query,
      context,
    );
    this.deps.metrics.vectorDbMs(labels, performance.now() - started);
    const distance = model.config.distanceFunction;
    const cursor = query.cursor;
    const after = cursor
      ? hits.filter((h) => ranksAfter(distance, h.score, h.id, cursor.lastScore, cursor.lastId))
      : hits;
    const page = after.slice(0, pageSize);
    const candidates = await this.withAttributes(model, page, attributes);
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
    const result: CachedPage = { candidates, nextPageToken };
    if (key !== undefined) await this.deps.cache.set(key, result, variant.cache);
    this.deps.metrics.similarCandidates(labels, candidates.length);
    if (!cursor) {
      this.deps.recall.offer({
        labels: { ...labels },
        collection,
        vector: vector!,
        filters,
        excludeIds: query.candidateId === undefined ? [] : [query.candidateId],
        served: page.map((h) => h.id),
      });
    }
    return { ...result, error: '' };
  }

  /** The token's version while it still exists; FAILED_PRECONDITION once it has been dropped. */
  private async versionFor(served: ServedVariant, query: PreparedQuery): Promise<number> {
    const pinned = query.cursor?.readVersion;
    if (pinned === undefined || pinned === served.readVersion) return served.readVersion;
    const status = await this.deps.config.versionStatus(served.model, pinned);
    if (status === undefined || status === 'DROPPED' || status === 'FAILED') {
      throw staleToken(query.index, pinned);
    }
    return pinned;
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

  private async candidateVector(
    model: ServingModel,
    collection: string,
    version: number,
    id: string,
    context: CallContext,
  ): Promise<Float32Array | undefined> {
    const stored = await this.deps.store.embeddings.read(model.embeddingsTable, {
      modelName: model.modelName,
      version,
      ids: [id],
    });
    const embedding = stored.get(id);
    if (embedding) return embedding.searchEmbedding;
    const [point] = await this.deps.guard.run(
      () => this.deps.vectorDb.getPoints(collection, [id], { withVector: true, withPayload: false }),
      context.signal,
    );
    return point?.vector;
  }

  /** Requested attributes: the point's payload, overlaid by the aggregator's current values. */
  private async withAttributes(
    model: ServingModel,
    hits: readonly SearchHit[],
    attributes: readonly string[],
  ): Promise<Candidate[]> {
    const current =
      attributes.length > 0 && hits.length > 0
        ? await this.deps.store.aggregator.read(
            model.aggregatorTable,
            hits.map((h) => h.id),
            attributes,
          )
        : undefined;
    return hits.map((hit) => {
      const values: Record<string, string> = {};
      for (const name of attributes) {
        const fromPayload = hit.payload?.[name];
        if (fromPayload !== undefined) values[name] = payloadText(fromPayload);
        const fresh = current?.get(hit.id)?.[name];
        if (fresh !== undefined) values[name] = fresh;
      }
      return { id: hit.id, score: hit.score, attributes: values };
    });
  }

  /** Embeddings of the model's newest served version: the store first, then the vector DB point. */
  private async embeddings(
    model: ServingModel,
    ids: readonly string[],
    context: CallContext,
  ): Promise<Map<string, StoredEmbedding>> {
    const version = this.deps.config.modelReadVersion(model);
    const found = await this.deps.store.embeddings.read(model.embeddingsTable, {
      modelName: model.modelName,
      version,
      ids,
    });
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length > 0) {
      const collection = collectionName(model.entity, model.modelName, version);
      const points = await this.deps.guard
        .run(() => this.deps.vectorDb.getPoints(collection, missing, { withPayload: false }), context.signal)
        .catch((err: unknown) => {
          if (isLatticeError(err, 'NOT_FOUND')) return [];
          throw err;
        });
      for (const point of points) {
        if (point?.vector) {
          found.set(point.id, {
            id: point.id,
            embedding: point.vector,
            searchEmbedding: point.vector,
            toBeIndexed: {},
            expiresAt: null,
          });
        }
      }
    }
    return found;
  }
}

function staleToken(index: number, version: number): LatticeError {
  return new LatticeError(
    'FAILED_PRECONDITION',
    `queries[${index}].page_token is from version ${version}, which is no longer served: start again without a page_token`,
    { field: `queries[${index}].page_token` },
  );
}

function payloadText(value: PayloadValue): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}
