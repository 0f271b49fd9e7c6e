/**
 * Embedded searches whose graph walk is awaited while the collection changes
 * (src/platform/vectordb/embedded/collection/collection-search.ts runQuery): the walk runs on the
 * native search pool for a large graph, and before the next turn of the event loop for a small one,
 * so deletes, new vectors, new points (in reused rows), payload changes, indexing and a compaction's
 * graph swap may all land before its answer is made. The answer is valid for the collection as it
 * is then: live points, each once, scored with their current vectors, passing the filters as they
 * are now. A drop or a close fails the search instead.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Collection } from '../../../src/platform/vectordb/embedded/collection/collection.js';
import { runQuery } from '../../../src/platform/vectordb/embedded/collection/collection-search.js';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/embedded/collection/embedded-vector-db.js';
import { PLANNER_DEFAULTS } from '../../../src/platform/vectordb/embedded/collection/query-planner.js';
import { POOL_MIN_NODES } from '../../../src/platform/vectordb/embedded/index/hnsw-graph.js';
import { validateCollectionSpec, validatePoints } from '../../../src/platform/vectordb/validation.js';
import type { Filter, PointInput, SearchHit } from '../../../src/platform/vectordb/vector-db.js';
import { clusteredFixture, cosine, type VectorFixture } from '../../support/vector-fixtures.js';

const dimension = 16;
const even: Filter[] = [{ field: 'even', op: 'IN', values: ['true'] }];
/** Every query walks the graph (an exact scan answers in the step it starts in). */
const graphOnly = { planner: { exactScanRatio: 0, exactScanMinCandidates: 0 } };

function points(fixture: VectorFixture, from: number, to: number): PointInput[] {
  const out: PointInput[] = [];
  for (let i = from; i < to; i++) {
    out.push({ id: fixture.ids[i]!, vector: fixture.vector(i), payload: { even: i % 2 === 0 } });
  }
  return out;
}

/**
 * Checks `hits` against the collection as it is now (call it in the step the search resolved in):
 * distinct live points, scored with their current vectors, passing the filter when `filtered`.
 */
async function assertCurrent(
  db: EmbeddedVectorDb,
  name: string,
  query: Float32Array,
  hits: SearchHit[],
  filtered: boolean,
) {
  const ids = hits.map((hit) => hit.id);
  assert.equal(new Set(ids).size, ids.length, `each point once: ${ids.join(', ')}`);
  const stored = await db.getPoints(name, ids);
  for (const [i, hit] of hits.entries()) {
    const point = stored[i];
    assert.ok(point, `${hit.id} is live`);
    assert.ok(
      Math.abs(hit.score - cosine(query, point.vector!)) < 1e-5,
      `${hit.id} scored with its current vector`,
    );
    if (filtered) assert.equal(point.payload?.even, true, `${hit.id} passes the filter now`);
  }
}

describe('embedded vector db: searches while the collection changes', () => {
  test('writes after a small graph was walked, before the answer: valid for the collection as it is then', async (t) => {
    const fixture = clusteredFixture({ count: 1200, dimension, clusters: 4, seed: 17 });
    const db = await EmbeddedVectorDb.open(graphOnly);
    t.after(() => db.close());
    await db.createCollection({ name: 'c', dimension, distance: 'COSINE' });
    await db.upsert('c', points(fixture, 0, 1000));
    await db.waitForIndexing('c');
    // Each query is a point's vector: its walk finds that point first.
    const queried = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28];
    const search = (i: number, filtered: boolean) =>
      db.search({
        collection: 'c',
        queries: [{ vector: fixture.vector(i) }],
        limit: 10,
        filters: filtered ? even : undefined,
      });
    const searches = queried.flatMap((i) => [search(i, false), search(i, true)]);
    // The walks are done; before their answers: points 0..8 deleted and their rows reused by new
    // points (odd, so filtered out) with the same vectors, 10..18 moved far away, 20..28 made odd.
    await Promise.all([
      db.delete('c', fixture.ids.slice(0, 10)),
      db.upsert(
        'c',
        Array.from({ length: 10 }, (_, i) => ({
          id: `new-${i}`,
          vector: fixture.vector(i),
          payload: { even: false },
        })),
      ),
      db.upsert(
        'c',
        points(fixture, 1000, 1010).map((point, i) => ({ ...point, id: fixture.ids[10 + i]! })),
      ),
      db.setPayload('c', fixture.ids.slice(20, 30), { even: false }),
      (async () => {
        const answers = await Promise.all(searches);
        for (const [at, i] of queried.entries()) {
          const [plain, filtered] = [answers[2 * at]![0]!, answers[2 * at + 1]![0]!];
          await assertCurrent(db, 'c', fixture.vector(i), plain, false);
          await assertCurrent(db, 'c', fixture.vector(i), filtered, true);
          assert.equal(plain.length, 10);
          assert.equal(filtered.length, 10);
          // A new point with the query's vector is found, as the backlog is now.
          if (i < 10) assert.equal(plain[0]!.id, `new-${i}`);
        }
      })(),
    ]);
  });

  test('a walk whose points are deleted before its answer is made walks again: a full page', async (t) => {
    const fixture = clusteredFixture({ count: 1000, dimension, clusters: 4, seed: 31 });
    const db = await EmbeddedVectorDb.open(graphOnly);
    t.after(() => db.close());
    await db.createCollection({ name: 'c', dimension, distance: 'COSINE' });
    await db.upsert('c', points(fixture, 0, 1000));
    await db.waitForIndexing('c');
    const request = { collection: 'c', queries: [{ vector: fixture.vector(0) }], limit: 10 };
    const [before] = await db.search(request);
    const searching = db.search(request);
    await db.delete(
      'c',
      before!.slice(0, 5).map((hit) => hit.id),
    );
    const [hits] = await searching;
    assert.equal(hits!.length, 10);
    assert.deepEqual(
      hits!.slice(0, 5).map((hit) => hit.id),
      before!.slice(5).map((hit) => hit.id),
    );
    await assertCurrent(db, 'c', fixture.vector(0), hits!, false);
    assert.equal(db.searchStats('c').graphSearches, 3, 'the second search walked twice');
  });

  test('on the search pool, while points change, the indexer inserts and a compaction swaps the graph', async (t) => {
    const count = POOL_MIN_NODES + 1000;
    const fixture = clusteredFixture({ count: count + 2000, dimension, clusters: 4, seed: 19 });
    const db = await EmbeddedVectorDb.open({ ...graphOnly, workerBuildRows: 0 });
    t.after(() => db.close());
    await db.createCollection({ name: 'c', dimension, distance: 'COSINE' });
    await db.upsert('c', points(fixture, 0, count));
    await db.waitForIndexing('c');
    const queries = fixture.queries(20, 20);
    const checks: Promise<void>[] = [];
    let compacted: Promise<void> | undefined;
    let next = count;
    for (let round = 0; round < 30; round++) {
      for (const [i, query] of queries.entries()) {
        const filtered = i % 2 === 0;
        checks.push(
          db
            .search({
              collection: 'c',
              queries: [{ vector: query }],
              limit: 10,
              filters: filtered ? even : undefined,
            })
            .then(([hits]) => assertCurrent(db, 'c', query, hits!, filtered)),
        );
      }
      // Deletes, new vectors, new points in the freed rows, payload changes; the indexer goes on.
      const base = round * 40;
      await db.delete('c', fixture.ids.slice(base, base + 10));
      await db.upsert('c', points(fixture, next, next + 20));
      next += 20;
      await db.upsert(
        'c',
        points(fixture, next, next + 10).map((point, i) => ({ ...point, id: fixture.ids[base + 10 + i]! })),
      );
      next += 10;
      await db.setPayload('c', fixture.ids.slice(base + 20, base + 30), { even: false });
      if (round === 10) compacted = db.compact('c');
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(checks);
    await compacted;
    const stats = db.searchStats('c');
    assert.equal(stats.graphSearches + stats.exactScans, checks.length);
    assert.ok(db.storageStats('c').graphNodes > 0);
  });

  test('points the indexer inserts while the pool walks the graph are counted once', async () => {
    // On the collection itself, whose indexing step is synchronous: the walks queued on the pool
    // before it run after it (each insert waits for the walks running, at most one per thread).
    const count = POOL_MIN_NODES + 1000;
    const fixture = clusteredFixture({ count: count + 20, dimension, clusters: 4, seed: 29 });
    const spec = validateCollectionSpec({ name: 'c', dimension, distance: 'COSINE' });
    const collection = new Collection(spec, {
      indexing: {
        sliceMs: 10,
        workerRows: Number.POSITIVE_INFINITY,
        scratchDir: undefined,
        parallel: undefined,
      },
    });
    collection.indexer.pause();
    const validated = (from: number, to: number) => validatePoints(points(fixture, from, to), dimension, 'c');
    const indexBacklog = () => {
      for (let row = collection.nextPending(); row !== undefined; row = collection.nextPending())
        collection.index(row);
    };
    collection.upsert(validated(0, count));
    indexBacklog();
    collection.upsert(validated(count, count + 20));
    const searches = [];
    for (let i = count; i < count + 20; i++) {
      const prepare = () => ({
        vector: fixture.vector(i),
        matches: undefined,
        limit: 10,
        excluded: new Set<number>(),
        indexedOnly: false,
        efSearch: undefined,
      });
      searches.push(
        runQuery(collection, prepare, { planner: PLANNER_DEFAULTS, pool: true }, (rows) =>
          rows.map((row) => collection.store.ids[row]!),
        ),
      );
    }
    indexBacklog();
    assert.equal(collection.graph.size, count + 20);
    for (const [at, ids] of (await Promise.all(searches)).entries()) {
      assert.equal(ids[0], fixture.ids[count + at], 'the backlog point found');
      assert.equal(new Set(ids).size, ids.length, `each point once: ${ids.join(', ')}`);
    }
  });

  test('a search whose collection is dropped, or whose database closes, before its answer fails', async () => {
    const fixture = clusteredFixture({ count: 100, dimension, clusters: 2, seed: 23 });
    const db = await EmbeddedVectorDb.open(graphOnly);
    for (const name of ['dropped', 'kept']) {
      await db.createCollection({ name, dimension, distance: 'COSINE' });
      await db.upsert(name, points(fixture, 0, 100));
      await db.waitForIndexing(name);
    }
    const search = (collection: string) =>
      db.search({ collection, queries: [{ vector: fixture.vector(0) }], limit: 5 });
    const dropped = search('dropped');
    await Promise.all([
      db.dropCollection('dropped'),
      assert.rejects(dropped, (err: Error & { code?: string }) => err.code === 'NOT_FOUND'),
    ]);
    const closing = search('kept');
    await Promise.all([db.close(), assert.rejects(closing, /vector database is closed/)]);
  });
});
