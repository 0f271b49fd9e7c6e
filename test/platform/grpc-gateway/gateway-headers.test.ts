/**
 * The gateway's configured pass-through, against a real GrpcServer: a request header listed in
 * `headersToMetadata` reaches the handler as its metadata key, and a trailer listed in
 * `trailersToHeaders` comes back as the response header, with an answer and with an error alike;
 * headers not asked for send nothing, and the OpenAPI document names the forwarded header.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import swagger from '@fastify/swagger';
import { Metadata } from '@grpc/grpc-js';
import { SearchResponse } from '../../../src/gen/vss/v1/vss.js';
import { LatticeError } from '../../../src/platform/errors.js';
import { opsServer, searchGateway } from './gateway-harness.js';

const ops = opsServer();
await ops.app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'ops', version: '1' } } });
const { search } = searchGateway(ops, {
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
  gateway: {
    headersToMetadata: [{ header: 'X-Echo', metadata: 'x-echo', description: 'sent on as x-echo' }],
    trailersToHeaders: [{ trailer: 'echo-back', header: 'X-Echo-Back', description: 'what x-echo got' }],
  },
});

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
