/**
 * The retrieval stage's feature-store query vector, in its `data_type` (FP32_VECTOR by default,
 * FP16_VECTOR and FP64_VECTOR among the others): the vector Search gets is the stored one, decoded
 * from the feature's own bytes. A fake feature store and vss stand in (the end-to-end forms are in
 * test/e2e/retrieve-rank.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataType, encodeValue } from '../../../src/datatypes/index.js';
import type { SearchRequest } from '../../../src/gen/vss/v1/vss.js';
import type { FeatureFetcher } from '../../../src/orchestrator/clients/feature-fetcher.js';
import type { VssSearch } from '../../../src/orchestrator/clients/vss-search-client.js';
import type { ModelSnapshot } from '../../../src/orchestrator/config/index.js';
import { retrievalSchema } from '../../../src/orchestrator/config/retrieval-schema.js';
import { retrieveTargets } from '../../../src/orchestrator/engine/retrieval-stage.js';
import { predictRequest, schema } from '../../support/orchestrator.js';

/** Exactly representable in FP16, FP32 and FP64. */
const PROFILE = [0.5, -1.25, 3, 0.125];

async function searchedVector(dataType: string | undefined): Promise<number[]> {
  const retrieval = retrievalSchema.parse({
    retrievers: [
      {
        name: 'profile',
        target: '127.0.0.1:1',
        entity: 'catalog',
        model: 'products',
        variant: 'all',
        k: 3,
        query: {
          feature_store_vector: {
            entity: 'user',
            column: 'user:profile:embedding',
            id_from: 'user_id',
            ...(dataType === undefined ? {} : { data_type: dataType }),
          },
        },
      },
    ],
  });
  const stored = DataType[(dataType ?? 'FP32_VECTOR') as keyof typeof DataType] as DataType;
  const features: FeatureFetcher = {
    retrieve: async (query) => {
      assert.deepEqual(query.keys, [['u1']]);
      assert.deepEqual(query.featureGroups, [{ label: 'profile', features: ['embedding'] }]);
      return [[encodeValue(stored, PROFILE, PROFILE.length)]];
    },
  } as FeatureFetcher;
  const searched: SearchRequest[] = [];
  const vss = {
    search: async (_target: string, request: SearchRequest) => {
      searched.push(request);
      return { results: [{ candidates: [{ id: 'c1', score: 1, attributes: {} }], error: '' }] };
    },
  } as unknown as VssSearch;
  const snapshot = {
    id: 'recommender',
    model: { config: { retrieval } },
  } as unknown as ModelSnapshot<unknown>;
  const { input, errors } = await retrieveTargets(
    { vss, features },
    snapshot,
    {
      pattern: 'point',
      request: predictRequest({
        modelConfigId: 'recommender',
        contextFeatures: [{ ...schema('user_id', DataType.STRING), value: Buffer.from('u1') }],
      }),
    },
    { signal: new AbortController().signal, deadline: Date.now() + 5000 },
  );
  assert.deepEqual(errors, []);
  assert.equal(input.pattern === 'point' && input.request.targets[0]?.id, 'c1');
  return searched[0]!.queries[0]!.embedding!.values;
}

test('a feature-store query vector is read in its data_type; FP32_VECTOR by default', async () => {
  assert.deepEqual(await searchedVector(undefined), PROFILE);
  assert.deepEqual(await searchedVector('FP16_VECTOR'), PROFILE);
  assert.deepEqual(await searchedVector('FP64_VECTOR'), PROFILE);
});
