/**
 * The gateway's configured pass-through, against a real GrpcServer: a request header listed in
 * `headersToMetadata` reaches the handler as its metadata key, and a trailer listed in
 * `trailersToHeaders` comes back as the response header, with an answer and with an error alike;
 * headers not asked for send nothing, and the OpenAPI document names the forwarded header.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import swagger from '@fastify/swagger';
import { credentials, Metadata } from '@grpc/grpc-js';
import { DESCRIPTOR_SET_BASE64 } from '../../../src/gen/descriptor-set.js';
import { SearchResponse, SimilaritySearchService } from '../../../src/gen/vss/v1/vss.js';
import { LatticeError } from '../../../src/platform/errors.js';
import { descriptorRegistry, registerGrpcGateway } from '../../../src/platform/grpc-gateway/index.js';
import { HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { echoGrpcServer } from '../../support/echo-service.js';

const grpc = echoGrpcServer();
grpc.addUnaryService(SimilaritySearchService, {
  // Answers the `x-echo` metadata it got as the `echo-back` trailer; entity "fail" fails with it.
  search: async (request, context) => {
    const echo = context.metadata.get('x-echo')[0];
    if (typeof echo === 'string') {
      context.trailers = new Metadata();
      context.trailers.set('echo-back', `got ${echo}`);
    }
    if (request.entity === 'fail') throw new LatticeError('NOT_FOUND', 'no such entity', { field: 'entity' });
    return SearchResponse.fromPartial({});
  },
  getEmbeddings: async () => ({ embeddings: [] }),
  scoreCandidates: async () => ({ scores: [] }),
});
const ops = new HttpServer({
  name: 'ops',
  host: '127.0.0.1',
  port: 0,
  logger: createLogger('test', { level: 'silent' }),
  metrics: new Metrics(),
  tls: false,
});
await ops.app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'ops', version: '1' } } });
const gateway = registerGrpcGateway(ops.app, {
  services: [descriptorRegistry(DESCRIPTOR_SET_BASE64).getService('vss.v1.SimilaritySearch')!],
  maxMessageBytes: 1024 * 1024,
  idHeader: 'caller-id',
  tokenHeader: 'caller-token',
  callerTokens: false,
  headersToMetadata: [{ header: 'X-Echo', metadata: 'x-echo', description: 'sent on as x-echo' }],
  trailersToHeaders: [{ trailer: 'echo-back', header: 'X-Echo-Back', description: 'what x-echo got' }],
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

function search(entity: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/api/v1/rpc/vss.v1.SimilaritySearch/Search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ entity }),
  });
}

test('a listed request header becomes metadata, and a listed trailer a response header', async () => {
  const plain = await search('e');
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get('x-echo-back'), null, 'nothing asked, nothing answered');
  const asked = await search('e', { 'X-Echo': 'hello' });
  assert.equal(asked.status, 200);
  assert.equal(asked.headers.get('x-echo-back'), 'got hello');
  const failed = await search('fail', { 'x-echo': 'again' });
  assert.equal(failed.status, 404);
  assert.equal(((await failed.json()) as { error: { field: string } }).error.field, 'entity');
  assert.equal(failed.headers.get('x-echo-back'), 'got again', 'on an error too');
});

test('the OpenAPI document lists the forwarded header and describes the answered one', () => {
  const document = ops.app.swagger() as unknown as {
    paths: Record<string, { post: { description: string; parameters: { in: string; name: string }[] } }>;
  };
  const search = document.paths['/api/v1/rpc/vss.v1.SimilaritySearch/Search']!.post;
  assert.ok(search.parameters.some((p) => p.in === 'header' && p.name === 'x-echo'));
  assert.match(search.description, /Response header X-Echo-Back: what x-echo got/);
});
