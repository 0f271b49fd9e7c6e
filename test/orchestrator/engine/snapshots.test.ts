import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import type { InferRequest, ModelInferer, Tensor } from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { fp32, schema, testRegistry } from '../../support/orchestrator.js';
import { eventually } from '../../support/servers.js';

/** A model that echoes its input as the score, and holds every call until released. */
class GatedEcho implements ModelInferer {
  started = 0;
  private release: (() => void) | undefined;
  private readonly gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  open(): void {
    this.release!();
  }
  async infer(_target: string, request: InferRequest): Promise<readonly Tensor[]> {
    this.started++;
    await this.gate;
    const input = request.inputs[0]!;
    return [{ name: 'score', dataType: DataType.FP32, shape: [input.shape[0]!, 1], data: input.data }];
  }
}

const model = (multiplier: number, extra: Record<string, unknown> = {}) => ({
  model_config_id: 'm',
  component_dependency: { echo: ['scale'], scale: [] },
  model_serving_components: [
    {
      name: 'echo',
      model_name: 'echo',
      endpoints: [{ target: 'local', percentage: 100 }],
      inputs: [{ name: 'x', data_type: 'FP32', shape: [1], features: ['price'] }],
      outputs: [{ name: 'score', data_type: 'FP32', columns: ['score'] }],
    },
  ],
  compute_components: [
    {
      name: 'scale',
      expression: `score ${multiplier} *`,
      score_mapping: { score: 'score' },
      output_column: 'final',
      ...extra,
    },
  ],
  response: { columns: ['final'] },
});

const request: PredictRequest = {
  modelConfigId: 'm',
  trackingId: 't',
  contextFeatures: [],
  targetInputSchema: [schema('price', DataType.FP32)],
  targets: [3, 5].map((p, i) => ({ id: `t${i}`, featureValues: [fp32(p)] })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
};

describe('snapshots', () => {
  test('an in-flight request finishes on the snapshot it started with, whatever reloads meanwhile', async () => {
    const store = await createConfigStore({
      kind: 'file',
      dir: mkdtempSync(join(tmpdir(), 'lattice-snap-')),
    });
    const echo = new GatedEcho();
    const registry = testRegistry(store, createComponentBuilder({ modelInferer: echo }));
    await store.put('models/m', model(1));
    await registry.start();
    try {
      const engine = new InferenceEngine(registry);
      const first = registry.require('m').version;
      const inFlight = engine.execute('m', { pattern: 'point', request }, 't');
      await eventually(() => echo.started === 1, 10_000, 'the request to reach its model call');
      await store.put('models/m', model(10));
      await eventually(() => registry.require('m').version !== first, 10_000, 'the reload');
      echo.open();
      const { context } = await inFlight;
      assert.equal(context.snapshot.version, first);
      assert.deepEqual([...context.matrix.byteColumn('final').float32()!], [3, 5]);
      const next = await engine.execute('m', { pattern: 'point', request }, 't');
      assert.deepEqual([...next.context.matrix.byteColumn('final').float32()!], [30, 50]);
    } finally {
      await registry.stop();
      await store.close();
    }
  });

  test('compute in slate mode evaluates over SlateData rows', async () => {
    const store = await createConfigStore({
      kind: 'file',
      dir: mkdtempSync(join(tmpdir(), 'lattice-snap-')),
    });
    const registry = testRegistry(store);
    const snapshot = registry.build('s', '1', {
      model_config_id: 's',
      component_dependency: { slate_blend: [] },
      compute_components: [
        {
          name: 'slate_blend',
          expression: 'bias 2 *',
          score_mapping: { bias: 'position_bias' },
          output_column: 'slate_score',
          slate: true,
        },
      ],
      response: { columns: ['slate_score'] },
    });
    const r: PredictRequest = {
      ...request,
      modelConfigId: 's',
      slateInputSchema: [schema('position_bias', DataType.FP32)],
      slates: [
        { slateTargetIndices: [0, 1], featureValues: [fp32(0.25)] },
        { slateTargetIndices: [1], featureValues: [fp32(1.5)] },
      ],
    };
    const { context } = await new InferenceEngine(registry).executeOn(
      snapshot,
      { pattern: 'slate', request: r },
      't',
    );
    assert.deepEqual([...context.slate!.byteColumn('slate_score').float32()!], [0.5, 3]);
    await store.close();
  });
});
