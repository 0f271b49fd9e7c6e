import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import {
  createOrchestratorClients,
  type OrchestratorClients,
} from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { fp32, fp64, schema, testRegistry } from '../../support/orchestrator.js';
import { rejectsWith, sample, unusedTarget } from './grpc-fixtures.js';
import { FakeNumerix } from './numerix-fixture.js';

/** A model whose only component is a remote compute: score = numerix(compute_id)(price, bonus). */
function remoteBlend(target: string, computeId = 'blend', extra: Record<string, unknown> = {}) {
  return {
    model_config_id: 'remote_blend',
    target_id_column: 'item_id',
    component_dependency: { blend: [] },
    compute_components: [
      {
        name: 'blend',
        compute_id: computeId,
        target,
        score_mapping: { price: 'price', bonus: 'bonus' },
        output_column: 'score',
        data_type: 'FP64',
        deadline_ms: 2000,
        ...extra,
      },
    ],
    response: { columns: ['score'] },
  };
}

function request(prices: number[], bonus = 0.5): PredictRequest {
  return {
    modelConfigId: 'remote_blend',
    trackingId: 't',
    contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(bonus) }],
    targetInputSchema: [schema('price', DataType.FP32)],
    targets: prices.map((p, i) => ({ id: `item${i}`, featureValues: [fp32(p)] })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

describe('ComputeComponent in remote mode (compute_id + target) against a numerix server', () => {
  const numerix = new FakeNumerix();
  const metrics = new Metrics();
  let clients: OrchestratorClients;
  let registry: ReturnType<typeof testRegistry>;
  let engine: InferenceEngine;

  before(async () => {
    await numerix.start();
    clients = createOrchestratorClients({ metrics });
    registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-remote-compute-')) }),
      createComponentBuilder(clients),
      metrics,
    );
    engine = new InferenceEngine(registry);
  });
  after(async () => {
    clients.close();
    await numerix.server.stop();
  });

  test('sends the id column and the mapped columns, writes the scores into output_column', async () => {
    numerix.requests.length = 0;
    const snapshot = registry.build('remote_blend', '1', remoteBlend(numerix.target));
    const { context } = await engine.executeOn(
      snapshot,
      { pattern: 'point', request: request([1, 2.5, -4]) },
      't',
    );
    assert.deepEqual([...context.matrix.byteColumn('score').float64()!], [2.5, 5.5, -7.5]);
    for (let row = 0; row < 3; row++) assert.equal(context.matrix.rowError(row), '');
    const sent = numerix.requests[0]!;
    assert.equal(sent.computeId, 'blend');
    assert.deepEqual(sent.schema, ['item_id', 'price', 'bonus']);
    assert.equal(sent.dataType, 'fp64');
    assert.deepEqual(
      sent.entityScores.map((s) => s.byteData!.values[0]!.toString()),
      ['item0', 'item1', 'item2'],
    );
    assert.equal(Buffer.from(sent.entityScores[1]!.byteData!.values[1]!).readDoubleLE(0), 2.5);
    assert.equal(
      await sample(metrics, 'orchestrator_external_requests_total', { service: 'numerix', outcome: 'ok' }),
      1,
    );
  });

  test('FP32 components send and receive 4-byte values', async () => {
    numerix.requests.length = 0;
    const snapshot = registry.build(
      'remote_blend',
      '2',
      remoteBlend(numerix.target, 'blend', { data_type: 'FP32' }),
    );
    const { context } = await engine.executeOn(snapshot, { pattern: 'point', request: request([1.25]) }, 't');
    assert.deepEqual([...context.matrix.byteColumn('score').float32()!], [3]);
    assert.equal(numerix.requests[0]!.dataType, 'fp32');
    assert.equal(numerix.requests[0]!.entityScores[0]!.byteData!.values[2]!.length, 4);
  });

  test('slate mode sends one row per slate, named by its index', async () => {
    numerix.requests.length = 0;
    const doc = remoteBlend(numerix.target, 'blend', {
      slate: true,
      score_mapping: { price: 'slate_price', bonus: 'slate_bonus' },
      output_column: 'slate_score',
    });
    doc.response = { columns: ['slate_score'] };
    const snapshot = registry.build('remote_blend', '5', doc);
    const r: PredictRequest = {
      ...request([1, 2, 3]),
      slateInputSchema: [schema('slate_price', DataType.FP32), schema('slate_bonus', DataType.FP32)],
      slates: [
        { slateTargetIndices: [0, 2], featureValues: [fp32(10), fp32(1)] },
        { slateTargetIndices: [1], featureValues: [fp32(20), fp32(2)] },
      ],
    };
    const { context } = await engine.executeOn(snapshot, { pattern: 'slate', request: r }, 't');
    assert.deepEqual([...context.slate!.byteColumn('slate_score').float64()!], [21, 42]);
    const sent = numerix.requests[0]!;
    assert.deepEqual(sent.schema, ['slate_index', 'price', 'bonus']);
    assert.deepEqual(
      sent.entityScores.map((s) => s.byteData!.values[0]!.toString()),
      ['0', '1'],
    );
  });

  test("a numerix error fails the component: defaults and row errors carrying the server's message", async () => {
    const snapshot = registry.build('remote_blend', '3', remoteBlend(numerix.target, 'ratio'));
    const { context } = await engine.executeOn(
      snapshot,
      { pattern: 'point', request: request([1, 2], 0) },
      't',
    );
    assert.match(
      context.matrix.rowError(0),
      /blend failed: numerix .*: compute ratio failed: division by zero/,
    );
    assert.equal(context.matrix.byteColumn('score').isDefaulted(0), true);
    assert.equal(context.matrix.byteColumn('score').isDefaulted(1), true);
  });

  test('a required remote compute whose server is unreachable fails the request with UNAVAILABLE', async () => {
    const target = await unusedTarget();
    const snapshot = registry.build('remote_blend', '4', remoteBlend(target, 'blend', { required: true }));
    await rejectsWith(
      engine.executeOn(snapshot, { pattern: 'point', request: request([1]) }, 't'),
      'UNAVAILABLE',
      /blend/,
    );
  });

  test('without a numerix client a remote compute component is rejected when the config loads', () => {
    const local = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-remote-compute-')) }),
      createComponentBuilder({}),
    );
    assert.throws(
      () => local.build('remote_blend', '1', remoteBlend(numerix.target)),
      /remote compute \(compute_id\) needs the numerix client/,
    );
  });
});
