/**
 * The native serving graph (native/hnsw-parallel/src/hnsw_index.cc, index/graph-index.ts) against
 * hnswlib-node, the engine it replaces and the fallback without the addon: the same graph file for
 * the same inserts and deletes, each engine reads the other's file, and the same answer (labels,
 * distances, order) from hnswlib-node's searchKnn, the native search on the event loop and the
 * native search on the pool, filtered or not. Concurrent searches keep their own width; searches
 * running while the event loop inserts, deletes and grows the graph, or while the filter's words
 * change or the graph is collected, finish with valid answers. A database without the pool answers
 * the same on the event loop. The addon is compiled by `npm ci`: here it must load.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/embedded/collection/embedded-vector-db.js';
import {
  defaultGraphEngine,
  type GraphEngine,
  type GraphHits,
  nativeGraphProblem,
} from '../../../src/platform/vectordb/embedded/index/graph-index.js';
import { HnswGraph, POOL_MIN_NODES } from '../../../src/platform/vectordb/embedded/index/hnsw-graph.js';
import { Bitset } from '../../../src/platform/vectordb/embedded/storage/bitset.js';
import type { DistanceFunction, HnswParams } from '../../../src/platform/vectordb/vector-db.js';
import { clusteredFixture } from '../../support/vector-fixtures.js';

const params: HnswParams = { m: 12, efConstruction: 64, efSearch: 64 };
const dimension = 16;
const count = POOL_MIN_NODES + 1000;
const fixture = clusteredFixture({ count: count + 1000, dimension, clusters: 4, seed: 83 });
const queries = fixture.queries(40, 84);

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-native-graph-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * `count` points, every 7th deleted, 100 of those re-inserted with another point's vector (hnswlib's
 * update in place), then grown past its first capacity: what a serving graph goes through.
 */
function built(distance: DistanceFunction, engine: GraphEngine): HnswGraph {
  const graph = new HnswGraph(distance, dimension, params, 1024, engine);
  for (let i = 0; i < count; i++) graph.insert(i, fixture.vector(i));
  for (let i = 0; i < count; i += 7) graph.remove(i);
  for (let i = 0; i < 700; i += 7) graph.insert(i, fixture.vector(count + i));
  return graph;
}

const plain = (hits: GraphHits) => ({ rows: Array.from(hits.rows), distances: Array.from(hits.distances) });

/** Every 3rd row. */
const everyThird = new Bitset();
for (let i = 0; i < count; i += 3) everyThird.add(i);

/** A hit list's rows are distinct, present, not deleted, allowed, at most k, nearest first. */
function assertValid(graph: HnswGraph, hits: GraphHits, k: number, allowed?: (row: number) => boolean) {
  const rows = Array.from(hits.rows);
  assert.ok(rows.length <= k, `${rows.length} hits for k ${k}`);
  assert.equal(new Set(rows).size, rows.length, 'distinct rows');
  for (const row of rows) {
    assert.ok(graph.present.has(row), `row ${row} is in the graph`);
    if (allowed) assert.ok(allowed(row), `row ${row} passes the filter`);
  }
  for (let i = 1; i < hits.distances.length; i++) {
    assert.ok(hits.distances[i]! >= hits.distances[i - 1]!, 'nearest first');
  }
}

describe('native serving graph', () => {
  test('the addon loads and new graphs use it', () => {
    assert.equal(nativeGraphProblem(), undefined);
    assert.equal(defaultGraphEngine(), 'native');
    assert.equal(new HnswGraph('COSINE', dimension, params).engine, 'native');
  });

  for (const distance of ['COSINE', 'DOT', 'EUCLIDEAN'] as DistanceFunction[]) {
    test(`writes the file hnswlib-node writes, reads its files and answers as it does (${distance})`, async (t) => {
      const dir = tempDir(t);
      const native = built(distance, 'native');
      const reference = built(distance, 'hnswlib-node');
      native.save(join(dir, 'native.hnsw'));
      reference.save(join(dir, 'reference.hnsw'));
      assert.ok(
        readFileSync(join(dir, 'native.hnsw')).equals(readFileSync(join(dir, 'reference.hnsw'))),
        'the same graph file, byte for byte',
      );
      // Each engine reads the other's file, at once and off the loop.
      const load = (file: string, engine: GraphEngine) =>
        HnswGraph.load(join(dir, file), distance, dimension, params, native.present, native.deleted, engine);
      const loadAsync = (file: string, engine: GraphEngine) =>
        HnswGraph.loadAsync(
          join(dir, file),
          distance,
          dimension,
          params,
          native.present,
          native.deleted,
          engine,
        );
      const graphs = [
        native,
        reference,
        load('reference.hnsw', 'native'),
        await loadAsync('reference.hnsw', 'native'),
        load('native.hnsw', 'hnswlib-node'),
        await loadAsync('native.hnsw', 'hnswlib-node'),
      ];
      assert.deepEqual(
        graphs.map((graph) => graph.engine),
        ['native', 'hnswlib-node', 'native', 'native', 'hnswlib-node', 'hnswlib-node'],
      );
      for (const [i, query] of queries.entries()) {
        const k = 1 + (i % 20);
        const ef = i % 2 === 0 ? 16 : 96;
        const filter = i % 3 === 0 ? everyThird : undefined;
        const expected = plain(reference.search(query, k, ef, filter));
        assert.equal(expected.rows.length, k);
        for (const graph of graphs) {
          assert.deepEqual(
            plain(graph.search(query, k, ef, filter)),
            expected,
            `query ${i} on the event loop`,
          );
          assert.deepEqual(
            plain(await graph.searchAsync(query, k, ef, filter)),
            expected,
            `query ${i} on the pool`,
          );
        }
      }
    });
  }

  test('concurrent searches each walk with their own width', async () => {
    const graph = built('EUCLIDEAN', 'native');
    const widths = [10, 200];
    // Distinct answers for the two widths (a narrow walk misses neighbours the wide one finds)...
    const expected = queries.map((query) => widths.map((ef) => plain(graph.search(query, 10, ef))));
    assert.ok(
      expected.some(([narrow, wide]) => JSON.stringify(narrow) !== JSON.stringify(wide)),
      'the widths give different answers somewhere',
    );
    // ...each found again with both widths in flight at once.
    const found = await Promise.all(
      queries.map((query) => Promise.all(widths.map((ef) => graph.searchAsync(query, 10, ef)))),
    );
    assert.deepEqual(
      found.map((pair) => pair.map(plain)),
      expected,
    );
  });

  test('searches on the pool while the event loop inserts, deletes and grows the graph: valid answers', async () => {
    const graph = new HnswGraph('COSINE', dimension, params, POOL_MIN_NODES, 'native');
    for (let i = 0; i < POOL_MIN_NODES; i++) graph.insert(i, fixture.vector(i));
    const filter = new Bitset();
    for (let i = 0; i < fixture.count; i += 2) filter.add(i);
    const words = filter.words.slice();
    const searches: Promise<GraphHits>[] = [];
    const allowed: ((row: number) => boolean)[] = [];
    for (let round = 0; round < 20; round++) {
      for (const query of queries.slice(0, 10)) {
        const filtered = searches.length % 2 === 0;
        searches.push(graph.searchAsync(query, 10, 64, filtered ? filter : undefined));
        allowed.push(filtered ? (row) => (words[row >>> 5]! & (1 << (row & 31))) !== 0 : () => true);
      }
      // The filter's words change under the searches just queued: they searched with a copy.
      filter.words.fill(0xffffffff);
      filter.words.set(words);
      // Inserts past the capacity (resizes), deletes and re-inserts, while they run.
      const from = POOL_MIN_NODES + round * 50;
      for (let i = from; i < from + 50; i++) graph.insert(i, fixture.vector(i));
      for (let i = round; i < from; i += 41) graph.remove(i);
      for (let i = round + 20; i < from; i += 83) graph.insert(i, fixture.vector(fixture.count - 1 - i));
    }
    const answers = await Promise.all(searches);
    for (const [i, hits] of answers.entries()) {
      assert.equal(hits.rows.length, 10, `search ${i} found 10`);
      assertValid(graph, hits, 10, allowed[i]);
    }
    // Once the writes stop, the pool's answers are the event loop's again.
    for (const query of queries) {
      assert.deepEqual(
        plain(await graph.searchAsync(query, 10, 64, filter)),
        plain(graph.search(query, 10, 64, filter)),
      );
    }
  });

  test('a graph collected while its searches run: they finish', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let graph: HnswGraph | undefined = built('DOT', 'native');
    const expected = queries.map((query) => plain(graph!.search(query, 10, 64)));
    const searches = queries.map((query) => graph!.searchAsync(query, 10, 64));
    graph = undefined;
    gc();
    assert.deepEqual((await Promise.all(searches)).map(plain), expected);
  });

  test('without the pool (no addon, or searchThreads 0) a database answers the same on the event loop', async (t) => {
    const dir = tempDir(t);
    assert.match(nativeGraphProblem(join(dir, 'missing.node')) ?? '', /missing\.node is not there/);
    assert.equal(defaultGraphEngine(join(dir, 'missing.node')), 'hnswlib-node');
    // Every query walks the graph, filtered ones too.
    const planner = { exactScanRatio: 0, exactScanMinCandidates: 0 };
    const pooled = await EmbeddedVectorDb.open({ workerBuildRows: 0, planner });
    const onLoop = await EmbeddedVectorDb.open({ workerBuildRows: 0, planner, searchThreads: 0 });
    t.after(() => Promise.all([pooled.close(), onLoop.close()]));
    const points = Array.from({ length: count }, (_, i) => ({
      id: fixture.ids[i]!,
      vector: fixture.vector(i),
      payload: { third: i % 3 === 0 },
    }));
    for (const db of [pooled, onLoop]) {
      await db.createCollection({ name: 'c', dimension, distance: 'COSINE' });
      await db.upsert('c', points);
      await db.waitForIndexing('c');
    }
    const third = [{ field: 'third', op: 'IN' as const, values: ['true'] }];
    for (const filters of [undefined, third]) {
      const request = { collection: 'c', queries: queries.map((vector) => ({ vector })), limit: 10, filters };
      assert.deepEqual(await onLoop.search(request), await pooled.search(request));
    }
    assert.equal(onLoop.searchStats('c').graphSearches, 2 * queries.length, 'every query walked the graph');
  });
});
