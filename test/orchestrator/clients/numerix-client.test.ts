import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { NumerixClient, type RemoteComputeRequest } from '../../../src/orchestrator/clients/index.js';
import { type Plumbing, plumbing, rejectsWith, sample, within } from './grpc-fixtures.js';
import { FakeNumerix } from './numerix-fixture.js';

const f32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};
const id = (s: string) => Buffer.from(s);

describe('NumerixClient over numerix.Numerix/Compute', () => {
  const numerix = new FakeNumerix();
  let io: Plumbing;
  let client: NumerixClient;
  const options = () => ({ signal: new AbortController().signal, deadline: within(10_000) });
  const blend = (dataType: 'FP32' | 'FP64'): RemoteComputeRequest => {
    const column = (values: number[]) =>
      dataType === 'FP32' ? Float32Array.from(values) : Float64Array.from(values);
    return {
      computeId: 'blend',
      schema: ['item_id', 'price', 'bonus'],
      ids: ['a', 'b'],
      columns: [column([1.5, -4]), column([0.25, 1])],
      dataType,
    };
  };

  before(async () => {
    await numerix.start();
    io = plumbing({ breaker: { consecutiveFailures: 2 } });
    client = new NumerixClient(io.policy);
  });
  after(async () => {
    io.close();
    await numerix.server.stop();
  });

  test('sends the schema, byte rows and precision; returns one score per row', async () => {
    numerix.requests.length = 0;
    assert.deepEqual([...(await client.compute(numerix.target, blend('FP32'), options()))], [3.25, -7]);
    const sent = numerix.requests[0]!;
    assert.equal(sent.computeId, 'blend');
    assert.deepEqual(sent.schema, ['item_id', 'price', 'bonus']);
    assert.equal(sent.dataType, 'fp32');
    assert.deepEqual(sent.entityScores[0]!.byteData!.values, [id('a'), f32(1.5), f32(0.25)]);
    assert.deepEqual([...(await client.compute(numerix.target, blend('FP64'), options()))], [3.25, -7]);
    assert.equal(numerix.requests[1]!.dataType, 'fp64');
  });

  test('scores sent back as strings are read too', async () => {
    numerix.tamper = (response) => ({
      computationScoreData: {
        schema: ['item_id', 'score'],
        computationScores: response.computationScoreData!.computationScores.map((s) => ({
          stringData: {
            values: [
              Buffer.from(s.byteData!.values[0]!).toString(),
              String(Buffer.from(s.byteData!.values[1]!).readDoubleLE(0)),
            ],
          },
        })),
      },
    });
    try {
      assert.deepEqual([...(await client.compute(numerix.target, blend('FP64'), options()))], [3.25, -7]);
    } finally {
      numerix.tamper = undefined;
    }
  });

  test("the error arm becomes an error with the server's message and never opens the circuit", async () => {
    const request = {
      ...blend('FP64'),
      computeId: 'ratio',
      ids: ['a'],
      columns: [Float64Array.of(1), Float64Array.of(0)],
    };
    for (let i = 0; i < 3; i++) {
      await rejectsWith(
        client.compute(numerix.target, request, options()),
        'FAILED_PRECONDITION',
        new RegExp(`numerix ${numerix.target}: compute ratio failed: division by zero at row 0`),
      );
    }
    await rejectsWith(
      client.compute(numerix.target, { ...blend('FP64'), computeId: 'nope' }, options()),
      'FAILED_PRECONDITION',
      /No expression configured for compute_id: nope/,
    );
    assert.equal(io.policy.circuitState(numerix.target), 'closed');
    assert.equal(
      await sample(io.metrics, 'orchestrator_external_errors_total', {
        service: 'numerix',
        kind: 'server_error',
      }),
      4,
    );
  });

  test('scores for other ids, or too few scores, are errors rather than misplaced scores', async () => {
    numerix.tamper = (response) => ({
      computationScoreData: {
        schema: ['item_id', 'score'],
        computationScores: [...response.computationScoreData!.computationScores].reverse(),
      },
    });
    try {
      await rejectsWith(
        client.compute(numerix.target, blend('FP32'), options()),
        'INTERNAL',
        /score row 0 is for another id: rows out of order/,
      );
      numerix.tamper = (response) => ({
        computationScoreData: {
          schema: ['item_id', 'score'],
          computationScores: response.computationScoreData!.computationScores.slice(1),
        },
      });
      await rejectsWith(
        client.compute(numerix.target, blend('FP32'), options()),
        'INTERNAL',
        /1 scores returned for 2 rows/,
      );
    } finally {
      numerix.tamper = undefined;
    }
  });

  test('columns that do not fit the schema, the ids or the precision are rejected before sending', async () => {
    const sent = numerix.requests.length;
    await rejectsWith(
      client.compute(
        numerix.target,
        { ...blend('FP64'), columns: [Float32Array.of(1, 2), Float64Array.of(2, 3)] },
        options(),
      ),
      'INVALID_ARGUMENT',
      /column price holds FP32 values, the request is FP64/,
    );
    await rejectsWith(
      client.compute(numerix.target, { ...blend('FP64'), columns: [Float64Array.of(1, 2)] }, options()),
      'INVALID_ARGUMENT',
      /1 value columns for 2 variables in the schema/,
    );
    await rejectsWith(
      client.compute(numerix.target, { ...blend('FP64'), ids: ['a', 'b', 'c'] }, options()),
      'INVALID_ARGUMENT',
      /column price has 2 values for 3 ids/,
    );
    assert.equal(numerix.requests.length, sent);
  });
});
