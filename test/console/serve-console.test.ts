import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import Fastify from 'fastify';
import { registerConsole, registerVssAdminProxy } from '../../src/console/index.js';
import { ApiAuth, HttpServer } from '../../src/platform/http/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';

const TOKEN = 'caller-token-of-ci-0123456789';
const ADMIN_KEYS = ['first-admin-key-0123456789', 'second-admin-key-0123456789'];
const PARTS = { orchestrator: true, vss: { admin: true, serving: false }, reference: false };

/** A built console of two files, as scripts/build-console.mjs lays it out. */
function builtConsole(): string {
  const root = mkdtempSync(join(tmpdir(), 'lattice-console-root-'));
  mkdirSync(join(root, 'assets'));
  mkdirSync(join(root, 'docs'));
  writeFileSync(join(root, 'index.html'), '<!doctype html><title>Lattice console</title>');
  writeFileSync(join(root, 'assets', 'app.js'), 'console.log(1)');
  writeFileSync(join(root, 'docs', 'index.html'), '<!doctype html><title>Swagger UI</title>');
  return root;
}

async function opsServer(options: { root: string; adminKeys?: string[] }) {
  const server = await HttpServer.create({
    name: 'test-ops',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    tls: false,
    apiAuth: new ApiAuth({ callerTokens: { ci: TOKEN }, adminApiKeys: options.adminKeys ?? ADMIN_KEYS }),
    openapi: { title: 'Test ops API' },
  });
  await registerConsole(server.app, { parts: PARTS, root: options.root });
  // A route another part adds after the server was created is in the document too.
  server.app.get('/api/v1/late', { schema: { summary: 'added late' } }, async () => ({ late: true }));
  return server;
}

describe('the console on an ops server', () => {
  let server: HttpServer;
  let base = '';
  before(async () => {
    server = await opsServer({ root: builtConsole() });
    base = `http://127.0.0.1:${await server.start()}`;
  });
  after(() => server.stop());
  const auth = { authorization: `Bearer ${TOKEN}` };

  test('serves the pages at / and Swagger UI at /docs without a key, and 404s what it does not have', async () => {
    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await page.text(), /Lattice console/);
    assert.equal((await fetch(`${base}/assets/app.js`)).status, 200);
    assert.match(await (await fetch(`${base}/docs`)).text(), /Swagger UI/);
    const missing = await fetch(`${base}/assets/missing.js`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
  });

  test('GET /api/v1/parts says what the process runs, behind the API auth', async () => {
    assert.equal((await fetch(`${base}/api/v1/parts`)).status, 401);
    assert.deepEqual(await (await fetch(`${base}/api/v1/parts`, { headers: auth })).json(), PARTS);
  });

  test('GET /openapi.json documents the server’s routes, those added after it was created included', async () => {
    const document = (await (await fetch(`${base}/openapi.json`)).json()) as {
      openapi: string;
      info: { title: string };
      paths: Record<string, unknown>;
    };
    assert.equal(document.openapi, '3.1.0');
    assert.equal(document.info.title, 'Test ops API');
    for (const path of ['/healthz', '/api/v1/session', '/api/v1/parts', '/api/v1/late']) {
      assert.ok(path in document.paths, `${path} in ${Object.keys(document.paths).join(', ')}`);
    }
    assert.ok(!('/' in document.paths), 'the static files are not API routes');
  });

  test('without a built console, / says how to build it and the APIs still answer', async () => {
    const bare = await opsServer({ root: join(tmpdir(), 'no-such-console-build') });
    const bareBase = `http://127.0.0.1:${await bare.start()}`;
    try {
      const answer = await fetch(`${bareBase}/`);
      assert.equal(answer.status, 503);
      assert.match(((await answer.json()) as { error: { message: string } }).error.message, /npm run build/);
      assert.equal((await fetch(`${bareBase}/api/v1/parts`, { headers: auth })).status, 200);
    } finally {
      await bare.stop();
    }
  });
});

describe('the vss admin proxy', () => {
  // The admin API's HTTP side as the proxy sees it: it records what arrives and answers like the API.
  const admin = Fastify();
  const seen: { method: string; url: string; authorization?: string; body: unknown; idempotency?: string }[] =
    [];
  admin.all('/*', async (request, reply) => {
    seen.push({
      method: request.method,
      url: request.url,
      body: request.body,
      ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
      ...(typeof request.headers['idempotency-key'] === 'string'
        ? { idempotency: request.headers['idempotency-key'] }
        : {}),
    });
    if (request.url.startsWith('/models/none')) {
      return reply.status(404).send({ error: { code: 'NOT_FOUND', message: 'model none does not exist' } });
    }
    return reply.status(request.method === 'POST' ? 202 : 200).send({ ok: true });
  });
  let server: HttpServer;
  let base = '';
  let serve: (url: string) => void;
  before(async () => {
    server = await opsServer({ root: builtConsole() });
    ({ serve } = registerVssAdminProxy(server.app, { apiKeys: ADMIN_KEYS }));
    base = `http://127.0.0.1:${await server.start()}`;
  });
  after(async () => {
    await server.stop();
    await admin.close();
  });

  test('answers 503 until the admin API runs, then forwards path, query, body and status', async () => {
    const early = await fetch(`${base}/api/v1/vss-admin/models`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(early.status, 503);
    await admin.listen({ host: '127.0.0.1', port: 0 });
    serve(`http://127.0.0.1:${(admin.server.address() as { port: number }).port}/`);

    const listed = await fetch(`${base}/api/v1/vss-admin/models?limit=2`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(listed.status, 200);
    assert.deepEqual(await listed.json(), { ok: true });
    const posted = await fetch(`${base}/api/v1/vss-admin/reset-model`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'idempotency-key': 'k1',
      },
      body: JSON.stringify({ entity: 'catalog', model_name: 'products' }),
    });
    assert.equal(posted.status, 202);
    const missing = await fetch(`${base}/api/v1/vss-admin/models/none/x`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(missing.status, 404);
    assert.equal(
      ((await missing.json()) as { error: { message: string } }).error.message,
      'model none does not exist',
    );
    assert.deepEqual(seen.slice(0, 2), [
      { method: 'GET', url: '/models?limit=2', body: undefined, authorization: `Bearer ${ADMIN_KEYS[0]}` },
      {
        method: 'POST',
        url: '/reset-model',
        body: { entity: 'catalog', model_name: 'products' },
        authorization: `Bearer ${ADMIN_KEYS[0]}`,
        idempotency: 'k1',
      },
    ]);
  });

  test('the OpenAPI document with the proxy and the console routes is valid OpenAPI 3.1', async () => {
    const document = await (await fetch(`${base}/openapi.json`)).json();
    await SwaggerParser.validate(structuredClone(document) as never);
    assert.ok('/api/v1/vss-admin/{*}' in (document as { paths: object }).paths);
  });

  test('sends the caller’s own admin key when it signed in with one, and refuses a caller without a key', async () => {
    seen.length = 0;
    const answer = await fetch(`${base}/api/v1/vss-admin/models`, {
      headers: { authorization: `Bearer ${ADMIN_KEYS[1]}` },
    });
    assert.equal(answer.status, 200);
    assert.equal(seen[0]?.authorization, `Bearer ${ADMIN_KEYS[1]}`);
    assert.equal((await fetch(`${base}/api/v1/vss-admin/models`)).status, 401);
    assert.equal(seen.length, 1, 'the refused call never reached the admin API');
  });
});
