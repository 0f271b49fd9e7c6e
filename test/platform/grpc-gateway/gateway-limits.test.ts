/**
 * What the gateway answers before any gRPC server does: a body past its limit (JSON_BODY_FACTOR ×
 * grpc.maxMessageBytes) is 413 on the ops server as built, a route whose gRPC server has not started
 * is 503 UNAVAILABLE, and a gRPC server that does not answer is UNAVAILABLE too.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { registerRpcRoutes } from '../../../src/cli/rpc-gateway.js';
import { JSON_BODY_FACTOR } from '../../../src/platform/grpc-gateway/index.js';
import { loadSettings } from '../../../src/platform/settings/index.js';
import { closedPort } from '../../support/closed-port.js';
import { opsServer } from './gateway-harness.js';

const MAX_MESSAGE_BYTES = 1000;
const settings = loadSettings({
  env: {},
  overrides: { host: '127.0.0.1', grpc: { maxMessageBytes: MAX_MESSAGE_BYTES } },
});
const server = opsServer();
const routes = registerRpcRoutes(server.app, settings, 'vss');
before(() => server.app.ready());
after(() => server.stop());

const search = (body: string) =>
  server.app.inject({
    method: 'POST',
    url: '/api/v1/rpc/vss.v1.SimilaritySearch/Search',
    headers: { 'content-type': 'application/json' },
    payload: body,
  });

test('a body past JSON_BODY_FACTOR × grpc.maxMessageBytes is 413', async () => {
  const within = JSON.stringify({ entity: 'e'.repeat(MAX_MESSAGE_BYTES * JSON_BODY_FACTOR - 20) });
  assert.notEqual((await search(within)).statusCode, 413);
  const past = JSON.stringify({ entity: 'e'.repeat(MAX_MESSAGE_BYTES * JSON_BODY_FACTOR) });
  const answer = await search(past);
  assert.equal(answer.statusCode, 413, answer.body);
});

test('before its gRPC server is given, and when that server does not answer, a call is 503 UNAVAILABLE', async () => {
  const starting = await search('{}');
  assert.equal(starting.statusCode, 503);
  assert.equal(starting.json().error.code, 'UNAVAILABLE');
  routes.serve(await closedPort());
  const down = await search('{}');
  assert.equal(down.statusCode, 503);
  assert.equal(down.json().error.code, 'UNAVAILABLE');
});
