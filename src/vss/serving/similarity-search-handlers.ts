/**
 * The `vss.v1.SimilaritySearch` service: Search (search-service.ts) and the GetEmbeddings /
 * ScoreCandidates look-ups (embedding-service.ts), wired on one set of dependencies.
 */
import type { CallContext, UnaryHandlers } from '../../platform/grpc/index.js';
import type { ClusterVectorDbs } from '../model/index.js';
import type { VssStore } from '../store/index.js';
import { CandidateLookup } from './candidate-lookup.js';
import type { ServingConfigRepository } from './config-repository.js';
import { EmbeddingService } from './embedding-service.js';
import { FilterFields } from './filter-fields.js';
import type { PageTokens } from './page-token.js';
import type { RecallSampler } from './recall-sampler.js';
import type { ResultCache } from './result-cache.js';
import { ResultPages } from './result-pages.js';
import { SearchService } from './search-service.js';
import type { ServingMetrics } from './serving-metrics.js';
import type { SimilaritySearchAnswers } from './similarity-search-service.js';
import type { VectorDbGuard } from './vector-db-guard.js';

export interface SimilaritySearchDeps {
  store: VssStore;
  config: ServingConfigRepository;
  /** Each variant is searched on its cluster's vector DB. */
  vectorDbs: ClusterVectorDbs;
  guard: VectorDbGuard;
  cache: ResultCache;
  tokens: PageTokens;
  metrics: ServingMetrics;
  recall: RecallSampler;
  /** Largest message the server sends; default 16 MiB (the gRPC server's default). */
  maxMessageBytes?: number;
}

export function similaritySearchHandlers(
  deps: SimilaritySearchDeps,
): UnaryHandlers<typeof SimilaritySearchAnswers> {
  const lookup = new CandidateLookup(deps);
  const search = new SearchService({
    ...deps,
    lookup,
    pages: new ResultPages(deps),
    fields: new FilterFields(deps),
  });
  const embeddings = new EmbeddingService({
    ...deps,
    lookup,
    maxMessageBytes: deps.maxMessageBytes ?? 16 * 1024 * 1024,
  });
  return {
    search: (request, context: CallContext) => search.search(request, context),
    getEmbeddings: (request, context: CallContext) => embeddings.getEmbeddings(request, context),
    scoreCandidates: (request, context: CallContext) => embeddings.scoreCandidates(request, context),
  };
}
