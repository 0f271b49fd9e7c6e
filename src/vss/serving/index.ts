/**
 * vss serving: the `vss.v1.SimilaritySearch` gRPC component.
 */
export { WINDOW_STEPS } from './candidate-window.js';
export {
  type ConfigRepositoryOptions,
  type ServedVariant,
  ServingConfigRepository,
  type ServingModel,
} from './config-repository.js';
export { type PageCursor, PageTokens } from './page-token.js';
export { RecallSampler, type RecallSamplerOptions } from './recall-sampler.js';
export { SEARCH_LIMITS } from './request-limits.js';
export { type CachedPage, ResultCache, type ResultCacheOptions, resultKey } from './result-cache.js';
export { SearchService, type SearchServiceDeps } from './search-service.js';
export {
  DEFAULT_INDEXED_THRESHOLD,
  type DegradedVariant,
  SERVED_INDEX_DEGRADED,
  ServedIndexHealth,
  type ServedIndexHealthOptions,
} from './served-index-health.js';
export { type ServingLabels, ServingMetrics } from './serving-metrics.js';
export { type SimilaritySearchDeps, similaritySearchHandlers } from './similarity-search-handlers.js';
export { VectorDbGuard, type VectorDbGuardOptions } from './vector-db-guard.js';
export { startVssServing, type VssServing, type VssServingOptions } from './vss-serving-server.js';
