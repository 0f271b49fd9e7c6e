/**
 * The console's model config API (/api/v1/models…) on an ops server in front of the real stack:
 * the reference feature store, model server and compute server, and the orchestrator serving the
 * catalog ranker from a file config store. Changes go through the API with an authenticated caller,
 * and what the running registry serves is checked after each.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata } from '@grpc/grpc-js';
import { CATALOG_RANKER_ID } from '../../../examples/catalog-ranker.js';
import {
  PredictClient,
  type PredictRequest,
  type PredictResponse,
} from '../../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../../src/gen/orchestrator/v1/types.js';
import { OrchestratorClient } from '../../../src/orchestrator/client.js';
import {
  EXAMPLE_IDS_HEADER,
  type PredictRequestJson,
  registerModelConsoleRoutes,
} from '../../../src/orchestrator/console/index.js';
import { ApiAuth, HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { eventually } from '../../support/servers.js';
import { type Stack, startStack } from '../../support/stack.js';

const ID = CATALOG_RANKER_ID;
let stack: Stack;
let server: HttpServer;
let base: string;

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are checked field by field by the tests.
type Json = Record<string, any>;

async function api(method: string, path: string, body?: unknown, key = 'alice-key') {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

const detail = async (id = ID) => (await api('GET', `/api/v1/models/${id}`)).body;
const revisions = async (id = ID) =>
  (await api('GET', `/api/v1/models/${id}/revisions`)).body.revisions as Json[];

before(async () => {
  stack = await startStack({ local: true, users: 10, catalogs: 30 });
  server = new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
    apiAuth: new ApiAuth({ callerTokens: { alice: 'alice-key', bob: 'bob-key' } }),
  });
  registerModelConsoleRoutes(server.app).serve(stack.orchestrator.console);
  base = `http://127.0.0.1:${await server.start()}`;
});

after(async () => {
  await server?.stop();
  await stack?.stop();
});

test('503 until the orchestrator serves the routes', async () => {
  const early = new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
  });
  registerModelConsoleRoutes(early.app);
  const url = `http://127.0.0.1:${await early.start()}/api/v1/models`;
  try {
    const response = await fetch(url);
    assert.equal(response.status, 503);
    assert.equal(((await response.json()) as Json).error.code, 'UNAVAILABLE');
  } finally {
    await early.stop();
  }
});

describe('model config API', () => {
  test('the list shows the seeded config live, with the document written before as its first revision', async () => {
    const unauthenticated = await api('GET', '/api/v1/models', undefined, 'wrong');
    assert.equal(unauthenticated.status, 401);
    const { status, body } = await api('GET', '/api/v1/models');
    assert.equal(status, 200);
    const entry = body.models.find((m: Json) => m.model_config_id === ID);
    assert.equal(entry.state, 'live');
    assert.equal(entry.version, stack.orchestrator.registry.get(ID)!.version);
    assert.ok(entry.loaded_at);
    assert.equal(entry.revisions, 1);
    const [first] = await revisions();
    assert.equal(first!.action, 'external', 'written to the store before the API saw it');
    assert.deepEqual(first!.document, (await detail()).document);
  });

  test('an invalid document is refused with every problem at its JSON path; nothing is written', async () => {
    const before = await detail();
    const broken = structuredClone(before.document);
    broken.feature_components[0].fs_keys[0].col = 'catalog:nowhere:id';
    broken.model_serving_components[0].endpoints[0].percentage = 50;
    const validation = await api('POST', '/api/v1/models/validate', { document: broken });
    assert.equal(validation.status, 200);
    assert.equal(validation.body.valid, false);
    const paths = validation.body.problems.map((p: Json) => p.path).sort();
    assert.deepEqual(paths, [
      'feature_components[0].fs_keys[0].col',
      'model_serving_components[0].endpoints',
    ]);

    const put = await api('PUT', `/api/v1/models/${ID}`, { document: broken, comment: 'oops' });
    assert.equal(put.status, 400);
    assert.equal(put.body.error.code, 'INVALID_ARGUMENT');
    assert.deepEqual(put.body.error.problems.map((p: Json) => p.path).sort(), paths);
    const after = await detail();
    assert.equal(after.state, 'live');
    assert.equal(after.version, before.version, 'the old revision still serves');
    assert.deepEqual(after.document, before.document, 'nothing written');
    assert.equal(after.revision, before.revision, 'nothing recorded');
    assert.equal(stack.orchestrator.registry.get(ID)!.version, before.version);
  });

  test('a valid change is recorded with author and comment, and served; a stale expected_revision is refused', async () => {
    const before = await detail();
    const changed = structuredClone(before.document);
    changed.feature_components[0].deadline_ms = 321;
    const put = await api('PUT', `/api/v1/models/${ID}`, {
      document: changed,
      comment: 'slower feature store',
      expected_revision: before.revision,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.revision, before.revision + 1);
    assert.equal(put.body.state, 'live');
    const served = stack.orchestrator.registry.get(ID)!;
    assert.equal(served.version, put.body.version, 'the registry serves the written version');
    assert.equal(served.model.config.feature_components[0]!.deadline_ms, 321);
    const [newest] = await revisions();
    assert.equal(newest!.revision, put.body.revision);
    assert.equal(newest!.author, 'alice');
    assert.equal(newest!.comment, 'slower feature store');
    assert.equal(newest!.action, 'apply');
    assert.deepEqual(newest!.document, changed);
    const now = await detail();
    assert.deepEqual(now.live_document, changed);

    const stale = await api(
      'PUT',
      `/api/v1/models/${ID}`,
      { document: before.document, comment: 'late', expected_revision: before.revision },
      'bob-key',
    );
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'ABORTED');
    assert.equal((await detail()).revision, put.body.revision);
  });

  test('a rollback writes an earlier revision as a new one', async () => {
    const history = await revisions();
    const first = history[history.length - 1]!;
    const rollback = await api('POST', `/api/v1/models/${ID}/rollback`, {
      revision: first.revision,
      comment: 'back to the seed',
    });
    assert.equal(rollback.status, 200, JSON.stringify(rollback.body));
    assert.equal(rollback.body.revision, history[0]!.revision + 1);
    const [newest] = await revisions();
    assert.equal(newest!.action, 'rollback');
    assert.equal(newest!.author, 'alice');
    assert.deepEqual(newest!.document, first.document);
    assert.deepEqual((await detail()).live_document, first.document);
    assert.equal(stack.orchestrator.registry.get(ID)!.model.config.feature_components[0]!.deadline_ms, 200);
    const missing = await api('POST', `/api/v1/models/${ID}/rollback`, { revision: 999, comment: '' });
    assert.equal(missing.status, 404);
  });

  test('clone under a new id, then delete the clone: it stops serving and its history stays', async () => {
    const clone = await api('POST', `/api/v1/models/${ID}/clone`, {
      new_id: 'ranker_copy',
      comment: 'try a copy',
    });
    assert.equal(clone.status, 200, JSON.stringify(clone.body));
    assert.equal(clone.body.revision, 1);
    assert.equal(clone.body.state, 'live');
    assert.equal(stack.orchestrator.registry.get('ranker_copy')!.model.config.model_config_id, 'ranker_copy');
    const again = await api('POST', `/api/v1/models/${ID}/clone`, { new_id: 'ranker_copy', comment: '' });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'ALREADY_EXISTS');

    const removed = await api('DELETE', '/api/v1/models/ranker_copy?comment=done');
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.equal(removed.body.state, 'removed');
    assert.equal(stack.orchestrator.registry.get('ranker_copy'), undefined);
    const history = await revisions('ranker_copy');
    assert.deepEqual(
      history.map((r) => [r.action, r.comment, r.document === null]),
      [
        ['delete', 'done', true],
        ['clone', 'try a copy', false],
      ],
    );
    const listed = (await api('GET', '/api/v1/models')).body.models.find(
      (m: Json) => m.model_config_id === 'ranker_copy',
    );
    assert.equal(listed.state, 'removed');
  });

  test('a change written to the store directly is recorded as external', async () => {
    const current = await detail();
    const changed = structuredClone(current.document);
    changed.feature_components[1].deadline_ms = 222;
    await stack.config.put(`models/${ID}`, changed);
    await eventually(
      async () => (await revisions())[0]!.action === 'external',
      5000,
      'the outside change to be recorded',
    );
    const [newest] = await revisions();
    assert.deepEqual(newest!.document, changed);
    assert.equal(newest!.revision, current.revision + 1);
  });

  test('the DAG of the demo config: nodes by kind with their columns, deadlines and endpoints; edges', async () => {
    const { status, body } = await api('GET', `/api/v1/models/${ID}/dag`);
    assert.equal(status, 200);
    const nodes = new Map<string, Json>(body.nodes.map((n: Json) => [n.id, n]));
    assert.deepEqual([...nodes.values()].map((n) => `${n.id}:${n.kind}`).sort(), [
      'blend:compute',
      'catalog_features:feature',
      'category_features:feature',
      'feature_init:feature_init',
      'ranker:model',
      'slate_ranker:model',
      'user_features:feature',
      'user_x_category:feature',
    ]);
    const category = nodes.get('category_features')!;
    assert.deepEqual(category.inputs, ['catalog:attributes:category_id']);
    assert.deepEqual(category.outputs, ['category:stats:popularity']);
    assert.equal(category.deadline_ms, 200);
    assert.equal(category.entity, 'category');
    const ranker = nodes.get('ranker')!;
    assert.equal(ranker.endpoint, stack.targets.modelServer);
    assert.ok(ranker.inputs.includes('user:profile:embedding'));
    const init = nodes.get('feature_init')!;
    assert.deepEqual(init.outputs.sort(), ['catalog_id', 'user_id']);
    const edges = new Set(body.edges.map((e: Json) => `${e.from}>${e.to}`));
    for (const edge of [
      'feature_init>catalog_features',
      'feature_init>user_features',
      'catalog_features>category_features',
      'ranker>blend',
      'category_features>blend',
    ])
      assert.ok(edges.has(edge), edge);
    assert.equal(body.edges.length, 14);
    assert.equal((await api('GET', '/api/v1/models/nothing/dag')).status, 404);
  });

  test('stats: request and error rates and latencies per model and component after some predicts', async () => {
    const client = new OrchestratorClient(stack.address);
    try {
      for (let i = 0; i < 5; i++) {
        await client.pointWise({
          modelConfigId: ID,
          context: { user_id: 'u1' },
          targets: [{ id: 'c1' }, { id: 'c2' }],
        });
      }
      // Without the user_id the request is refused: an error of the model.
      await assert.rejects(client.pointWise({ modelConfigId: ID, targets: [{ id: 'c1' }] }));
    } finally {
      client.close();
    }
    const { status, body } = await api('GET', '/api/v1/models/stats');
    assert.equal(status, 200);
    assert.ok(body.window_s >= 1 && body.window_s <= 60);
    const model = body.models.find((m: Json) => m.model_config_id === ID);
    assert.equal(Math.round(model.requests_per_s * body.window_s), 6);
    assert.equal(Math.round(model.errors_per_s * body.window_s), 1);
    assert.ok(Math.abs(model.error_rate - 1 / 6) < 1e-9);
    assert.ok(model.p50_ms > 0 && model.p99_ms >= model.p50_ms);
    const ranker = model.components.find((c: Json) => c.name === 'ranker');
    assert.equal(ranker.kind, 'model');
    assert.equal(Math.round(ranker.requests_per_s * body.window_s), 5);
    assert.equal(ranker.error_rate, 0);
    assert.ok(ranker.p50_ms > 0);
    assert.deepEqual(
      model.components.map((c: Json) => c.name).sort(),
      [...stack.orchestrator.registry.get(ID)!.model.components.keys()].sort(),
    );
  });

  for (const pattern of ['pointwise', 'pairwise', 'slatewise'] as const) {
    test(`an example ${pattern} request from the feature schema, with ids from the feature store, is accepted by Predict`, async () => {
      const { status, headers, body } = await api('GET', `/api/v1/models/${ID}/example?pattern=${pattern}`);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(headers.get(EXAMPLE_IDS_HEADER), 'catalog_id=feature store; user_id=feature store');
      const example = body as PredictRequestJson;
      assert.equal(example.modelConfigId, ID);
      for (const target of example.targets) assert.match(target.id, /^c\d+$/);
      const user = example.contextFeatures!.find((f) => f.name === 'user_id')!;
      assert.equal(user.dataType, 'DATA_TYPE_STRING');
      assert.match(Buffer.from(user.value, 'base64').toString(), /^u\d+$/);
      const response = await predict(pattern, fromJson(example));
      const rows =
        pattern === 'pointwise'
          ? response.targetScores
          : pattern === 'pairwise'
            ? response.pairScores
            : response.slateScores;
      assert.ok(rows.length > 0);
      for (const row of rows) assert.equal(row.error, '', 'every row scored, no entity missing');
    });
  }
});

/** The proto3 JSON mapping read back into the message, as a JSON-mapping parser would. */
function fromJson(json: PredictRequestJson): PredictRequest {
  const type = (name: string) => WireType[name as keyof typeof WireType] as WireType;
  const bytes = (b64: string) => Buffer.from(b64, 'base64');
  const schema = (f: { name: string; dataType: string; vectorDim?: number }) => ({
    name: f.name,
    dataType: type(f.dataType),
    vectorDim: f.vectorDim ?? 0,
  });
  return {
    modelConfigId: json.modelConfigId,
    trackingId: '',
    contextFeatures: (json.contextFeatures ?? []).map((f) => ({ ...schema(f), value: bytes(f.value) })),
    targetInputSchema: (json.targetInputSchema ?? []).map(schema),
    targets: json.targets.map((t) => ({ id: t.id, featureValues: (t.featureValues ?? []).map(bytes) })),
    pairInputSchema: (json.pairInputSchema ?? []).map(schema),
    pairs: (json.pairs ?? []).map((p) => ({
      firstTargetIndex: p.firstTargetIndex ?? 0,
      secondTargetIndex: p.secondTargetIndex ?? 0,
      featureValues: (p.featureValues ?? []).map(bytes),
    })),
    slateInputSchema: (json.slateInputSchema ?? []).map(schema),
    slates: (json.slates ?? []).map((s) => ({
      slateTargetIndices: s.slateTargetIndices,
      featureValues: (s.featureValues ?? []).map(bytes),
    })),
    returnTargetScores: json.returnTargetScores ?? false,
  };
}

function predict(
  pattern: 'pointwise' | 'pairwise' | 'slatewise',
  request: PredictRequest,
): Promise<PredictResponse> {
  const client = new PredictClient(stack.address, credentials.createInsecure());
  const method = (
    { pointwise: 'inferPointWise', pairwise: 'inferPairWise', slatewise: 'inferSlateWise' } as const
  )[pattern];
  return new Promise<PredictResponse>((resolve, reject) =>
    client[method](request, new Metadata(), { deadline: Date.now() + 5000 }, (err, response) =>
      err ? reject(err) : resolve(response),
    ),
  ).finally(() => client.close());
}
