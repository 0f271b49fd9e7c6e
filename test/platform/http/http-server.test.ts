import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { invalidArgument, LatticeError } from '../../../src/platform/errors.js';
import { HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';

describe('HttpServer', () => {
  let dependencyUp = true;
  const server = new HttpServer({
    name: 'test',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    readiness: {
      sql: async () => {
        if (!dependencyUp) throw new LatticeError('UNAVAILABLE', 'sql: connection refused');
      },
    },
  });
  server.app.post(
    '/echo',
    { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
    async (request) => {
      const { name } = request.body as { name: string };
      if (name === '') throw invalidArgument('name must not be empty', 'name');
      if (name === 'busy') throw new LatticeError('FAILED_PRECONDITION', 'a reset is running');
      if (name === 'crash') throw new Error('secret internals');
      return { hello: name };
    },
  );
  let base: string;
  before(async () => {
    base = `http://127.0.0.1:${await server.start()}`;
  });
  after(() => server.stop());

  const post = (body: unknown) =>
    fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  test('serves a route', async () => {
    const res = await post({ name: 'x' });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { hello: 'x' });
  });

  test('maps errors to statuses with a JSON body naming the field', async () => {
    let res = await post({ name: '' });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), {
      error: { code: 'INVALID_ARGUMENT', message: 'name must not be empty', field: 'name' },
    });
    res = await post({ name: 'busy' });
    assert.equal(res.status, 409);
    res = await post({ name: 'crash' });
    assert.equal(res.status, 500);
    assert.doesNotMatch(await res.text(), /secret/);
  });

  test('schema validation and malformed JSON are 400', async () => {
    const res = await post({ other: 1 });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'INVALID_ARGUMENT');
    const bad = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    assert.equal(bad.status, 400);
  });

  test('unknown routes are a JSON 404', async () => {
    const res = await fetch(`${base}/nope`);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
  });

  test('/healthz, /readyz with dependency checks, /metrics', async () => {
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    let ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200);
    dependencyUp = false;
    ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 503);
    assert.deepEqual(await ready.json(), { status: 'not ready', checks: { sql: 'sql: connection refused' } });
    dependencyUp = true;
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /http_server_requests_total\{server="test",route="\/echo",status="400"\} \d/);
  });
});

describe('/readyz bounds every check', () => {
  test('a check that never answers makes /readyz answer 503 naming it as timed out', async () => {
    const server = new HttpServer({
      name: 'hung',
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('test', { level: 'silent' }),
      metrics: new Metrics(),
      readinessTimeoutMs: 100,
      readiness: {
        queue: () => new Promise<void>(() => {}),
        sql: async () => {},
      },
    });
    const base = `http://127.0.0.1:${await server.start()}`;
    try {
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), {
        status: 'not ready',
        checks: { queue: 'queue: readiness check timed out after 100 ms', sql: 'ok' },
      });
    } finally {
      await server.stop();
    }
  });
});
