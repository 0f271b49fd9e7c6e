import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { type ConfigStore, createConfigStore } from '../../../src/platform/config-store/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { blendOnly, fp32, fp64, schema, testRegistry } from '../../support/orchestrator.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';

const etcdUrl = await realServer('etcd');

const request: PredictRequest = {
  modelConfigId: 'reload_m',
  trackingId: 't',
  contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(0) }],
  targetInputSchema: [schema('price', DataType.FP32)],
  targets: Array.from({ length: 20 }, (_, i) => ({ id: `i${i}`, featureValues: [fp32(i + 1)] })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
};

/**
 * Adds, changes, breaks and reverts a model while workers execute requests non-stop: every change
 * becomes visible, the broken version never serves, and no execution fails once the model exists. How
 * soon a change is visible (orchestrator.md: within a second) depends on the machine's load, so the
 * deadlines here only catch a change that never shows.
 */
async function reloadUnderLoad(store: ConfigStore): Promise<void> {
  const registry = testRegistry(store);
  await registry.start();
  const engine = new InferenceEngine(registry);
  const key = 'models/reload_m';
  let stop = false;
  let executions = 0;
  const failures: string[] = [];
  const seenMultipliers = new Set<number>();
  let latest = 0;
  const worker = async () => {
    while (!stop) {
      if (!registry.get('reload_m')) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      try {
        const { context } = await engine.execute('reload_m', { pattern: 'point', request }, 't');
        const scores = context.matrix.byteColumn('score').float64()!;
        const multiplier = scores[0]!;
        // Every row of one execution comes from the same snapshot: score = price × multiplier.
        for (let i = 0; i < scores.length; i++) assert.equal(scores[i], (i + 1) * multiplier);
        seenMultipliers.add(multiplier);
        latest = multiplier;
        executions++;
      } catch (err) {
        failures.push(String(err));
      }
      await new Promise((r) => setImmediate(r));
    }
  };
  const workers = Array.from({ length: 4 }, worker);

  const visible = (multiplier: number, what: string) =>
    eventually(() => latest === multiplier, 10_000, `${what} to serve (multiplier ${multiplier})`);
  try {
    await store.put(key, blendOnly('reload_m', 'price 1 *'));
    await visible(1, 'the added model');
    await store.put(key, blendOnly('reload_m', 'price 2 *'));
    await visible(2, 'the changed model');
    await store.put(key, blendOnly('reload_m', 'price *')); // invalid expression
    await eventually(
      () => registry.status().some((s) => s.id === 'reload_m' && s.lastError !== undefined),
      10_000,
      'the broken change to be rejected',
    );
    const before = executions;
    await eventually(() => executions >= before + 20, 10_000, 'executions on the previous version');
    assert.equal(latest, 2, 'the previous version keeps serving');
    await store.put(key, blendOnly('reload_m', 'price 1 *'));
    await visible(1, 'the reverted model');
  } finally {
    stop = true;
    await Promise.all(workers);
    await store.delete(key).catch(() => {});
    await registry.stop();
    await store.close();
  }
  assert.deepEqual(failures, []);
  assert.deepEqual([...seenMultipliers].sort(), [1, 2]);
  assert.ok(executions > 50, `only ${executions} executions ran`);
}

describe('model registry live reload under load', () => {
  test('file config store', async () => {
    await reloadUnderLoad(
      await createConfigStore({ kind: 'file', dir: mkdtempSync(join(tmpdir(), 'lattice-reload-')) }),
    );
  });

  test('etcd config store', { skip: etcdUrl ? false : 'etcd not reachable' }, async () => {
    await reloadUnderLoad(
      await createConfigStore({ kind: 'etcd', endpoints: [etcdUrl!], prefix: `/${uniqueName('reload')}/` }),
    );
  });

  test('a deleted model is gone; a model whose document never validated is never served', async () => {
    const store = await createConfigStore({
      kind: 'file',
      dir: mkdtempSync(join(tmpdir(), 'lattice-reload-')),
    });
    const metrics = new Metrics();
    const registry = testRegistry(store, undefined, metrics);
    await store.put('models/bad', blendOnly('bad', 'price +'));
    await store.put('models/good', blendOnly('good'));
    await registry.start();
    try {
      assert.equal(registry.get('bad'), undefined);
      assert.match(
        registry.status().find((s) => s.id === 'bad')?.lastError ?? '',
        /compute_components\[0\]\.expression/,
      );
      assert.ok(registry.get('good'));
      const { body } = await metrics.scrape();
      assert.match(body, /orchestrator_model_config_reloads_total\{model="bad",outcome="rejected"\} 1/);
      assert.match(body, /orchestrator_model_config_reloads_total\{model="good",outcome="applied"\} 1/);
      await store.delete('models/good');
      await eventually(() => registry.get('good') === undefined, 10_000, 'the deleted model to disappear');
    } finally {
      await registry.stop();
      await store.close();
    }
  });
});
