/**
 * A lean gRPC load generator for Search: one HTTP/2 session from node:http2, every request encoded
 * and framed once before the run, each call a bare stream that checks `grpc-status`. It does what
 * h2load or ghz do for a server benchmark: the generator costs a small share of what a grpc-js client
 * costs per call (its channel, call stack, interceptors and a decode of every response), so on this
 * 2-core machine the measurement is of the server, not of a client competing with it for the other
 * core. Correctness is checked outside the timed runs: {@link LeanSearchClient.page} decodes a
 * response, and index.ts compares those pages with the grpc-js client's.
 */
import { type ClientHttp2Session, connect, constants } from 'node:http2';
import { SearchRequest, SearchResponse } from '../../src/gen/vss/v1/vss.js';

const PATH = '/vss.v1.SimilaritySearch/Search';
const HEADERS = {
  [constants.HTTP2_HEADER_METHOD]: 'POST',
  [constants.HTTP2_HEADER_PATH]: PATH,
  [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
  [constants.HTTP2_HEADER_TE]: 'trailers',
  'grpc-timeout': '10S',
};

/** A message in gRPC's length-prefixed framing (uncompressed). */
function frame(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(5 + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

export class LeanSearchClient {
  private readonly session: ClientHttp2Session;
  private readonly frames: Buffer[];

  constructor(address: string, requests: readonly SearchRequest[]) {
    this.session = connect(`http://${address}`);
    this.session.on('error', () => {});
    this.frames = requests.map((request) => frame(SearchRequest.encode(request).finish()));
  }

  /** Sends request `q` (modulo the prepared ones); resolves to the response message's bytes. */
  call(q: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const stream = this.session.request(HEADERS);
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message: string | undefined;
      // A trailers-only response (an error) carries grpc-status in its headers.
      stream.on('response', (headers) => {
        status ??= headers['grpc-status'] as string | undefined;
        message ??= headers['grpc-message'] as string | undefined;
      });
      stream.on('trailers', (trailers) => {
        status = trailers['grpc-status'] as string | undefined;
        message = trailers['grpc-message'] as string | undefined;
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('close', () => {
        if (status !== '0') {
          reject(new Error(`Search ${q}: grpc-status ${status ?? 'missing'} ${message ?? ''}`));
          return;
        }
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        resolve(body.subarray(5));
      });
      stream.end(this.frames[q % this.frames.length]);
    });
  }

  /** Request `q`'s answer decoded: the ids of its first query's page, best first. */
  async page(q: number): Promise<string[]> {
    const [result] = SearchResponse.decode(await this.call(q)).results;
    if (result?.error !== '') throw new Error(`search ${q}: ${result?.error ?? 'no result'}`);
    return result.candidates.map((c) => c.id);
  }

  close(): void {
    this.session.close();
  }
}
