/**
 * The HTTP/JSON routes describe themselves to @fastify/swagger (the ops server's OpenAPI document):
 * the document with every route of `lattice up`'s two parts validates as OpenAPI 3.1 by a real
 * validator, and each operation states its body and answer as the proto messages in the proto3 JSON
 * mapping (JSON names, the proto comments as descriptions), the deadline headers, the orchestrator's
 * timings header and the error body.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import swagger from '@fastify/swagger';
import Fastify from 'fastify';
import { registerRpcRoutes } from '../../../src/cli/rpc-gateway.js';
import { loadSettings } from '../../../src/platform/settings/index.js';

type Schema = { properties?: Record<string, Schema>; description?: string; items?: Schema; type?: string };
type Operation = {
  summary?: string;
  description?: string;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  parameters?: Array<{ in: string; name: string }>;
};

test('the routes of both parts make a valid OpenAPI 3.1 document of the proto messages', async () => {
  const app = Fastify();
  await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'ops', version: '1' } } });
  const settings = loadSettings({ env: {}, overrides: { host: '127.0.0.1' } });
  const orchestrator = registerRpcRoutes(app, settings, 'orchestrator');
  const vss = registerRpcRoutes(app, settings, 'vss');
  await app.ready();
  try {
    const document = app.swagger() as unknown as { paths: Record<string, Record<string, Operation>> };
    await SwaggerParser.validate(structuredClone(document) as never);
    const expected = [
      '/api/v1/rpc/orchestrator.v1.Orchestrator/RetrieveModelScore',
      '/api/v1/rpc/orchestrator.v1.Predict/InferPairWise',
      '/api/v1/rpc/orchestrator.v1.Predict/InferPointWise',
      '/api/v1/rpc/orchestrator.v1.Predict/InferSlateWise',
      '/api/v1/rpc/vss.v1.SimilaritySearch/GetEmbeddings',
      '/api/v1/rpc/vss.v1.SimilaritySearch/ScoreCandidates',
      '/api/v1/rpc/vss.v1.SimilaritySearch/Search',
    ];
    assert.deepEqual(Object.keys(document.paths).sort(), expected);
    assert.deepEqual([...orchestrator.paths, ...vss.paths].sort(), expected);

    const predict = document.paths['/api/v1/rpc/orchestrator.v1.Predict/InferPointWise']!.post!;
    const body = predict.requestBody!.content!['application/json']!.schema!;
    assert.ok(body.description, 'the message comment');
    assert.ok(body.properties!.modelConfigId!.description, 'the field comment');
    assert.equal(body.properties!.targets!.type, 'array');
    assert.ok(body.properties!.targets!.items!.properties!.featureValues);
    const answer = predict.responses['200']!.content!['application/json']!.schema!;
    assert.ok(answer.properties!.targetScores);
    assert.ok(predict.responses['4XX'] ?? predict.responses['4xx'], 'the error body');
    assert.deepEqual(
      predict
        .parameters!.filter((p) => p.in === 'header')
        .map((p) => p.name)
        .sort(),
      ['grpc-timeout', 'x-lattice-deadline-ms', 'x-lattice-timings'],
    );
    assert.match(predict.description ?? '', /Response header X-Lattice-Timings: /, 'the timings answer');

    const search = document.paths['/api/v1/rpc/vss.v1.SimilaritySearch/Search']!.post!;
    const candidate =
      search.responses['200']!.content!['application/json']!.schema!.properties!.results!.items!.properties!
        .candidates!.items!;
    assert.equal(candidate.properties!.attributes!.type, 'object', 'a map is an object');
  } finally {
    await app.close();
  }
});
