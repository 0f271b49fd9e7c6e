import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PredictRequest, Target, TargetPair, TargetSlate } from '../../../src/gen/orchestrator/v1/predict.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { eachField } from '../../../src/platform/protobuf/field-scan.js';
import { decodeInSlices } from '../../../src/platform/protobuf/sliced-decode.js';
import { seededRandom } from '../../../src/platform/random.js';

const ROWS = [
  { field: 5, property: 'targets', decode: (b: Uint8Array) => Target.decode(b) },
  { field: 7, property: 'pairs', decode: (b: Uint8Array) => TargetPair.decode(b) },
  { field: 9, property: 'slates', decode: (b: Uint8Array) => TargetSlate.decode(b) },
];

function randomRequest(seed: number, targets: number): PredictRequest {
  const rand = seededRandom(seed);
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  return PredictRequest.fromPartial({
    modelConfigId: `model-${seed}`,
    trackingId: 'track',
    contextFeatures: [{ name: 'ctx', value: bytes(8) }],
    targetInputSchema: [{ name: 'price' }, { name: 'quality' }],
    targets: Array.from({ length: targets }, (_, i) => ({
      id: `t${i}`,
      featureValues: [bytes(4), bytes(4)],
    })),
    pairs: Array.from({ length: Math.floor(targets / 3) }, (_, i) => ({
      firstTargetIndex: i,
      secondTargetIndex: i + 1,
      featureValues: [bytes(2)],
    })),
    slates: Array.from({ length: Math.floor(targets / 5) }, (_, i) => ({
      slateTargetIndices: [i, i + 1, i + 2],
      featureValues: [bytes(3)],
    })),
  });
}

const live = () => ({ signal: new AbortController().signal, deadline: Number.POSITIVE_INFINITY });

describe('decodeInSlices', () => {
  test('gives the same message as the generated decoder of the whole buffer, repeated fields interleaved', async () => {
    for (const [seed, n] of [
      [1, 0],
      [2, 1],
      [3, 700],
      [4, 20_000],
    ] as const) {
      const request = randomRequest(seed, n);
      // Interleave: scalar fields written again after the rows (the last value wins in both decoders).
      const bytes = Buffer.concat([
        PredictRequest.encode(request).finish(),
        PredictRequest.encode(
          PredictRequest.fromPartial({ trackingId: 'later', targets: [{ id: 'extra' }] }),
        ).finish(),
      ]);
      const sliced = await decodeInSlices(bytes, {
        decode: (b) => PredictRequest.decode(b),
        repeated: ROWS,
        ...live(),
      });
      assert.deepEqual(sliced, PredictRequest.decode(bytes), `seed ${seed}`);
    }
  });

  test('the check visits every top-level field exactly as eachField over the whole buffer does', async () => {
    const bytes = PredictRequest.encode(randomRequest(5, 3000)).finish();
    const expected: number[][] = [];
    eachField(bytes, 0, bytes.length, (...args) => void expected.push(args));
    const seen: number[][] = [];
    await decodeInSlices(bytes, {
      decode: (b) => PredictRequest.decode(b),
      repeated: ROWS,
      check: (...args) => void seen.push(args),
      ...live(),
    });
    assert.deepEqual(seen, expected);
  });

  test('malformed bytes throw as the generated decoder does; an aborted call stops between slices', async () => {
    const bytes = PredictRequest.encode(randomRequest(6, 50_000)).finish();
    await assert.rejects(
      decodeInSlices(bytes.subarray(0, bytes.length - 3), {
        decode: (b) => PredictRequest.decode(b),
        repeated: ROWS,
        ...live(),
      }),
    );
    assert.throws(() => PredictRequest.decode(bytes.subarray(0, bytes.length - 3)));
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    // The first slice runs (no clock read before it), then the next turn sees the abort.
    await assert.rejects(
      decodeInSlices(bytes, {
        decode: (b) => PredictRequest.decode(b),
        repeated: ROWS,
        signal: controller.signal,
        deadline: Number.POSITIVE_INFINITY,
      }),
      (err: Error) => err.message === 'gone' || isLatticeError(err),
    );
  });
});
