import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { MatrixBudget } from '../../../src/orchestrator/engine/matrix-budget.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import {
  blendOnly,
  blendOnlyRequest,
  computeOnlyBuilder,
  fp32,
  fp64,
  schema,
  testRegistry,
} from '../../support/orchestrator.js';
import { duoConfig } from '../../support/orchestrator-process.js';

const registry = testRegistry(new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-engine-')) }));
const engine = new InferenceEngine(registry);
const snapshot = registry.build('blend_only', '1', blendOnly());

const request = blendOnlyRequest;

async function rejectsWith(promise: Promise<unknown>, code: string, message: RegExp, field?: string) {
  await assert.rejects(promise, (err) => {
    assert.ok(isLatticeError(err), String(err));
    assert.equal(err.code, code, err.message);
    assert.match(err.message, message);
    if (field !== undefined) assert.equal(err.field, field);
    return true;
  });
}

describe('InferenceEngine with FeatureInit and an in-process compute component', () => {
  test('scores every target from request features and broadcast context', async () => {
    const { context } = await engine.executeOn(
      snapshot,
      { pattern: 'point', request: request([1, 2.5, -4]) },
      't1',
    );
    const scores = context.matrix.byteColumn('score').float64()!;
    assert.deepEqual([...scores], [2.5, 5.5, -7.5]);
    assert.deepEqual(context.matrix.stringColumn('item_id'), ['item0', 'item1', 'item2']);
    assert.equal(context.matrix.rowError(0), '');
  });

  test('request validation: INVALID_ARGUMENT naming the field and index', async () => {
    const run = (r: PredictRequest, pattern: 'point' | 'pair' | 'slate' = 'point') =>
      engine.executeOn(snapshot, { pattern, request: r }, 't');
    await rejectsWith(run(request([])), 'INVALID_ARGUMENT', /targets: at least one target/, 'targets');
    const short = request([1, 2]);
    short.targets[1]!.featureValues[0] = Buffer.from([1, 2, 3]);
    await rejectsWith(
      run(short),
      'INVALID_ARGUMENT',
      /targets\[1\]\.feature_values\[0\]/,
      'targets[1].feature_values[0]',
    );
    const missing = request([1]);
    missing.targets[0]!.featureValues = [];
    await rejectsWith(
      run(missing),
      'INVALID_ARGUMENT',
      /targets\[0\]\.feature_values has 0 values but the schema has 1/,
    );
    await rejectsWith(
      run(
        request([1], { targetInputSchema: [schema('price', DataType.FP32), schema('price', DataType.FP32)] }),
      ),
      'INVALID_ARGUMENT',
      /target_input_schema\[1\]\.name "price" is used twice/,
    );
    await rejectsWith(
      run(request([1], { targetInputSchema: [schema('price', 99 as DataType)] })),
      'INVALID_ARGUMENT',
      /target_input_schema\[0\]\.data_type 99/,
    );
    await rejectsWith(
      run(request([1], { contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp32(1) }] })),
      'INVALID_ARGUMENT',
      /context_features\[0\]\.value/,
    );
    await rejectsWith(
      run(request([1], { contextFeatures: [] })),
      'INVALID_ARGUMENT',
      /needs the request feature "bonus"/,
    );
    await rejectsWith(
      run(
        request([1, 2], { pairs: [{ firstTargetIndex: 0, secondTargetIndex: 2, featureValues: [] }] }),
        'pair',
      ),
      'INVALID_ARGUMENT',
      /pairs\[0\]\.second_target_index is 2, outside the 2 targets/,
    );
    await rejectsWith(run(request([1, 2]), 'slate'), 'INVALID_ARGUMENT', /slates: at least one slate/);
    await rejectsWith(
      run(request([1, 2], { slates: [{ slateTargetIndices: [0, -1], featureValues: [] }] }), 'slate'),
      'INVALID_ARGUMENT',
      /slates\[0\]\.slate_target_indices\[1\] is -1/,
    );
  });

  test('pair and slate requests build SlateData with target indices and group inputs', async () => {
    const r = request([1, 2, 3], {
      slateInputSchema: [schema('position_bias', DataType.FP32)],
      slates: [
        { slateTargetIndices: [0, 2], featureValues: [fp32(0.1)] },
        { slateTargetIndices: [1], featureValues: [fp32(0.2)] },
      ],
    });
    const { context } = await engine.executeOn(snapshot, { pattern: 'slate', request: r }, 't');
    assert.equal(context.slate?.rowCount, 2);
    assert.deepEqual([...context.slate!.slateTargetIndices[0]!], [0, 2]);
    assert.ok(Math.abs(context.slate!.byteColumn('position_bias').float32()![1]! - 0.2) < 1e-7);
  });

  test('legacy entities: single ids broadcast, per-id text features become columns', async () => {
    const legacy = registry.build('blend_only', '1', blendOnly());
    const { context } = await engine.executeOn(
      legacy,
      {
        pattern: 'legacy',
        request: {
          modelConfigId: 'blend_only',
          trackingId: 't',
          entities: [
            {
              entity: 'item_id',
              ids: ['a', 'b'],
              features: [{ name: 'price', idsFeatureValue: ['1.5', '3'] }],
            },
            { entity: 'user_id', ids: ['u1'], features: [{ name: 'bonus', idsFeatureValue: ['10'] }] },
          ],
        },
      },
      't',
    );
    assert.deepEqual(context.matrix.stringColumn('user_id'), ['u1', 'u1']);
    assert.deepEqual([...context.matrix.byteColumn('score').float64()!], [13, 16]);
    await rejectsWith(
      engine.executeOn(
        legacy,
        { pattern: 'legacy', request: { modelConfigId: 'x', trackingId: '', entities: [] } },
        't',
      ),
      'INVALID_ARGUMENT',
      /entities: at least one entity/,
    );
  });

  test('a non-required component failing marks every row and the request still answers', async () => {
    const failing = registry.build('blend_only', '2', blendOnly('blend_only', 'price bonus /'));
    const r = request([1, 2], { contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(0) }] });
    const { context } = await engine.executeOn(failing, { pattern: 'point', request: r }, 't');
    assert.match(context.matrix.rowError(0), /blend failed: division by zero at row 0/);
    assert.match(context.matrix.rowError(1), /blend failed/);
    assert.equal(context.matrix.byteColumn('score').isDefaulted(0), true);
  });

  test('whatever a failing component wrote before it failed is reset to defaults, in every kind', async () => {
    // A component that writes rows 0 and 2, then fails: none of its values may survive.
    const halfDone = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-engine-')) }),
      (plan) => ({
        name: plan.name,
        required: false,
        run: (context: ExecutionContext) => {
          const column = context.matrix.byteColumn('score');
          column.set(0, Buffer.from(encodeValue(DataType.FP64, 42)));
          column.set(2, Buffer.from(encodeValue(DataType.FP64, 43)));
          throw new Error('broke after two rows');
        },
      }),
    );
    const partial = halfDone.build('blend_only', '4', blendOnly());
    const { context } = await engine.executeOn(
      partial,
      { pattern: 'point', request: request([1, 2, 3]) },
      't',
    );
    const score = context.matrix.byteColumn('score');
    assert.deepEqual([...score.float64()!], [0, 0, 0]);
    for (const row of [0, 1, 2]) {
      assert.equal(score.isDefaulted(row), true, `row ${row} defaulted`);
      assert.match(context.matrix.rowError(row), /blend failed: .*broke after two rows/);
    }
  });

  test('a required component failing fails the request with UNAVAILABLE naming it', async () => {
    const required = registry.build(
      'blend_only',
      '3',
      blendOnly('blend_only', 'price bonus /', { required: true }),
    );
    const r = request([1], { contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(0) }] });
    await rejectsWith(
      engine.executeOn(required, { pattern: 'point', request: r }, 't'),
      'UNAVAILABLE',
      /component "blend" failed/,
    );
  });

  test('past the in-flight matrix budget a request is RESOURCE_EXHAUSTED; alone it is always admitted', async () => {
    const budget = new MatrixBudget(1);
    const tight = new InferenceEngine(registry, budget);
    // Alone, a request bigger than the whole budget is served.
    const { context } = await tight.executeOn(snapshot, { pattern: 'point', request: request([1]) }, 't');
    assert.deepEqual([...context.matrix.byteColumn('score').float64()!], [2.5]);
    assert.equal(budget.inFlightBytes, 0);
    // While one holds the budget, the next is refused until it gives it back.
    const release = budget.acquire(1);
    await rejectsWith(
      tight.executeOn(snapshot, { pattern: 'point', request: request([1]) }, 't'),
      'RESOURCE_EXHAUSTED',
      /bytes of request matrices in flight/,
    );
    release();
    await tight.executeOn(snapshot, { pattern: 'point', request: request([1]) }, 't');
    // A failing request gives its bytes back too.
    await assert.rejects(tight.execute('nope', { pattern: 'point', request: request([1]) }, 't'));
    const failing = registry.build(
      'blend_only',
      '9',
      blendOnly('blend_only', 'price bonus /', { required: true }),
    );
    const zero = request([1], { contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(0) }] });
    await assert.rejects(tight.executeOn(failing, { pattern: 'point', request: zero }, 't'));
    assert.equal(budget.inFlightBytes, 0);
  });

  test('an unknown model is NOT_FOUND', async () => {
    await rejectsWith(
      engine.execute('nope', { pattern: 'point', request: request([1]) }, 't'),
      'NOT_FOUND',
      /unknown model_config_id "nope"/,
    );
  });
});

describe('FeatureInit checks request features against the model inputs that read them', () => {
  test("a request feature of another width than its model input's shape is INVALID_ARGUMENT naming it, before any call", async () => {
    // The duo scorer reads price and quality into a [2] input; its model component must never run.
    const noCalls = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-engine-')) }),
      (plan, model) =>
        plan.kind === 'compute'
          ? computeOnlyBuilder(plan, model)
          : ({
              name: plan.name,
              run: () => {
                throw new Error('the model component ran');
              },
            } as never),
    );
    const duo = noCalls.build('duo', '1', duoConfig('127.0.0.1:1'));
    const duoRequest = (price: ReturnType<typeof schema>, value: Uint8Array): PredictRequest => ({
      ...request([1]),
      modelConfigId: 'duo',
      contextFeatures: [{ ...schema('weight', DataType.FP32), value: fp32(1) }],
      targetInputSchema: [price, schema('quality', DataType.FP32)],
      targets: [{ id: 'a', featureValues: [Buffer.from(value), fp32(2)] }],
    });
    for (const [price, value] of [
      [{ ...schema('price', DataType.FP32_VECTOR), vectorDim: 0 }, new Uint8Array(0)],
      [{ ...schema('price', DataType.FP32_VECTOR), vectorDim: 3 }, new Uint8Array(12)],
    ] as const) {
      await rejectsWith(
        engine.executeOn(duo, { pattern: 'point', request: duoRequest(price, value) }, 't'),
        'INVALID_ARGUMENT',
        /request feature "price" \(vector_dim \d\): model input "features" of component "scorer" has shape \[2\]/,
        'price',
      );
    }
  });
});
