/**
 * Request decoding keeps every `bytes` value a view into the received message (buf.gen.yaml's
 * ts-proto `env=both`): with `env=node` the generated decoder copied each value into a Buffer of
 * its own, which for 75,000 targets and 100,000 pairs cost ~30% of the decode and a few hundred
 * thousand pooled Buffers for the collector (issue 13's load test, InferPairWise).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { predictRows } from '../../../src/orchestrator/engine/request-rows.js';
import { predictDecoding } from '../../../src/orchestrator/wire/request-decoding.js';

const fp32 = (x: number) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return b;
};

/** The encoded request in a Buffer of its own (Buffer.alloc never takes a slice of the shared pool). */
function request(targets: number): Buffer {
  const encoded = PredictRequest.encode({
    modelConfigId: 'm',
    trackingId: 't',
    contextFeatures: [],
    targetInputSchema: [],
    targets: Array.from({ length: targets }, (_, i) => ({ id: `t${i}`, featureValues: [fp32(i)] })),
    pairInputSchema: [],
    pairs: Array.from({ length: targets }, (_, i) => ({
      firstTargetIndex: i,
      secondTargetIndex: 0,
      featureValues: [fp32(i / 2)],
    })),
    slateInputSchema: [],
    slates: [],
    returnTargetScores: true,
  }).finish();
  const bytes = Buffer.alloc(encoded.length);
  bytes.set(encoded);
  return bytes;
}

function assertViews(bytes: Buffer, decoded: PredictRequest): void {
  // A large request's rows are columns (offsets into the message), a small one's generated messages.
  const { targets, pairs } = predictRows(decoded);
  for (let i = 0; i < targets.count; i++) {
    const value = targets.value(i, 0);
    assert.equal(value.buffer, bytes.buffer, `targets[${i}] value is a view of the message`);
    assert.deepEqual([...value], [...fp32(i)]);
  }
  for (let i = 0; i < pairs.count; i++) {
    assert.equal(pairs.value(i, 0).buffer, bytes.buffer, `pairs[${i}] value is a view`);
    assert.deepEqual([...pairs.value(i, 0)], [...fp32(i / 2)]);
  }
}

test('a small request is decoded with views into its bytes', () => {
  const bytes = request(10);
  assertViews(bytes, predictDecoding('pair').requestDeserialize(bytes));
});

test('a large request decoded in slices keeps views into its bytes too', async () => {
  const bytes = request(5_000);
  const decoding = predictDecoding('pair');
  assert.ok(bytes.length >= decoding.slicedFromBytes);
  const decoded = await decoding.requestDecodeSliced(
    bytes,
    new AbortController().signal,
    Date.now() + 60_000,
  );
  assert.equal(predictRows(decoded).targets.count, 5_000);
  assertViews(bytes, decoded);
});
