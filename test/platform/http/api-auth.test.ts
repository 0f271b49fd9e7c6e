import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiAuth, apiCallerOf, HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';

const TOKEN = 'token-of-alice-0123456789';
const ADMIN_KEY = 'admin-key-0123456789abcdef';

describe('ApiAuth', () => {
  const auth = new ApiAuth({ callerTokens: { alice: TOKEN }, adminApiKeys: [ADMIN_KEY] });

  test('names a caller token by its caller id, and an admin key by its place', () => {
    assert.deepEqual(auth.authenticate({ authorization: `Bearer ${TOKEN}` }), {
      name: 'alice',
      kind: 'caller-token',
      token: TOKEN,
    });
    assert.equal(auth.authenticate({ 'caller-id': 'alice', 'caller-token': TOKEN }).name, 'alice');
    assert.equal(auth.authenticate({ authorization: `bearer ${ADMIN_KEY}` }).name, 'vss-admin-key-1');
  });

  test('refuses a missing, malformed, unknown or mismatched key with UNAUTHENTICATED', () => {
    for (const headers of [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer not-a-key' },
      { 'caller-id': 'bob', 'caller-token': TOKEN },
    ]) {
      assert.throws(() => auth.authenticate(headers), { code: 'UNAUTHENTICATED', field: 'Authorization' });
    }
  });

  test('with no key configured, everyone is anonymous', () => {
    const off = new ApiAuth({});
    assert.equal(off.enabled, false);
    assert.deepEqual(off.authenticate({}), { name: 'anonymous', kind: 'anonymous' });
  });
});

describe('HttpServer with apiAuth', () => {
  const server = new HttpServer({
    name: 'test',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    tls: false,
    apiAuth: new ApiAuth({ callerTokens: { alice: TOKEN } }),
  });
  server.app.get('/api/v1/whoami', async (request) => ({ name: apiCallerOf(request).name }));
  let base = '';
  before(async () => {
    base = `http://127.0.0.1:${await server.start()}`;
  });
  after(() => server.stop());

  test('guards /api/ with a 401 and the challenge, and leaves the probes open', async () => {
    const refused = await fetch(`${base}/api/v1/session`);
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="lattice"');
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'UNAUTHENTICATED');
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
  });

  test('answers the session and the routes with the caller', async () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    assert.deepEqual(await (await fetch(`${base}/api/v1/session`, { headers })).json(), {
      auth: true,
      caller: 'alice',
    });
    assert.deepEqual(await (await fetch(`${base}/api/v1/whoami`, { headers })).json(), { name: 'alice' });
  });
});
