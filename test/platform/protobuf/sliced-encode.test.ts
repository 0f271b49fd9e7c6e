import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CandidateEmbedding, GetEmbeddingsResponse } from '../../../src/gen/vss/v1/vss.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { encodeInSlices } from '../../../src/platform/protobuf/sliced-encode.js';

const live = { signal: new AbortController().signal, deadline: Number.POSITIVE_INFINITY };

test('encodeInSlices writes the generated encoder bytes of a GetEmbeddingsResponse (0 to 3,000 entries)', async () => {
  for (const n of [0, 1, 300, 3000]) {
    const response: GetEmbeddingsResponse = {
      embeddings: Array.from({ length: n }, (_, i) => ({
        id: `c${i}-ü`,
        found: i % 3 !== 0,
        embedding: {
          values: i % 3 === 0 ? [] : Array.from({ length: 32 }, (_, k) => Math.fround(i / (k + 1))),
        },
        searchEmbedding: { values: i % 5 === 0 ? [] : [i, -i] },
      })),
    };
    const sliced = await encodeInSlices({
      field: 1,
      elements: response.embeddings,
      encode: (e) => CandidateEmbedding.encode(e).finish(),
      after: new Uint8Array(0),
      ...live,
    });
    assert.ok(sliced.equals(Buffer.from(GetEmbeddingsResponse.encode(response).finish())), `${n} entries`);
  }
});

test('encodeInSlices stops once the call is over', async () => {
  const controller = new AbortController();
  controller.abort(new Error('caller left'));
  await assert.rejects(
    encodeInSlices({
      field: 1,
      elements: Array.from({ length: 1000 }, (_, i) => i),
      encode: () => new Uint8Array(1),
      after: new Uint8Array(0),
      signal: controller.signal,
      deadline: Number.POSITIVE_INFINITY,
    }),
    (err: Error) => isLatticeError(err, 'CANCELLED'),
  );
});
