/**
 * The OpenAPI document the admin API serves at /docs: valid OpenAPI 3.1 by a real validator, the
 * YAML form the same document, and the contract it states: every POST documents its body and the
 * error answers, every route its success, the probes and scrape open, the rest behind the API key.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { type Harness, openHarness } from './api-harness.js';

let sql: SqlClient | undefined;
let harness: Harness | undefined;
before(async () => {
  sql = await createSqlClient({ kind: 'pglite' });
  harness = await openHarness(sql);
});
after(async () => {
  await harness?.close();
  await sql?.close();
});

async function documentJson(): Promise<Record<string, unknown>> {
  const answer = await harness!.app.inject({ method: 'GET', url: '/docs' });
  assert.equal(answer.statusCode, 200);
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  return JSON.parse(answer.body);
}

type Operation = {
  requestBody?: { content?: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  security?: unknown[];
  parameters?: Array<{ in: string; name: string }>;
};

test('the document validates as OpenAPI 3.1', async () => {
  const document = await documentJson();
  assert.equal(document.openapi, '3.1.0');
  // The validator dereferences in place: give it a copy.
  await SwaggerParser.validate(structuredClone(document) as never);
});

test('/docs/openapi.yaml is the same document', async () => {
  const yaml = await harness!.app.inject({ method: 'GET', url: '/docs/openapi.yaml' });
  assert.equal(yaml.statusCode, 200);
  assert.deepEqual(parseYaml(yaml.body), await documentJson());
});

test('every route of vss.md (and update-variant, issue 38) is documented with its success and error answers', async () => {
  const raw = await documentJson();
  const document = raw as { paths: Record<string, Record<string, Operation>> };
  const routes = Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
  );
  assert.deepEqual(routes.sort(), [
    'GET /healthz',
    'GET /metrics',
    'GET /models',
    'GET /models/{entity}/{model}',
    'GET /operations/{id}',
    'GET /readyz',
    'GET /stores',
    'POST /operations/{id}/retry',
    'POST /promote-model',
    'POST /promote-variant',
    'POST /register-model',
    'POST /register-store',
    'POST /register-variant',
    'POST /reset-model',
    'POST /rollback-model',
    'POST /trigger-model-machine',
    'POST /update-variant',
  ]);
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const name = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(operation.responses);
      assert.ok(
        statuses.some((s) => s.startsWith('2')),
        `${name} documents a success`,
      );
      const open = ['/healthz', '/readyz', '/metrics'].includes(path);
      assert.deepEqual(operation.security, open ? [] : undefined, `${name}: security`);
      if (open) continue;
      for (const status of ['400', '401', '404', '5XX']) {
        const schema = operation.responses[status]?.content?.['application/json']?.schema;
        assert.deepEqual(schema, { $ref: '#/components/schemas/ErrorBody' }, `${name} documents ${status}`);
      }
      if (method === 'post') {
        for (const status of ['409', '413'])
          assert.ok(operation.responses[status], `${name} documents ${status}`);
        if (!path.startsWith('/operations/')) {
          assert.ok(operation.requestBody?.content?.['application/json'], `${name} documents its body`);
        }
      }
    }
  }
  const security = (raw.components as { securitySchemes: Record<string, unknown> }).securitySchemes;
  assert.deepEqual(Object.keys(security), ['apiKey']);
});

test('JSON-holding fields are documented as an object or a JSON string of it', async () => {
  const document = (await documentJson()) as { paths: Record<string, Record<string, Operation>> };
  const body = document.paths['/register-model']?.post?.requestBody?.content?.['application/json'] as {
    schema: {
      properties: Record<string, { oneOf?: Array<{ type?: string }> }>;
      additionalProperties: boolean;
    };
  };
  assert.equal(body.schema.additionalProperties, false);
  assert.deepEqual(
    body.schema.properties.model_config?.oneOf?.map((branch) => branch.type),
    ['string', 'object'],
  );
});
