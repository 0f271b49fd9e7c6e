/**
 * GET /models on an ops server: what a live ModelRegistry serves per model config (version, when it
 * was loaded, the latest rejected change), and 503 until the orchestrator has started.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ModelStatusAnswer, registerModelStatusRoute } from '../../../src/orchestrator/api/index.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { blendOnly, testRegistry } from '../../support/orchestrator.js';
import { eventually } from '../../support/servers.js';

test('GET /models: each model config served, when it was loaded, and the change last rejected', async () => {
  const store = await createConfigStore({
    kind: 'file',
    dir: mkdtempSync(join(tmpdir(), 'lattice-model-status-')),
  });
  const registry = testRegistry(store);
  const server = new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', { level: 'silent' }),
    metrics: new Metrics(),
  });
  const route = registerModelStatusRoute(server.app);
  const base = `http://127.0.0.1:${await server.start()}`;
  const models = async () => {
    const response = await fetch(`${base}/models`);
    assert.equal(response.status, 200);
    return ((await response.json()) as ModelStatusAnswer).models;
  };
  try {
    const early = await fetch(`${base}/models`);
    assert.equal(early.status, 503, 'not started yet');
    assert.match(((await early.json()) as { error: { message: string } }).error.message, /not started/);

    const before = Date.now();
    await store.put('models/good', blendOnly('good'));
    await store.put('models/never_valid', blendOnly('never_valid', 'price +'));
    await registry.start();
    route.serve(() => registry.status());
    const [good, neverValid] = await models();
    assert.equal(good!.model_config_id, 'good');
    assert.ok(good!.version, 'the config version it serves');
    assert.ok(Date.parse(good!.loaded_at!) >= before - 1000, good!.loaded_at);
    assert.equal(good!.rejected, undefined);
    assert.equal(neverValid!.model_config_id, 'never_valid');
    assert.equal(neverValid!.version, undefined, 'no valid version was ever loaded');
    assert.equal(neverValid!.loaded_at, undefined);
    assert.match(neverValid!.rejected!.error, /compute_components\[0\]\.expression/);

    // A broken change is rejected; the version loaded before keeps serving, with its load time.
    await store.put('models/good', blendOnly('good', 'price *'));
    await eventually(
      async () => (await models())[0]!.rejected !== undefined,
      5000,
      'the broken change to be rejected',
    );
    const [afterBroken] = await models();
    assert.equal(afterBroken!.version, good!.version);
    assert.equal(afterBroken!.loaded_at, good!.loaded_at);
    assert.notEqual(afterBroken!.rejected!.version, good!.version);
    assert.ok(Date.parse(afterBroken!.rejected!.at) >= Date.parse(good!.loaded_at!));

    // A valid change is loaded: a new version and load time, and nothing rejected any more.
    await store.put('models/good', blendOnly('good', 'price 2 *'));
    await eventually(
      async () => (await models())[0]!.rejected === undefined,
      5000,
      'the fixed change to be loaded',
    );
    const [reloaded] = await models();
    assert.notEqual(reloaded!.version, good!.version);
    assert.ok(Date.parse(reloaded!.loaded_at!) >= Date.parse(good!.loaded_at!));
  } finally {
    await registry.stop();
    await server.stop();
    await store.close();
  }
});
