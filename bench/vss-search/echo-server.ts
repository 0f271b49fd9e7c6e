/**
 * The transport floor of bench/vss-search: a bare grpc-js server with the generated SimilaritySearch
 * definition and codec, answering every Search with one canned page. Started inside the serving
 * process (the round trip's cost there) and, by floor-echo.ts, in a small process of its own (what
 * this machine does to the tail of any grpc-js server).
 */
import { Server, type ServiceError, status } from '@grpc/grpc-js';
import {
  type SearchResponse,
  type SimilaritySearchServer,
  SimilaritySearchService,
} from '../../src/gen/vss/v1/vss.js';
import { listen } from '../../src/platform/grpc/listen.js';

export async function startEchoServer(canned: SearchResponse): Promise<{ port: number; server: Server }> {
  const unimplemented = (_call: unknown, callback: (error: Partial<ServiceError>) => void) =>
    callback({ code: status.UNIMPLEMENTED });
  const handlers: SimilaritySearchServer = {
    search: (_call, callback) => callback(null, canned),
    getEmbeddings: unimplemented,
    scoreCandidates: unimplemented,
  };
  const server = new Server();
  server.addService(SimilaritySearchService, handlers);
  return { port: await listen(server), server };
}
