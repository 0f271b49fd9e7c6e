import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { PredictClient, type PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../../src/gen/orchestrator/v1/types.js';
import type { RunningOrchestrator } from '../../../src/orchestrator/api/index.js';
import { OrchestratorClient } from '../../../src/orchestrator/client.js';
import { LatticeError } from '../../../src/platform/errors.js';
import { DoublerModel, doublerModel, startDoublerOrchestrator } from '../../support/orchestrator-api.js';
import { eventually } from '../../support/servers.js';

const modelDoc = doublerModel(
  {
    name: 'slate_sum',
    expression: 'w 10 *',
    score_mapping: { w: 'weight' },
    output_column: 'slate_score',
    slate: true,
  },
  ['price', 'weight'],
  ['doubled', 'slate_score'],
);

function code(err: unknown): number {
  return (err as ServiceError).code;
}

describe('orchestrator gRPC API', () => {
  const model = new DoublerModel();
  let running: RunningOrchestrator;
  let client: OrchestratorClient;
  let failObserver = false;

  before(async () => {
    running = await startDoublerOrchestrator(modelDoc, model, {
      auth: { tokens: { ranker: 'secret' }, idHeader: 'caller-id', tokenHeader: 'caller-token' },
      observe: () => {
        if (failObserver) throw new TypeError('observer bug');
      },
    });
    client = new OrchestratorClient(`127.0.0.1:${running.port}`, {
      callerId: 'ranker',
      callerToken: 'secret',
    });
  });
  after(async () => {
    client.close();
    await running.stop();
  });

  test('PointWise: one score row per target, typed values decoded by the client', async () => {
    const result = await client.pointWise({
      modelConfigId: 'doubler',
      trackingId: 'track-1',
      targets: [
        { id: 'a', features: { price: 1.5 } },
        { id: 'b', features: { price: 4 } },
      ],
      context: { weight: 1 },
      schema: { price: 'FP32' },
    });
    assert.equal(result.trackingId, 'track-1');
    assert.deepEqual(
      result.targets.map((t) => [t.id, t.values.doubled, t.error]),
      [
        ['a', 3, ''],
        ['b', 8, ''],
      ],
    );
    assert.deepEqual(result.pairs, []);
  });

  test('PairWise: one row per pair, plus per-target rows when asked', async () => {
    const input = {
      modelConfigId: 'doubler',
      targets: [
        { id: 'a', features: { price: 1 } },
        { id: 'b', features: { price: 2 } },
        { id: 'c', features: { price: 3 } },
      ],
      pairs: [
        { first: 0, second: 2, features: { weight: 0.5 } },
        { first: 1, second: 0, features: { weight: 2 } },
      ],
    };
    const without = await client.pairWise(input);
    assert.deepEqual(
      without.pairs.map((p) => p.values.slate_score),
      [5, 20],
    );
    assert.deepEqual(without.targets, []);
    const withTargets = await client.pairWise({ ...input, returnTargetScores: true });
    assert.deepEqual(
      withTargets.targets.map((t) => t.values.doubled),
      [2, 4, 6],
    );
  });

  test('PairWise and SlateWise: a malformed index is INVALID_ARGUMENT naming the field, before anything is sent', async () => {
    const targets = [
      { id: 'a', features: { price: 1 } },
      { id: 'b', features: { price: 2 } },
    ];
    const base = { modelConfigId: 'doubler', targets };
    const cases: [unknown, string, RegExp][] = [
      [
        [
          { first: 0, second: 1 },
          { first: 0.5, second: 1 },
        ],
        'pairs[1].first',
        /is 0\.5: .*integer from 0 to 1/,
      ],
      [[{ second: 1 }], 'pairs[0].first', /is undefined/],
      [[{ first: 0, second: '1' }], 'pairs[0].second', /is "1"/],
      [[{ first: 2 ** 40, second: 1 }], 'pairs[0].first', /is 1099511627776/],
      [[{ first: 1n, second: 0 }], 'pairs[0].first', /is 1n/],
      [[{ first: 0, second: 2 }], 'pairs[0].second', /is 2: it must be the index of one of the 2 targets/],
      [[null], 'pairs[0]', /must be an object/],
    ];
    for (const [pairs, field, message] of cases) {
      await assert.rejects(
        client.pairWise({ ...base, pairs } as unknown as Parameters<typeof client.pairWise>[0]),
        (err) =>
          err instanceof LatticeError &&
          err.code === 'INVALID_ARGUMENT' &&
          err.field === field &&
          message.test(err.message),
        `${JSON.stringify(pairs, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))} → ${field}`,
      );
    }
    await assert.rejects(
      client.slateWise({ ...base, slates: [{ targets: [0, 1.5] }] }),
      (err) =>
        err instanceof LatticeError &&
        err.code === 'INVALID_ARGUMENT' &&
        err.field === 'slates[0].targets[1]',
    );
    // The server still answers the well-formed request.
    const ok = await client.pairWise({ ...base, pairs: [{ first: 1, second: 0, features: { weight: 1 } }] });
    assert.deepEqual(
      ok.pairs.map((p) => p.values.slate_score),
      [10],
    );
  });

  test('SlateWise: one row per slate', async () => {
    const result = await client.slateWise({
      modelConfigId: 'doubler',
      targets: [
        { id: 'a', features: { price: 1 } },
        { id: 'b', features: { price: 2 } },
      ],
      slates: [{ targets: [0, 1], features: { weight: 3 } }],
      returnTargetScores: true,
    });
    assert.deepEqual(
      result.slates.map((s) => s.values.slate_score),
      [30],
    );
    assert.deepEqual(
      result.targets.map((t) => t.values.doubled),
      [2, 4],
    );
  });

  test('legacy RetrieveModelScore: header row, then one text row per id', async () => {
    const { rows, error } = await client.retrieveModelScore({
      modelConfigId: 'blend_only',
      entities: [
        { entity: 'item_id', ids: ['x', 'y'], features: { price: ['1', '2.5'] } },
        { entity: 'user', ids: ['u'], features: { bonus: ['0.5'] } },
      ],
    });
    assert.equal(error, '');
    assert.deepEqual(rows, [
      { item_id: 'x', score: '2.5' },
      { item_id: 'y', score: '5.5' },
    ]);
  });

  test('NOT_FOUND for an unknown model_config_id', async () => {
    await assert.rejects(
      client.pointWise({ modelConfigId: 'nope', targets: [{ id: 'a' }] }),
      (e) => code(e) === status.NOT_FOUND,
    );
  });

  test('INVALID_ARGUMENT naming the field: no targets, wrong value length, bad index, duplicate schema name, empty model id', async () => {
    const raw = new PredictClient(`127.0.0.1:${running.port}`, credentials.createInsecure());
    const md = new Metadata();
    md.set('caller-id', 'ranker');
    md.set('caller-token', 'secret');
    type Method = 'inferPointWise' | 'inferPairWise';
    const call = (method: Method, request: PredictRequest) =>
      new Promise((resolve, reject) =>
        raw[method](request, md, { deadline: Date.now() + 2000 }, (e, r) => (e ? reject(e) : resolve(r))),
      );
    const base: PredictRequest = {
      modelConfigId: 'doubler',
      trackingId: '',
      contextFeatures: [
        { name: 'weight', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0, value: Buffer.alloc(4) },
      ],
      targetInputSchema: [{ name: 'price', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 }],
      targets: [{ id: 'a', featureValues: [Buffer.alloc(4)] }],
      pairInputSchema: [],
      pairs: [],
      slateInputSchema: [],
      slates: [],
      returnTargetScores: false,
    };
    const expectInvalid = async (method: Method, request: PredictRequest, pattern: RegExp) =>
      assert.rejects(
        call(method, request),
        (e) => code(e) === status.INVALID_ARGUMENT && pattern.test((e as ServiceError).details),
      );
    await expectInvalid('inferPointWise', { ...base, targets: [] }, /targets: at least one target/);
    await expectInvalid(
      'inferPointWise',
      { ...base, targets: [{ id: 'a', featureValues: [Buffer.alloc(3)] }] },
      /targets\[0\]\.feature_values\[0\]/,
    );
    await expectInvalid(
      'inferPairWise',
      { ...base, pairs: [{ firstTargetIndex: 0, secondTargetIndex: 5, featureValues: [] }] },
      /pairs\[0\]\.second_target_index is 5/,
    );
    await expectInvalid(
      'inferPointWise',
      {
        ...base,
        targetInputSchema: [
          ...base.targetInputSchema,
          { name: 'price', dataType: WireType.DATA_TYPE_FP32, vectorDim: 0 },
        ],
      },
      /target_input_schema\[1\]\.name "price" is used twice/,
    );
    await expectInvalid(
      'inferPointWise',
      { ...base, modelConfigId: '' },
      /model_config_id must not be empty/,
    );
    raw.close();
  });

  test('UNAUTHENTICATED without or with a wrong caller token', async () => {
    const anonymous = new OrchestratorClient(`127.0.0.1:${running.port}`);
    const wrong = new OrchestratorClient(`127.0.0.1:${running.port}`, {
      callerId: 'ranker',
      callerToken: 'guess',
    });
    try {
      for (const c of [anonymous, wrong]) {
        await assert.rejects(
          c.pointWise({ modelConfigId: 'doubler', targets: [{ id: 'a' }] }),
          (e) => code(e) === status.UNAUTHENTICATED,
        );
      }
    } finally {
      anonymous.close();
      wrong.close();
    }
  });

  test('DEADLINE_EXCEEDED when the deadline passes, and the model call is cancelled', async () => {
    model.mode = 'slow';
    try {
      await assert.rejects(
        client.pointWise({
          modelConfigId: 'doubler',
          targets: [{ id: 'a', features: { price: 1 } }],
          context: { weight: 1 },
          deadlineMs: 100,
        }),
        (e) => code(e) === status.DEADLINE_EXCEEDED,
      );
      await eventually(() => model.cancelled === 1, 10_000, 'the model call to be cancelled');
    } finally {
      model.mode = 'ok';
    }
  });

  test('UNAVAILABLE naming the component when a required component fails', async () => {
    model.mode = 'broken';
    try {
      await assert.rejects(
        client.pointWise({
          modelConfigId: 'doubler',
          targets: [{ id: 'a', features: { price: 1 } }],
          context: { weight: 1 },
        }),
        (e) =>
          code(e) === status.UNAVAILABLE &&
          /component "double" failed: model server exploded/.test((e as ServiceError).details),
      );
    } finally {
      model.mode = 'ok';
    }
  });

  test('a non-required component failing: the request succeeds, rows say which component failed', async () => {
    const result = await client.pointWise({
      modelConfigId: 'fragile',
      targets: [
        { id: 'a', features: { price: 1 } },
        { id: 'b', features: { price: 2 } },
      ],
      context: { bonus: 0 },
      schema: { price: 'FP32', bonus: 'FP64' },
    });
    for (const target of result.targets) {
      assert.match(target.error, /blend failed: division by zero/);
      assert.equal(target.values.score, 0, 'the failed column takes its type default');
    }
  });

  test('INTERNAL for anything unexpected, and the server keeps serving', async () => {
    failObserver = true;
    try {
      await assert.rejects(
        client.pointWise({
          modelConfigId: 'doubler',
          targets: [{ id: 'a', features: { price: 1 } }],
          context: { weight: 1 },
        }),
        (e) => code(e) === status.INTERNAL && !/observer bug/.test((e as ServiceError).details),
      );
    } finally {
      failObserver = false;
    }
    const result = await client.pointWise({
      modelConfigId: 'doubler',
      targets: [{ id: 'a', features: { price: 1 } }],
      context: { weight: 1 },
    });
    assert.equal(result.targets[0]!.values.doubled, 2);
  });
});
