/**
 * Model servers answering a shape other than what was sent: more or fewer rows, another per-row
 * width, or bytes that do not fit the declared shape. Each such batch fails on its own: its rows keep
 * the defaults and carry a row error naming the component, the endpoint and the shapes; the other
 * batches keep their own scores; nothing lands on a neighbouring row. Runs the whole engine over the
 * real KServe gRPC client against a small fake model server computing y = 2x + 1.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { ModelInferRequest } from '../../../src/gen/inference/grpc_service.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { createOrchestratorClients, type ModelInferer } from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { fp32, schema, testRegistry } from '../../support/orchestrator.js';
import { FakeKServe, rawInput, rawResponse } from '../clients/kserve-fixture.js';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const f32bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

/** x = 1…6 in two batches of three: [1, 2, 3] and [4, 5, 6]. */
const xs = [1, 2, 3, 4, 5, 6];
const request: PredictRequest = {
  modelConfigId: 'm',
  trackingId: 't',
  contextFeatures: [],
  targetInputSchema: [schema('x', DataType.FP32)],
  targets: xs.map((x) => ({ id: `item${x}`, featureValues: [fp32(x)] })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
};

const affineModel = (target: string, extra: Record<string, unknown> = {}) => ({
  model_config_id: 'm',
  target_id_column: 'item_id',
  component_dependency: { ranker: [] },
  model_serving_components: [
    {
      name: 'ranker',
      model_name: 'affine',
      batch_size: 3,
      deadline_ms: 5000,
      endpoints: [{ target, percentage: 100 }],
      inputs: [{ name: 'x', data_type: 'FP32', shape: [1], features: ['x'] }],
      outputs: [{ name: 'y', data_type: 'FP32', columns: ['score'] }],
      required: false,
      ...extra,
    },
  ],
  response: { columns: ['score'] },
});

function engineOver(inferer?: ModelInferer) {
  const metrics = new Metrics();
  const clients = createOrchestratorClients({ metrics });
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-model-shapes-')) }),
    createComponentBuilder(inferer ? { modelInferer: inferer } : clients),
    metrics,
  );
  return { registry, engine: new InferenceEngine(registry), close: () => clients.close() };
}

/** y = 2x + 1 for each row of `x`, as FP32. */
function affine(request: ModelInferRequest): number[] {
  return [...new Float32Array(rawInput(request, 'x').buffer)].map((x) => 2 * x + 1);
}

interface Tampered {
  name: string;
  /** The answer to the first batch (x = 1, 2, 3), given the honest y values. */
  answer: (ys: number[]) => { shape: number[]; data: Uint8Array };
  /** The row error of that batch's rows. */
  error: (target: string) => RegExp;
}

const shapeError = (shape: string) => (target: string) =>
  new RegExp(
    `^ranker: model call failed: model server ${escapeRegExp(target)}: model affine: output "y" has shape ${escapeRegExp(shape)} for 3 rows sent \\(x \\[3, 1\\]\\); expected \\[3, 1\\]`,
  );

const tampered: Tampered[] = [
  {
    // The case: an extra row on top moved every score one row down.
    name: 'one row too many, [n + 1, 1]',
    answer: (ys) => ({ shape: [4, 1], data: f32bytes([1, ...ys]) }),
    error: shapeError('[4, 1]'),
  },
  {
    name: 'one row too few, [n - 1, 1]',
    answer: (ys) => ({ shape: [2, 1], data: f32bytes(ys.slice(1)) }),
    error: shapeError('[2, 1]'),
  },
  {
    name: 'two values per row for one column, [n, 2]',
    answer: (ys) => ({ shape: [3, 2], data: f32bytes(ys.flatMap((y) => [0, y])) }),
    error: shapeError('[3, 2]'),
  },
  {
    name: 'rows and width swapped, [1, n]',
    answer: (ys) => ({ shape: [1, 3], data: f32bytes(ys) }),
    error: shapeError('[1, 3]'),
  },
  {
    name: 'more bytes than the declared shape holds',
    answer: (ys) => ({ shape: [3, 1], data: f32bytes([...ys, 9]) }),
    error: (target) =>
      new RegExp(
        `^ranker: model call failed: model server ${escapeRegExp(target)}: model affine: output y: shape \\[3, 1\\] of FP32 takes 12 bytes, got 16`,
      ),
  },
];

describe('a model server answering a shape other than the batch sent', () => {
  /** Rewrites the answer to the first batch (x = 1, 2, 3) when set. */
  let tamper: Tampered['answer'] | undefined;
  const model = new FakeKServe((r) => {
    const ys = affine(r);
    const first = ys[0] === 3;
    const { shape, data } = first && tamper ? tamper(ys) : { shape: [ys.length, 1], data: f32bytes(ys) };
    return rawResponse(r, [{ name: 'y', datatype: 'FP32', shape, data }]);
  });
  before(() => model.start());
  after(() => model.stop());

  for (const answer of tampered) {
    test(`${answer.name}: that batch's rows default and say why; the other batch keeps its scores`, async () => {
      const { registry, engine, close } = engineOver();
      tamper = answer.answer;
      try {
        const snapshot = registry.build('m', '1', affineModel(model.target));
        const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
        const score = context.matrix.byteColumn('score');
        assert.deepEqual([...score.float32()!], [0, 0, 0, 9, 11, 13]);
        for (let row = 0; row < 3; row++) {
          assert.equal(score.isDefaulted(row), true, `row ${row} defaulted`);
          assert.match(context.matrix.rowError(row), answer.error(model.target));
        }
        for (let row = 3; row < 6; row++) assert.equal(context.matrix.rowError(row), '');
      } finally {
        tamper = undefined;
        close();
      }
    });
  }

  test('a one-dimensional [n] answer for one column per row is the same rows: accepted', async () => {
    const { registry, engine, close } = engineOver();
    tamper = (ys) => ({ shape: [3], data: f32bytes(ys) });
    try {
      const snapshot = registry.build('m', '1', affineModel(model.target));
      const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
      assert.deepEqual([...context.matrix.byteColumn('score').float32()!], [3, 5, 7, 9, 11, 13]);
      for (let row = 0; row < 6; row++) assert.equal(context.matrix.rowError(row), '');
    } finally {
      tamper = undefined;
      close();
    }
  });

  test('slates: a slate answered with one row too many defaults and says why; one row per slate is accepted', async () => {
    const { registry, engine, close } = engineOver();
    const slates: PredictRequest = {
      ...request,
      slates: [
        { slateTargetIndices: [0, 1, 2], featureValues: [] },
        { slateTargetIndices: [3, 4, 5], featureValues: [] },
      ],
    };
    const doc = affineModel(model.target, {
      slate: true,
      outputs: [{ name: 'y', data_type: 'FP32', columns: ['slate_score'] }],
    });
    doc.response.columns = ['slate_score'];
    try {
      const snapshot = registry.build('m', '1', doc);
      tamper = (ys) => ({ shape: [4, 1], data: f32bytes([1, ...ys]) });
      let { context } = await engine.executeOn(snapshot, { pattern: 'slate', request: slates }, 't');
      let slate = context.slate!;
      assert.deepEqual([...slate.byteColumn('slate_score').float32()!], [0, 9]);
      assert.equal(slate.byteColumn('slate_score').isDefaulted(0), true);
      assert.match(slate.rowError(0), shapeError('[4, 1]')(model.target));
      assert.equal(slate.rowError(1), '');
      // A slate-wise model may answer a single row for the slate.
      tamper = (ys) => ({ shape: [1, 1], data: f32bytes([ys[1]!]) });
      ({ context } = await engine.executeOn(snapshot, { pattern: 'slate', request: slates }, 't'));
      slate = context.slate!;
      assert.deepEqual([...slate.byteColumn('slate_score').float32()!], [5, 9]);
      assert.equal(slate.rowError(0), '');
    } finally {
      tamper = undefined;
      close();
    }
  });

  test('with a second output: a wrong shape on either writes neither', async () => {
    const { registry, engine, close } = engineOver();
    const two = new FakeKServe((r) => {
      const ys = affine(r);
      const wrong = ys[0] === 3;
      return rawResponse(r, [
        { name: 'y', datatype: 'FP32', shape: [3, 1], data: f32bytes(ys) },
        { name: 'z', datatype: 'FP32', shape: [wrong ? 4 : 3, 1], data: f32bytes(wrong ? [0, ...ys] : ys) },
      ]);
    });
    await two.start();
    try {
      const doc = affineModel(two.target, {
        outputs: [
          { name: 'y', data_type: 'FP32', columns: ['score'] },
          { name: 'z', data_type: 'FP32', columns: ['other'] },
        ],
      });
      doc.response.columns = ['score', 'other'];
      const snapshot = registry.build('m', '1', doc);
      const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
      assert.deepEqual([...context.matrix.byteColumn('score').float32()!], [0, 0, 0, 9, 11, 13]);
      assert.deepEqual([...context.matrix.byteColumn('other').float32()!], [0, 0, 0, 9, 11, 13]);
      assert.equal(context.matrix.byteColumn('score').isDefaulted(0), true);
      assert.match(context.matrix.rowError(0), /output "z" has shape \[4, 1\] for 3 rows sent/);
    } finally {
      close();
      await two.stop();
    }
  });
});

test('any ModelInferer answering bytes that do not fit its shape fails the batch the same way', async () => {
  const inferer: ModelInferer = {
    infer: async (_target, req) => {
      const x = new Float32Array(Uint8Array.from(req.inputs[0]!.data).buffer);
      const ys = [...x].map((v) => 2 * v + 1);
      // The first batch claims [3, 1] but carries 4 values.
      const data = f32bytes(ys[0] === 3 ? [...ys, 0] : ys);
      return [{ name: 'y', dataType: DataType.FP32, shape: [3, 1], data }];
    },
  };
  const { registry, engine, close } = engineOver(inferer);
  try {
    const snapshot = registry.build('m', '1', affineModel('ranker-a:8001'));
    const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
    assert.deepEqual([...context.matrix.byteColumn('score').float32()!], [0, 0, 0, 9, 11, 13]);
    for (let row = 0; row < 3; row++) {
      assert.match(
        context.matrix.rowError(row),
        /^ranker: model call failed: model server ranker-a:8001: model affine: output "y" of shape \[3, 1\] FP32 takes 12 bytes, got 16/,
      );
    }
  } finally {
    close();
  }
});
