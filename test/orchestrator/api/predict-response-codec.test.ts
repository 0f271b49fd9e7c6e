/** The hand-written PredictResponse encoder must write exactly what the generated encoder writes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PredictResponse, type Score } from '../../../src/gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../../src/gen/orchestrator/v1/types.js';
import { encodePredictResponse } from '../../../src/orchestrator/api/predict-response-codec.js';
import { seededRandom } from '../../../src/platform/random.js';

const random = seededRandom(5);
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
const texts = ['', 'ctr', 'final_score', 'catalog:stats:price', 'ü→score', 'x'.repeat(200), '😀 emoji'];

function schemas(): FeatureSchema[] {
  return Array.from({ length: pick([0, 1, 3]) }, () => ({
    name: pick(texts),
    dataType: pick([0, 1, 7, 12, 30]),
    vectorDim: pick([0, 0, 3, 200, 70_000]),
  }));
}

function scores(): Score[] {
  return Array.from({ length: pick([0, 1, 5, 100]) }, () => ({
    outputValues: Array.from({ length: pick([0, 1, 3]) }, () =>
      Buffer.from(Array.from({ length: pick([0, 4, 8, 130, 20_000]) }, () => Math.floor(random() * 256))),
    ),
    error: pick(['', '', 'user_category: entity u1|c3 not found', 'é'.repeat(70)]),
  }));
}

test('encodePredictResponse equals the generated encoder, byte for byte, over random responses', () => {
  for (let i = 0; i < 300; i++) {
    const response: PredictResponse = {
      trackingId: pick(texts),
      targetOutputSchema: schemas(),
      targetScores: scores(),
      pairOutputSchema: schemas(),
      pairScores: scores(),
      slateOutputSchema: schemas(),
      slateScores: scores(),
    };
    const ours = encodePredictResponse(response);
    const generated = Buffer.from(PredictResponse.encode(response).finish());
    assert.ok(ours.equals(generated), `response ${i} differs`);
  }
});

test('negative schema numbers (never produced by the service) fall back to the generated encoder', () => {
  const response: PredictResponse = {
    trackingId: 't',
    targetOutputSchema: [{ name: 'v', dataType: 1, vectorDim: -1 }],
    targetScores: [],
    pairOutputSchema: [],
    pairScores: [],
    slateOutputSchema: [],
    slateScores: [],
  };
  assert.ok(encodePredictResponse(response).equals(Buffer.from(PredictResponse.encode(response).finish())));
  assert.deepEqual(PredictResponse.decode(encodePredictResponse(response)), response);
});
