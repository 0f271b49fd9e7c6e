import { Metadata } from '@grpc/grpc-js';
import {
  type GetEmbeddingsRequest,
  type GetEmbeddingsResponse,
  type SearchRequest,
  type SearchResponse,
  SimilaritySearchService,
} from '../../gen/vss/v1/vss.js';
import type { CallPolicy, OutboundCallOptions } from './call-policy.js';

/**
 * The port the retrieval stage searches through: `vss.v1.SimilaritySearch` Search and GetEmbeddings
 * against one vss serving server (`target`, `host:port`), without the transport.
 */
export interface VssSearch {
  search(target: string, request: SearchRequest, options: OutboundCallOptions): Promise<SearchResponse>;
  getEmbeddings(
    target: string,
    request: GetEmbeddingsRequest,
    options: OutboundCallOptions,
  ): Promise<GetEmbeddingsResponse>;
}

/** The caller identity sent to vss serving, for a server with caller tokens on (its `auth.callerTokens`). */
export interface VssCallerCredentials {
  callerId?: string;
  callerToken?: string;
  /** Default `caller-id`. */
  idHeader?: string;
  /** Default `caller-token`. */
  tokenHeader?: string;
}

/**
 * VssSearch over the generated vss.v1 code, through the process's CallPolicy: pooled channels, the
 * request's deadline and cancellation, a circuit per endpoint and metrics, as the other clients.
 * The orchestrator never imports src/vss/: vss is a service it calls like any other.
 */
export class VssSearchClient implements VssSearch {
  // One object for every call: grpc-js copies it when a call starts.
  private readonly metadata = new Metadata();

  constructor(
    private readonly policy: CallPolicy,
    credentials: VssCallerCredentials = {},
  ) {
    if (credentials.callerId !== undefined)
      this.metadata.set((credentials.idHeader ?? 'caller-id').toLowerCase(), credentials.callerId);
    if (credentials.callerToken !== undefined)
      this.metadata.set((credentials.tokenHeader ?? 'caller-token').toLowerCase(), credentials.callerToken);
  }

  search(target: string, request: SearchRequest, options: OutboundCallOptions): Promise<SearchResponse> {
    return this.policy.unary(
      { service: 'vss', target, method: 'Search' },
      SimilaritySearchService.search,
      request,
      { ...options, metadata: this.metadata },
      (response) => response,
    );
  }

  getEmbeddings(
    target: string,
    request: GetEmbeddingsRequest,
    options: OutboundCallOptions,
  ): Promise<GetEmbeddingsResponse> {
    return this.policy.unary(
      { service: 'vss', target, method: 'GetEmbeddings' },
      SimilaritySearchService.getEmbeddings,
      request,
      { ...options, metadata: this.metadata },
      (response) => response,
    );
  }
}
