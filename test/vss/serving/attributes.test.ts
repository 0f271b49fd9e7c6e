/**
 * Filters and returned attributes agree (issue 12, item 5): both come from the point payloads the
 * vector DB filtered on, in the same answer. Changing an attribute in the aggregator table alone must
 * not make a returned candidate contradict its filter; changing it where serving reads it (the
 * payload, as the real-time consumers do) moves the candidate between filters, attribute and all.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FilterOp, type Filter as WireFilter } from '../../../src/gen/vss/v1/vss.js';
import { collectionName } from '../../../src/vss/model/index.js';
import { ENTITY, MODEL, openWorld, type World } from './harness.js';

const vec = (v: Float32Array) => ({ values: Array.from(v) });
const brandIs = (...values: string[]): WireFilter[] => [
  { field: 'brand', op: FilterOp.FILTER_OP_IN, values },
];

describe('vss serving: filters and attributes from one source', () => {
  let world: World;
  before(async () => {
    world = await openWorld({ seed: 21 });
  });
  after(async () => {
    await world.close();
  });

  // Each search of a test uses its own page size: a repeated request would be a result-cache hit.
  const search = (filters: WireFilter[], pageSize: number) =>
    world.client.search({
      queries: [{ embedding: vec(world.fixture.queries(1, 5)[0]!), pageToken: '', filters }],
      attributes: ['brand', 'price'],
      pageSize,
    });

  test('an aggregator attribute changed alone never contradicts the filter a candidate matched', async () => {
    const before = await search(brandIs('a'), 40);
    const changed = before.results[0]!.candidates.slice(0, 5).map((c) => c.id);
    assert.equal(changed.length, 5);
    await world.store.aggregator.upsert(
      'agg',
      changed.map((id) => ({ id, label: 'brand', value: 'z' })),
    );
    for (const filters of [brandIs('a'), brandIs('z'), brandIs('a', 'b')]) {
      const { results } = await search(filters, 39);
      const allowed = filters[0]!.values;
      for (const c of results[0]!.candidates) {
        assert.ok(
          allowed.includes(c.attributes.brand!),
          `${c.id} matched brand IN ${allowed.join(',')} but came back with brand ${c.attributes.brand}`,
        );
      }
    }
  });

  test('a payload update (what the real-time consumer writes) moves the candidate and its attribute', async () => {
    const { results } = await search(brandIs('b'), 40);
    const [moved] = results[0]!.candidates;
    assert.ok(moved);
    await world.db.setPayload(collectionName(ENTITY, MODEL, 1), [moved.id], { brand: 'y' });
    const asB = await search(brandIs('b'), 38);
    assert.ok(!asB.results[0]!.candidates.some((c) => c.id === moved.id));
    const asY = await search(brandIs('y'), 10);
    assert.deepEqual(
      asY.results[0]!.candidates.map((c) => [c.id, c.attributes.brand]),
      [[moved.id, 'y']],
    );
  });
});
