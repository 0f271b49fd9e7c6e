/**
 * The servers the gateway tests call through: an ops HttpServer on a free loopback port, and a
 * gateway on it to the SimilaritySearch service of a real GrpcServer whose Search handler the test
 * writes.
 */
import { after, before } from 'node:test';
import { credentials } from '@grpc/grpc-js';
import { DESCRIPTOR_SET_BASE64 } from '../../../src/gen/descriptor-set.js';
import { SimilaritySearchService } from '../../../src/gen/vss/v1/vss.js';
import type { GrpcServerOptions, UnaryHandlers } from '../../../src/platform/grpc/index.js';
import {
  descriptorRegistry,
  type GrpcGatewayOptions,
  registerGrpcGateway,
} from '../../../src/platform/grpc-gateway/index.js';
import { HttpServer, type HttpServerOptions } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { echoGrpcServer } from '../../support/echo-service.js';

/** An ops HttpServer in plaintext with silent logs, `options` over that; not started. */
export function opsServer(options: Partial<HttpServerOptions> = {}): HttpServer {
  return new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    tls: false,
    ...options,
  });
}

type SearchHandler = UnaryHandlers<typeof SimilaritySearchService>['search'];

export interface SearchGatewayOptions {
  /** The gRPC server's Search; GetEmbeddings and ScoreCandidates answer empty, as no test calls them. */
  search: SearchHandler;
  grpc?: Partial<GrpcServerOptions>;
  gateway?: Partial<GrpcGatewayOptions>;
  /** Headers every `search` call sends, under the ones it is given. */
  headers?: Record<string, string>;
}

/**
 * Adds the gateway routes of vss.v1.SimilaritySearch to `ops` (so anything the routes need, such as
 * @fastify/swagger, is registered first) and starts both servers before the file's tests, stopping
 * them after. `search` posts `{ entity }` to the Search route.
 */
export function searchGateway(ops: HttpServer, options: SearchGatewayOptions) {
  const grpc = echoGrpcServer(options.grpc);
  grpc.addUnaryService(SimilaritySearchService, {
    search: options.search,
    getEmbeddings: async () => ({ embeddings: [] }),
    scoreCandidates: async () => ({ scores: [] }),
  });
  const gateway = registerGrpcGateway(ops.app, {
    services: [descriptorRegistry(DESCRIPTOR_SET_BASE64).getService('vss.v1.SimilaritySearch')!],
    maxMessageBytes: 1024 * 1024,
    idHeader: 'caller-id',
    tokenHeader: 'caller-token',
    callerTokens: false,
    ...options.gateway,
  });
  let base = '';
  before(async () => {
    const port = await grpc.start();
    gateway.serve({ address: `127.0.0.1:${port}`, credentials: credentials.createInsecure() });
    base = `http://127.0.0.1:${await ops.start()}`;
  });
  after(async () => {
    await ops.stop();
    await grpc.stop(0);
  });
  return {
    search(entity: string, headers: Record<string, string> = {}, signal?: AbortSignal) {
      return fetch(`${base}/api/v1/rpc/vss.v1.SimilaritySearch/Search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...options.headers, ...headers },
        body: JSON.stringify({ entity }),
        signal,
      });
    },
  };
}
