export {
  type BreakerOptions,
  CallPolicy,
  type CallPolicyOptions,
  type CallTarget,
  CircuitOpen,
  defaultBreakerOptions,
  defaultRetryOptions,
  type ExternalService,
  type FailureKind,
  type OutboundCallOptions,
  type RetryOptions,
} from './call-policy.js';
export { ChannelPool, type ChannelPoolOptions } from './channel-pool.js';
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
