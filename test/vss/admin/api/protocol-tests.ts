/**
 * What every route shares: the error body for malformed JSON, wrong content types, oversized and
 * deeply nested bodies, unknown routes and server faults (logged, never echoed); /healthz, /readyz
 * and /metrics; and the request metrics the 5xx alert reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN_RESPONSES_METRIC } from '../../../../src/vss/admin/api/index.js';
import { assertError, bodies, type Harness, openHarness, unique } from './api-harness.js';

export function protocolTests(get: () => Harness): void {
  test('malformed JSON, wrong content type and an empty body are 400 naming body or Content-Type', async () => {
    const h = get();
    const json = { 'content-type': 'application/json' };
    assertError(
      await h.call({ url: '/register-store', body: '{"store_id": 1,', headers: json }),
      400,
      'INVALID_ARGUMENT',
      'body',
    );
    assertError(
      await h.call({ url: '/register-store', body: '{"__proto__": {"x": 1}}', headers: json }),
      400,
      'INVALID_ARGUMENT',
      'body',
    );
    assertError(
      await h.call({ url: '/register-store', body: 'store_id=1', headers: { 'content-type': 'text/plain' } }),
      400,
      'INVALID_ARGUMENT',
      'Content-Type',
    );
    assertError(
      await h.call({
        url: '/register-store',
        body: 'a=1',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      400,
      'INVALID_ARGUMENT',
      'Content-Type',
    );
    assertError(
      await h.call({ method: 'POST', url: '/register-store', headers: json }),
      400,
      'INVALID_ARGUMENT',
      'body',
    );
    assertError(await h.call({ method: 'POST', url: '/register-store' }), 400, 'INVALID_ARGUMENT', 'body');
    assertError(await h.call({ url: '/register-store', body: [1, 2] }), 400, 'INVALID_ARGUMENT', 'body');
    assertError(
      await h.call({ url: '/register-store', body: 'null', headers: json }),
      400,
      'INVALID_ARGUMENT',
      'body',
    );
  });

  test('a body over 1 MiB is 413; a deeply nested one is 400 naming its field', async () => {
    const h = get();
    const b = bodies(unique());
    const huge = { ...b.store, db_conf_id: 'x'.repeat(1024 * 1024) };
    assertError(await h.call({ url: '/register-store', body: huge }), 413, 'RESOURCE_EXHAUSTED', 'body');
    const deep = `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`;
    const body = `{"entity":"e","model_name":"m1","variant":"v","vss_filter":{},"vectordb_type":"EMBEDDED","job_frequency":"FREQ_1D","vectordb_config":${deep}}`;
    const answer = await h.call({
      url: '/register-variant',
      body,
      headers: { 'content-type': 'application/json' },
    });
    assertError(answer, 400, 'INVALID_ARGUMENT', 'vectordb_config');
    const asString = await h.call({
      url: '/register-variant',
      body: { ...b.variant, vectordb_config: deep },
    });
    assert.equal(asString.status, 400, asString.body);
  });

  test('messages echo at most a short prefix of the input', async () => {
    const h = get();
    const b = bodies(unique());
    const long = `${'A'.repeat(100)}; DROP TABLE vss_models`;
    const answer = await h.call({
      url: '/register-store',
      body: { ...b.store, embeddings_table: long.slice(0, 63) },
    });
    assertError(answer, 400, 'INVALID_ARGUMENT', 'embeddings_table');
    const unknownKey = await h.call({ url: '/register-store', body: { ...b.store, ['k'.repeat(5000)]: 1 } });
    assertError(unknownKey, 400, 'INVALID_ARGUMENT');
    assert.ok(unknownKey.body.length < 600, unknownKey.body);
    const route = await h.call({ url: `/${'z'.repeat(5000)}` });
    assertError(route, 404, 'NOT_FOUND');
    assert.ok(route.body.length < 400, route.body);
  });

  test('a fault of the service is a 5xx with a generic message; the cause is logged, not sent', async () => {
    const h = get();
    const b = bodies(unique());
    for (const [url, body] of [
      ['/register-store', b.store],
      ['/register-model', b.model],
    ] as const) {
      assert.equal((await h.call({ url, body })).status, 201);
    }
    h.lifecycle.failNext = new Error('secret connection string postgres://admin:hunter2@db');
    const answer = await h.call({ url: '/register-variant', body: b.variant });
    assertError(answer, 500, 'INTERNAL');
    assert.equal(answer.error.message, 'internal error');
    assert.ok(!answer.body.includes('hunter2'));
    assert.ok(h.logs.some((line) => line.includes('hunter2') && line.includes('/register-variant')));
  });

  test('/healthz and /readyz answer; /readyz is 503 naming the failing check', async () => {
    const h = get();
    const health = await h.call({ url: '/healthz' });
    assert.deepEqual(health.json, { status: 'ok', service: 'vss-admin' });
    const ready = await h.call({ url: '/readyz' });
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.json, { status: 'ready', checks: { sql: 'ok' } });
    const failing = await openHarness(
      h.sql,
      {
        readiness: {
          queue: async () => {
            throw new Error('queue is down');
          },
        },
      },
      h.store,
    );
    try {
      const notReady = await failing.call({ url: '/readyz' });
      assert.equal(notReady.status, 503);
      assert.deepEqual(notReady.json, { status: 'not ready', checks: { sql: 'ok', queue: 'queue is down' } });
    } finally {
      await failing.close();
    }
  });

  test('/metrics serves the Prometheus text with responses by route, method and status class', async () => {
    const h = get();
    await h.call({ url: '/models' });
    await h.call({ url: '/operations/missing' });
    const answer = await h.call({ url: '/metrics' });
    assert.equal(answer.status, 200);
    assert.match(String(answer.headers['content-type']), /^text\/plain/);
    assert.match(
      answer.body,
      new RegExp(`${ADMIN_RESPONSES_METRIC}\\{route="/models",method="GET",status_class="2xx"\\} \\d+`),
    );
    assert.match(
      answer.body,
      new RegExp(
        `${ADMIN_RESPONSES_METRIC}\\{route="/operations/:id",method="GET",status_class="4xx"\\} \\d+`,
      ),
    );
    assert.match(
      answer.body,
      /vss_admin_responses_total\{route="\/register-variant",method="POST",status_class="5xx"\} \d+/,
    );
    assert.match(answer.body, /vss_admin_request_seconds_count\{route="\/models",method="GET"\} \d+/);
  });

  test('GET /docs serves the OpenAPI document as JSON, /docs/openapi.yaml as YAML', async () => {
    const h = get();
    const json = await h.app.inject({ method: 'GET', url: '/docs' });
    assert.equal(json.statusCode, 200);
    assert.equal(JSON.parse(json.body).openapi, '3.1.0');
    const yaml = await h.app.inject({ method: 'GET', url: '/docs/openapi.yaml' });
    assert.equal(yaml.statusCode, 200);
    assert.match(String(yaml.headers['content-type']), /yaml/);
    assert.match(yaml.body, /^openapi: 3\.1\.0/m);
  });
}
