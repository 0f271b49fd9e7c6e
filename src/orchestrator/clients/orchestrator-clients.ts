import type { ChannelCredentials } from '@grpc/grpc-js';
import type { LocalChannel } from '../../platform/grpc/index.js';
import type { Metrics } from '../../platform/metrics/index.js';
import { CallPolicy } from './call-policy.js';
import { ChannelPool } from './channel-pool.js';
import type { BreakerOptions } from './circuit-breaker.js';
import { FeatureStoreClient } from './feature-store-client.js';
import { KServeClient } from './kserve-client.js';
import { NumerixClient } from './numerix-client.js';
import type { RetryOptions } from './retry-backoff.js';
import { type VssCallerCredentials, VssSearchClient } from './vss-search-client.js';

export interface OrchestratorClientsOptions {
  metrics: Metrics;
  /** The feature store, `host:port`; without it there is no `featureFetcher`. */
  featureStoreTarget?: string;
  /** Sent to the feature store as `idHeader` / `tokenHeader` metadata. */
  callerId?: string;
  callerToken?: string;
  /** Default `caller-id`. */
  idHeader?: string;
  /** Default `caller-token`. */
  tokenHeader?: string;
  /** The identity sent to vss serving (retrieval stages), for a vss with caller tokens on. */
  vssCaller?: VssCallerCredentials;
  /** HTTP/2 connections per endpoint; default 1 (see ChannelPoolOptions). */
  channelsPerTarget?: number;
  /** Default plaintext. */
  credentials?: ChannelCredentials;
  /** Servers of this process, called without the network when a target names one (ChannelPoolOptions). */
  local?: Iterable<LocalChannel>;
  retry?: Partial<RetryOptions>;
  breaker?: Partial<BreakerOptions>;
  /** Calls in flight to one endpoint, shared fairly by requests (CallPolicyOptions). */
  maxInFlightPerEndpoint?: number;
}

export interface OrchestratorClients {
  featureFetcher: FeatureStoreClient | undefined;
  modelInferer: KServeClient;
  remoteCompute: NumerixClient;
  /** vss Search, for model configs with a retrieval stage. */
  vssSearch: VssSearchClient;
  /** The shared policy: circuit states per endpoint. */
  policy: CallPolicy;
  /** Closes every pooled channel. */
  close(): void;
}

/**
 * The outbound clients of one orchestrator process over one channel pool and one call policy, made
 * once at start-up and shared by every model config version (the result fits `ComponentClients`).
 */
export function createOrchestratorClients(options: OrchestratorClientsOptions): OrchestratorClients {
  const pool = new ChannelPool({
    channelsPerTarget: options.channelsPerTarget,
    credentials: options.credentials,
    local: options.local,
  });
  const policy = new CallPolicy({
    pool,
    metrics: options.metrics,
    retry: options.retry,
    breaker: options.breaker,
    maxInFlightPerEndpoint: options.maxInFlightPerEndpoint,
  });
  const featureFetcher =
    options.featureStoreTarget === undefined
      ? undefined
      : new FeatureStoreClient({
          target: options.featureStoreTarget,
          policy,
          callerId: options.callerId,
          callerToken: options.callerToken,
          idHeader: options.idHeader,
          tokenHeader: options.tokenHeader,
        });
  return {
    featureFetcher,
    modelInferer: new KServeClient(policy),
    remoteCompute: new NumerixClient(policy),
    vssSearch: new VssSearchClient(policy, options.vssCaller),
    policy,
    close: () => pool.close(),
  };
}
