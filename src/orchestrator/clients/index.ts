export type { FeatureCallOptions, FeatureFetcher, FeatureQuery, FeatureRows } from './feature-fetcher.js';
export type { InferCallOptions, InferRequest, ModelInferer, Tensor } from './model-inferer.js';
