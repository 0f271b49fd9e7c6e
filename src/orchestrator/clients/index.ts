export { CircuitOpen, type FailureKind } from './call-errors.js';
export { CallPolicy, type CallPolicyOptions, type OutboundCallOptions } from './call-policy.js';
export type { CallTarget, ExternalService } from './call-target.js';
export { ChannelPool, type ChannelPoolOptions } from './channel-pool.js';
export { type BreakerOptions, defaultBreakerOptions } from './circuit-breaker.js';
export type { FeatureCallOptions, FeatureFetcher, FeatureQuery, FeatureRows } from './feature-fetcher.js';
export { FeatureStoreClient, type FeatureStoreClientOptions } from './feature-store-client.js';
export { KServeClient, type ModelMetadata, type TensorMetadata } from './kserve-client.js';
export { dataTypeOfKserve, kserveDatatype } from './kserve-tensors.js';
export type { InferCallOptions, InferRequest, ModelInferer, Tensor } from './model-inferer.js';
export { NumerixClient } from './numerix-client.js';
export {
  createOrchestratorClients,
  type OrchestratorClients,
  type OrchestratorClientsOptions,
} from './orchestrator-clients.js';
export type {
  ComputePrecision,
  RemoteCompute,
  RemoteComputeOptions,
  RemoteComputeRequest,
} from './remote-compute.js';
export { defaultRetryOptions, type RetryOptions } from './retry-backoff.js';
export { type VssSearch, VssSearchClient } from './vss-search-client.js';
