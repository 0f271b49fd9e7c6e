/**
 * Issue 13: every request limit is an INVALID_ARGUMENT naming the limit and the field before
 * anything is allocated, requests just inside are answered, names clashing with model outputs and
 * malformed strings are rejected at the boundary, and error messages quote only a prefix of input.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { Entity, OrchestratorRequestProto } from '../../../src/gen/orchestrator/v1/orchestrator.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { REQUEST_LIMIT_NAMES, REQUEST_LIMITS } from '../../../src/orchestrator/engine/request-limits.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { blendOnly, blendOnlyRequest, fp32, fp64, schema, testRegistry } from '../../support/orchestrator.js';

const registry = testRegistry(new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-limits-')) }));
const engine = new InferenceEngine(registry);
const snapshot = registry.build('blend_only', '1', blendOnly());

function predict(targets: number, extra: Partial<PredictRequest> = {}): PredictRequest {
  return blendOnlyRequest(
    Array.from({ length: targets }, (_, i) => i),
    { trackingId: 't', ...extra },
  );
}

/** blend_only's legacy request: `rows` item ids with a price each, one user with a bonus, plus `extra` single-id entities. */
function legacy(rows: number, extra: number): OrchestratorRequestProto {
  const entities: Entity[] = [
    {
      entity: 'item_id',
      ids: Array.from({ length: rows }, (_, i) => `c${i}`),
      features: [{ name: 'price', idsFeatureValue: Array.from({ length: rows }, (_, i) => String(i % 7)) }],
    },
    { entity: 'user_id', ids: ['u1'], features: [{ name: 'bonus', idsFeatureValue: ['1'] }] },
  ];
  for (let e = 0; e < extra; e++) entities.push({ entity: `e${e}`, ids: ['x'], features: [] });
  return { modelConfigId: 'blend_only', trackingId: 't', entities };
}

const run = (input: Parameters<InferenceEngine['executeOn']>[1]) => engine.executeOn(snapshot, input, 't');

/** Rejected with INVALID_ARGUMENT whose message names `limit` and whose field matches `field`. */
async function rejectsOver(promise: Promise<unknown>, limit: keyof typeof REQUEST_LIMITS, field: RegExp) {
  await assert.rejects(promise, (err) => {
    assert.ok(isLatticeError(err), `a LatticeError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_ARGUMENT', err.message);
    assert.ok(err.message.includes(REQUEST_LIMIT_NAMES[limit]), err.message);
    assert.match(err.field ?? '', field);
    return true;
  });
}

async function rejectsInvalid(promise: Promise<unknown>, message: RegExp, field?: string) {
  await assert.rejects(promise, (err) => {
    assert.ok(isLatticeError(err), `a LatticeError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_ARGUMENT', err.message);
    assert.match(err.message, message);
    if (field !== undefined) assert.equal(err.field, field);
    return true;
  });
}

describe('legacy RetrieveModelScore limits (issue 13, item 1)', () => {
  // Matrix columns of legacy(rows, extra) on blend_only: score, then item_id, price, user_id, bonus and the extras.
  const columnsBeside = 5;
  const rows = 10_000;
  const inside = Math.floor(REQUEST_LIMITS.matrixCells / rows) - columnsBeside;

  test('one id list times many single-id entities past max_matrix_cells is rejected; just inside is answered', async () => {
    await rejectsOver(
      run({ pattern: 'legacy', request: legacy(rows, inside + 1) }),
      'matrixCells',
      /^entities$/,
    );
    const { context } = await run({ pattern: 'legacy', request: legacy(rows, inside) });
    assert.equal(context.matrix.rowCount, rows);
    assert.equal(context.matrix.stringColumn(`e${inside - 1}`)[rows - 1], 'x');
    assert.equal(context.matrix.byteColumn('score').float64()![3], 3 * 2 + 1);
  });

  test("the issue's request (60,000 single-id entities) and 130,000 of them are INVALID_ARGUMENT, not a crash or INTERNAL", async () => {
    await rejectsOver(run({ pattern: 'legacy', request: legacy(100, 60_000) }), 'features', /^entities$/);
    await rejectsOver(run({ pattern: 'legacy', request: legacy(1, 130_000) }), 'features', /^entities$/);
    const most = REQUEST_LIMITS.features - 4; // item_id, price, user_id, bonus
    const { context } = await run({ pattern: 'legacy', request: legacy(10, most) });
    assert.equal(context.matrix.rowCount, 10);
    await rejectsOver(run({ pattern: 'legacy', request: legacy(10, most + 1) }), 'features', /^entities$/);
  });

  test('too many ids and feature values, or a long id broadcast to every row, are rejected', async () => {
    await rejectsOver(
      run({ pattern: 'legacy', request: legacy(REQUEST_LIMITS.targets + 1, 0) }),
      'targets',
      /^entities\[0\]\.ids$/,
    );
    const values = legacy(100_000, 0);
    values.entities[0]!.features.push(
      { name: 'f1', idsFeatureValue: values.entities[0]!.ids },
      { name: 'f2', idsFeatureValue: values.entities[0]!.ids },
    );
    await rejectsOver(run({ pattern: 'legacy', request: values }), 'values', /^entities$/);
    const broadcast = legacy(1000, 0);
    broadcast.entities[1]!.ids = ['u'.repeat(REQUEST_LIMITS.matrixBytes / 2 / 1000 + 1)];
    await rejectsOver(run({ pattern: 'legacy', request: broadcast }), 'matrixBytes', /^entities$/);
  });
});

describe('Predict limits bound the work of a request (issue 13, item 4)', () => {
  test('a context vector broadcast to every target past max_matrix_bytes is rejected; a smaller one is answered', async () => {
    const vector = (dim: number) => ({
      ...schema('embedding', DataType.FP32_VECTOR, dim),
      value: Buffer.alloc(dim * 4),
    });
    const targets = 100;
    const dim = Math.ceil(REQUEST_LIMITS.matrixBytes / 4 / targets) + 1;
    await rejectsOver(
      run({
        pattern: 'point',
        request: predict(targets, { contextFeatures: [...predict(1).contextFeatures, vector(dim)] }),
      }),
      'matrixBytes',
      /^targets$/,
    );
    const { context } = await run({
      pattern: 'point',
      request: predict(10, { contextFeatures: [...predict(1).contextFeatures, vector(dim)] }),
    });
    assert.equal(context.matrix.byteColumn('embedding').get(9).length, dim * 4);
    // A variable-width string broadcast counts once per target too.
    const text = {
      ...schema('note', DataType.STRING),
      value: Buffer.alloc(REQUEST_LIMITS.matrixBytes / 1000 + 1, 97),
    };
    await rejectsOver(
      run({
        pattern: 'point',
        request: predict(1000, { contextFeatures: [...predict(1).contextFeatures, text] }),
      }),
      'matrixBytes',
      /^targets$/,
    );
  });

  test('context features count toward max_schema_entries, and targets × columns toward max_matrix_cells', async () => {
    const context = (count: number, type = DataType.FP32) => [
      ...predict(1).contextFeatures,
      ...Array.from({ length: count }, (_, k) => ({
        ...schema(`c${k}`, type),
        value: Buffer.alloc(type === DataType.INT64 ? 8 : 4),
      })),
    ];
    // Request schema: bonus + price + the extra context features.
    await rejectsOver(
      run({
        pattern: 'point',
        request: predict(5, { contextFeatures: context(REQUEST_LIMITS.features - 1) }),
      }),
      'features',
      /^context_features$|^target_input_schema$/,
    );
    const wide = REQUEST_LIMITS.features - 2;
    const { context: answered } = await run({
      pattern: 'point',
      request: predict(5, { contextFeatures: context(wide) }),
    });
    assert.equal(answered.matrix.byteColumn(`c${wide - 1}`).isDefaulted(4), false);
    // Columns: score, item_id, price, bonus and the INT64 context features.
    const columns = 4 + wide;
    const rows = Math.floor(REQUEST_LIMITS.matrixCells / columns) + 1;
    await rejectsOver(
      run({ pattern: 'point', request: predict(rows, { contextFeatures: context(wide, DataType.INT64) }) }),
      'matrixCells',
      /^targets$/,
    );
  });

  test('targets × target features past max_feature_values, and slates past max_slate_indices, are rejected', async () => {
    const features = 100;
    const rows = Math.floor(REQUEST_LIMITS.values / features) + 1;
    const value = fp32(1);
    const wide = predict(1, {
      targetInputSchema: [
        schema('price', DataType.FP32),
        ...Array.from({ length: features - 1 }, (_, k) => schema(`t${k}`, DataType.FP32)),
      ],
      targets: Array.from({ length: rows }, (_, i) => ({
        id: `item${i}`,
        featureValues: new Array<Buffer>(features).fill(value),
      })),
    });
    await rejectsOver(run({ pattern: 'point', request: wide }), 'values', /^targets$/);

    const size = REQUEST_LIMITS.slateSize;
    const indices = Array.from({ length: size }, (_, k) => k % 10);
    const slates = Array.from({ length: REQUEST_LIMITS.slateIndices / size + 1 }, () => ({
      slateTargetIndices: indices,
      featureValues: [],
    }));
    await rejectsOver(
      run({ pattern: 'slate', request: predict(10, { slates }) }),
      'slateIndices',
      /^slates$/,
    );
    const { context } = await run({ pattern: 'slate', request: predict(10, { slates: slates.slice(1) }) });
    assert.equal(context.slate?.rowCount, slates.length - 1);
  });
});

describe('accepted when it should be rejected (issue 13, item 8)', () => {
  test('a legacy feature or entity named like a model output is INVALID_ARGUMENT naming it', async () => {
    const clash = legacy(2, 0);
    clash.entities[0]!.features.push({ name: 'score', idsFeatureValue: ['99', '99'] });
    await rejectsInvalid(
      run({ pattern: 'legacy', request: clash }),
      /entities\[0\]\.features\[1\]\.name "score" is a column the model "blend_only" produces/,
      'entities[0].features[1].name',
    );
    const entity = legacy(2, 0);
    entity.entities.push({ entity: 'score', ids: ['1'], features: [] });
    await rejectsInvalid(run({ pattern: 'legacy', request: entity }), /produces/, 'entities[2].entity');
  });

  test('PairWise: a feature the target rows need, supplied only per pair, is INVALID_ARGUMENT', async () => {
    // blend reads `bonus` on the target rows; as a pair feature it never reaches them.
    const request = predict(2, {
      contextFeatures: [],
      pairInputSchema: [schema('bonus', DataType.FP64)],
      pairs: [{ firstTargetIndex: 0, secondTargetIndex: 1, featureValues: [fp64(1)] }],
    });
    await rejectsInvalid(
      run({ pattern: 'pair', request }),
      /request feature "bonus" per target.*component "blend" reads it/,
      'bonus',
    );
    const ok = predict(2, {
      pairInputSchema: [schema('weight', DataType.FP64)],
      pairs: [{ firstTargetIndex: 0, secondTargetIndex: 1, featureValues: [fp64(1)] }],
    });
    const { context } = await run({ pattern: 'pair', request: ok });
    assert.equal(context.matrix.rowError(0), '');
  });

  test('PairWise: user_id that a feature component keys on, supplied only per pair, is INVALID_ARGUMENT', async () => {
    // The case: the feature component reads user_id from the target rows.
    const keyed = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-limits-')) }),
      (plan) => ({ name: plan.name, required: false, run: () => {} }),
    ).build('keyed', '1', {
      model_config_id: 'keyed',
      target_id_column: 'item_id',
      component_dependency: { user_features: [] },
      feature_components: [
        {
          name: 'user_features',
          entity: 'user',
          fs_keys: [{ schema: ['user_id'], col: 'user_id' }],
          feature_groups: [{ label: 'profile', data_type: 'FP32', features: ['age'] }],
        },
      ],
      response: { columns: ['user:profile:age'] },
    });
    const request = predict(2, {
      contextFeatures: [],
      pairInputSchema: [schema('user_id', DataType.STRING)],
      pairs: [{ firstTargetIndex: 0, secondTargetIndex: 1, featureValues: [Buffer.from('u1')] }],
    });
    await rejectsInvalid(
      engine.executeOn(keyed, { pattern: 'pair', request }, 't'),
      /"user_id" per target.*component "user_features" reads it from the target rows \(a pair or slate input feature does not reach them\)/,
      'user_id',
    );
    request.contextFeatures = [{ ...schema('user_id', DataType.STRING), value: Buffer.from('u1') }];
    request.pairInputSchema = [];
    request.pairs[0]!.featureValues = [];
    const { context } = await engine.executeOn(keyed, { pattern: 'pair', request }, 't');
    assert.equal(context.slate?.rowCount, 1);
  });

  test('invalid UTF-8 in STRING and STRING_VECTOR values is INVALID_ARGUMENT naming the value', async () => {
    const bad = Buffer.from([0x61, 0xc3, 0x28]);
    await rejectsInvalid(
      run({
        pattern: 'point',
        request: predict(1, {
          contextFeatures: [
            ...predict(1).contextFeatures,
            { ...schema('note', DataType.STRING), value: bad },
          ],
        }),
      }),
      /context_features\[1\]\.value is not valid UTF-8/,
      'context_features[1].value',
    );
    const element = (bytes: Buffer) => Buffer.concat([Buffer.from([bytes.length, 0, 0, 0]), bytes]);
    const vector = predict(2, {
      targetInputSchema: [schema('price', DataType.FP32), schema('tags', DataType.STRING_VECTOR)],
    });
    vector.targets[0]!.featureValues.push(
      Buffer.concat([element(Buffer.from('ok')), element(Buffer.from('fine'))]),
    );
    vector.targets[1]!.featureValues.push(Buffer.concat([element(Buffer.from('ok')), element(bad)]));
    await rejectsInvalid(
      run({ pattern: 'point', request: vector }),
      /targets\[1\]\.feature_values\[1\]: element 1 is not valid UTF-8/,
      'targets[1].feature_values[1]',
    );
    vector.targets[1]!.featureValues[1] = element(Buffer.from('ünïcode ✓'));
    const { context } = await run({ pattern: 'point', request: vector });
    assert.equal(context.matrix.rowCount, 2);
  });
});

describe('error messages quote a short prefix of user input (issue 13, item 6)', () => {
  test('a long duplicate schema name, legacy entity name or model id comes back cut to its first 64 characters', async () => {
    const long = 'n'.repeat(100_000);
    await assert.rejects(
      run({
        pattern: 'point',
        request: predict(1, {
          targetInputSchema: [schema(long, DataType.FP32), schema(long, DataType.FP32)],
        }),
      }),
      (err: Error) =>
        err.message.length < 300 && err.message.includes(`"${'n'.repeat(64)}"… (100000 characters)`),
    );
    const twice = legacy(1, 0);
    twice.entities.push(
      { entity: long, ids: ['a'], features: [] },
      { entity: long, ids: ['a'], features: [] },
    );
    await assert.rejects(
      run({ pattern: 'legacy', request: twice }),
      (err: Error) => err.message.length < 300,
    );
    await assert.rejects(
      engine.execute('m'.repeat(150), { pattern: 'point', request: predict(1) }, 't'),
      (err: Error) =>
        isLatticeError(err, 'NOT_FOUND') && err.message.length < 200 && !err.message.includes('m'.repeat(65)),
    );
  });
});
