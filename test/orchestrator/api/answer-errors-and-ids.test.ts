/**
 * PredictResponse.errors (40) and target_ids (41), which the retrieval stage and response ordering
 * fill: the hand-written encoder writes exactly what the generated one writes (two-byte tags), and a
 * reader gets them back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PredictResponse } from '../../../src/gen/orchestrator/v1/predict.js';
import {
  encodePredictAnswer,
  NO_SCORES,
  type PredictAnswer,
  toPredictResponse,
} from '../../../src/orchestrator/wire/predict-response-codec.js';

test('errors and target_ids are encoded as the generated encoder does, after the score tables', () => {
  const answer: PredictAnswer = {
    trackingId: 't1',
    target: {
      schema: [{ name: 'final_score', dataType: 12, vectorDim: 0 }],
      columns: [{ width: 4, data: Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]) }],
      rows: 2,
      rowError: (row) => (row === 1 ? 'catalog_features failed' : ''),
    },
    pair: NO_SCORES,
    slate: NO_SCORES,
    errors: ['retriever broken: UNAVAILABLE: connection refused', 'ü→'],
    targetIds: ['c7', 'c42'],
    // Field 60 after 40 and 41, as the generated encoder writes them.
    servedModelConfigId: 'catalog_recommender',
  };
  const written = encodePredictAnswer(answer);
  assert.deepEqual(written, Buffer.from(PredictResponse.encode(toPredictResponse(answer)).finish()));
  const read = PredictResponse.decode(written);
  assert.deepEqual(read.errors, answer.errors);
  assert.deepEqual(read.targetIds, answer.targetIds);
  // Without them the bytes are those of a response before fields 40 and 41 existed.
  const plain = encodePredictAnswer({ ...answer, errors: undefined, targetIds: [] });
  assert.deepEqual(
    plain,
    Buffer.from(PredictResponse.encode({ ...toPredictResponse(answer), errors: [], targetIds: [] }).finish()),
  );
  assert.ok(plain.length < written.length);
});
