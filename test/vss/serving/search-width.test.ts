/**
 * A Search's HNSW width (issue 38 item 5): the variant's own (its registration's `ef_search`, else
 * the default), changed live by update-variant without a rebuild, widened by a request's
 * `search_width` up to the limit but never narrowed below the variant's, and part of the result
 * cache's key (a wider search may answer other candidates).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { SearchRequest, VectorDb } from '../../../src/platform/vectordb/index.js';
import { HNSW_DEFAULTS } from '../../../src/platform/vectordb/index.js';
import { SEARCH_LIMITS } from '../../../src/vss/serving/request-limits.js';
import { eventually } from '../../support/servers.js';
import { ENTITY, expectStatus, MODEL, openWorld, type World } from './harness.js';

/** Passes every call through, keeping the width of each search. */
function recordingWidths(inner: VectorDb, widths: (number | undefined)[]): VectorDb {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'search') {
        return (request: SearchRequest) => {
          widths.push(request.efSearch);
          return target.search(request);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('vss serving: the width of a search', () => {
  let world: World;
  const widths: (number | undefined)[] = [];
  let seed = 100;
  before(async () => {
    // No recall sampling: its deep re-runs of a served query (at no width) would land among the
    // widths a Search is checked to have made.
    world = await openWorld({ wrap: (db) => recordingWidths(db, widths), server: { recallSampleRate: 0 } });
  });
  after(async () => {
    await world.close();
  });

  /** The widths of the vector DB searches one Search made (a fresh query each time: no cache hit). */
  async function widthsOf(searchWidth: number, variant = 'organic'): Promise<(number | undefined)[]> {
    const q = world.fixture.queries(1, seed++)[0]!;
    widths.length = 0;
    const { results } = await world.client.search({
      variant,
      searchWidth,
      queries: [{ embedding: { values: Array.from(q) }, pageToken: '', filters: [] }],
    });
    assert.equal(results[0]!.error, '');
    assert.ok(widths.length > 0, 'the search reached the vector DB');
    return [...new Set(widths)];
  }

  test("the variant's width by default; a request widens it, never narrows it", async () => {
    assert.deepEqual(await widthsOf(0), [HNSW_DEFAULTS.efSearch]);
    assert.deepEqual(await widthsOf(300), [300]);
    assert.deepEqual(await widthsOf(20), [HNSW_DEFAULTS.efSearch]);
    assert.deepEqual(await widthsOf(SEARCH_LIMITS.searchWidth), [SEARCH_LIMITS.searchWidth]);
  });

  test('a width past the limit, or negative, is INVALID_ARGUMENT naming search_width', async () => {
    for (const searchWidth of [SEARCH_LIMITS.searchWidth + 1, -1]) {
      await expectStatus(
        world.client.search({
          searchWidth,
          queries: [{ candidateId: world.fixture.ids[0]!, pageToken: '', filters: [] }],
        }),
        status.INVALID_ARGUMENT,
        'search_width',
      );
    }
  });

  test("a change of the variant's ef_search is served live, to that variant only", async () => {
    const key = { entity: ENTITY, modelName: MODEL, variant: 'organic' };
    await world.store.variants.setEfSearch(key, 200);
    await eventually(
      async () => (await widthsOf(0))[0] === 200,
      10_000,
      'serving to search organic at its new width',
    );
    assert.deepEqual(await widthsOf(150), [200]);
    assert.deepEqual(await widthsOf(0, 'ad'), [HNSW_DEFAULTS.efSearch]);
    await world.store.variants.setEfSearch(key, null);
    await eventually(
      async () => (await widthsOf(0))[0] === HNSW_DEFAULTS.efSearch,
      10_000,
      'serving to search organic at its registered width again',
    );
  });

  test('the same query at another width is not answered from the cache', async () => {
    const q = world.fixture.queries(1, 999)[0]!;
    const search = async (searchWidth: number) => {
      widths.length = 0;
      await world.client.search({
        searchWidth,
        queries: [{ embedding: { values: Array.from(q) }, pageToken: '', filters: [] }],
      });
      return widths.length;
    };
    assert.ok((await search(0)) > 0);
    assert.equal(await search(0), 0, 'the repeat is a cache hit');
    assert.ok((await search(500)) > 0, 'a wider search is searched, not served from the cache');
  });
});
