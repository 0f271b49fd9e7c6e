/**
 * `avg_recall` on live traffic, checked against recall computed independently here: each sampled
 * query's served page is compared with the exact ranking of the variant's points (brute force over
 * the fixture in the test), so the metric must equal that share exactly. A world of its own, never
 * changed while samples are measured.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FilterOp } from '../../../src/gen/vss/v1/vss.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import type { VectorDb } from '../../../src/platform/vectordb/index.js';
import { RecallSampler, ServingMetrics } from '../../../src/vss/serving/index.js';
import { exactSearch } from '../../support/vector-fixtures.js';
import { DIMENSION, ENTITY, MODEL, openWorld, payloadOf, type World } from './harness.js';

describe('vss serving: avg_recall', () => {
  let world: World;
  before(async () => {
    world = await openWorld({ server: { recallSampleRate: 1 } });
  });
  after(async () => {
    await world.close();
  });

  /** The recall of one served page against the exact top-k of the points `accept` admits. */
  function expectedRecall(query: Float32Array, served: string[], accept: (row: number) => boolean): number {
    const exact = exactSearch(world.fixture.vectors, DIMENSION, query, served.length, world.distance, accept);
    const truth = new Set(exact.indices.map((row) => world.fixture.ids[row]!));
    return served.filter((id) => truth.has(id)).length / truth.size;
  }

  /** The value of the sample the last query added: the running mean's change, undone. */
  function lastSample(before: { avgRecall?: number; recallSamples: number }): number {
    const now = world.server.servingMetrics.snapshot({ entity: ENTITY, model: MODEL, variant: 'organic' });
    assert.equal(now.recallSamples, before.recallSamples + 1, 'one sample per sampled first page');
    return now.avgRecall! * now.recallSamples - (before.avgRecall ?? 0) * before.recallSamples;
  }

  const snapshot = () =>
    world.server.servingMetrics.snapshot({ entity: ENTITY, model: MODEL, variant: 'organic' });
  const organic = (row: number) => payloadOf(row).to_be_indexed_organic === true;

  test('each sample is the served page’s share of the exact top-k, unfiltered and filtered', async () => {
    const queries = world.fixture.queries(6, 31);
    for (const [q, query] of queries.entries()) {
      const filtered = q % 2 === 1;
      const before = snapshot();
      const response = await world.client.search({
        queries: [
          {
            embedding: { values: Array.from(query) },
            pageToken: '',
            filters: filtered ? [{ field: 'brand', op: FilterOp.FILTER_OP_IN, values: ['a'] }] : [],
          },
        ],
        pageSize: 7,
      });
      const served = response.results[0]!.candidates.map((c) => c.id);
      assert.equal(served.length, 7);
      await world.server.recall.whenIdle();
      const accept = filtered ? (row: number) => organic(row) && payloadOf(row).brand === 'a' : organic;
      const expected = expectedRecall(query, served, accept);
      assert.ok(Math.abs(lastSample(before) - expected) < 1e-9, `query ${q}: expected ${expected}`);
    }
    assert.ok((snapshot().avgSimilarCandidates ?? 0) > 0);
  });

  test('a query by candidate id is measured without the candidate itself', async () => {
    const before = snapshot();
    const response = await world.client.search({
      queries: [{ candidateId: world.fixture.ids[12]!, pageToken: '', filters: [] }],
      pageSize: 5,
    });
    const served = response.results[0]!.candidates.map((c) => c.id);
    assert.ok(!served.includes(world.fixture.ids[12]!));
    await world.server.recall.whenIdle();
    const expected = expectedRecall(world.fixture.vector(12), served, (row) => organic(row) && row !== 12);
    assert.ok(Math.abs(lastSample(before) - expected) < 1e-9, `expected ${expected}`);
  });

  test('each measurement is recorded with its version in SQL (the automatic rollback reads it) and kept in the sampler', async () => {
    const variant = { entity: ENTITY, modelName: MODEL, variant: 'organic' };
    const stored = () => world.store.liveRecall.window(variant, 1, 600_000);
    const before = await stored();
    const kept = await world.server.recall.liveRecall(variant, 1, 600_000);
    await world.client.search({
      queries: [
        { embedding: { values: Array.from(world.fixture.queries(1, 77)[0]!) }, pageToken: '', filters: [] },
      ],
      pageSize: 5,
    });
    await world.server.recall.whenIdle();
    const after = await stored();
    assert.equal(after.samples, before.samples + 1);
    assert.ok(after.mean >= 0 && after.mean <= 1);
    assert.equal((await world.server.recall.liveRecall(variant, 1, 600_000)).samples, kept.samples + 1);
    // Another version has none of them.
    assert.equal((await world.store.liveRecall.window(variant, 2, 600_000)).samples, 0);
    assert.equal((await world.server.recall.liveRecall(variant, 2, 600_000)).samples, 0);
  });
});

describe('vss serving: the recall sample rate (issue 13, item 10)', () => {
  test('a rate that is not a number from 0 to 1 is refused (NaN sampled every query)', () => {
    const metrics = new ServingMetrics(new Metrics());
    const db = {} as VectorDb;
    for (const sampleRate of [Number.NaN, -0.1, 1.5, Number.POSITIVE_INFINITY]) {
      assert.throws(() => new RecallSampler(db, metrics, { sampleRate }), {
        code: 'INVALID_ARGUMENT',
        field: 'recallSampleRate',
      });
    }
    for (const sampleRate of [0, 0.01, 1]) new RecallSampler(db, metrics, { sampleRate });
  });
});
