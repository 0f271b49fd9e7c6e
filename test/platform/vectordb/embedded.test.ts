import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type CollectionSpec,
  createVectorDb,
  EmbeddedVectorDb,
  type Filter,
  HNSW_DEFAULTS,
  type SearchRequest,
  type VectorDb,
} from '../../../src/platform/vectordb/index.js';
import { eventually } from '../../support/servers.js';
import { clusteredFixture, exactSearch, recall, type VectorFixture } from '../../support/vector-fixtures.js';
import { rejectsWith, vectorDbContract } from './contract.js';

const holdIndexing = async (db: VectorDb, collection: string) => {
  const embedded = db as EmbeddedVectorDb;
  embedded.pauseIndexing(collection);
  return async () => embedded.resumeIndexing(collection);
};

vectorDbContract({
  name: 'embedded, in memory',
  open: () => createVectorDb({ kind: 'embedded' }),
  holdIndexing,
});

const contractDirs: string[] = [];
vectorDbContract({
  name: 'embedded, with a snapshot directory',
  open: () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-vectordb-contract-'));
    contractDirs.push(dir);
    return EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 50 });
  },
  holdIndexing,
  cleanup: async () => {
    for (const dir of contractDirs) rmSync(dir, { recursive: true, force: true });
  },
});

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-vectordb-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function load(
  db: EmbeddedVectorDb,
  fixture: VectorFixture,
  spec: Omit<CollectionSpec, 'dimension'>,
  wait = true,
): Promise<void> {
  await db.createCollection({ ...spec, dimension: fixture.dimension });
  for (let start = 0; start < fixture.count; start += 1000) {
    const end = Math.min(fixture.count, start + 1000);
    const points = [];
    for (let i = start; i < end; i++) {
      points.push({ id: fixture.ids[i]!, vector: fixture.vector(i), payload: fixture.payloads[i]! });
    }
    await db.upsert(spec.name, points);
  }
  if (wait) await db.waitForIndexing(spec.name);
}

const ids = (hits: { id: string }[] | undefined) => (hits ?? []).map((hit) => hit.id);

describe('embedded vector db: snapshots', () => {
  test('collections survive close and reopen: points, payloads, counts, results and the backlog', async (t) => {
    const dir = tempDir(t);
    const fixture = clusteredFixture({
      count: 600,
      dimension: 8,
      clusters: 3,
      seed: 11,
      flags: { tenth: 0.1 },
    });
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    for (const distance of ['DOT', 'COSINE', 'EUCLIDEAN'] as const) {
      await load(db, fixture, { name: `snap_${distance}`, distance });
    }
    await db.delete('snap_DOT', ['p1', 'p2', 'p3']);
    await db.setPayload('snap_DOT', ['p10'], { tenth: true, label: 'merged' });
    // Points still in the backlog at snapshot time are saved as such and indexed after the reload.
    db.pauseIndexing('snap_EUCLIDEAN');
    await db.upsert('snap_EUCLIDEAN', [{ id: 'late', vector: fixture.vector(5), payload: { late: true } }]);
    const queries = fixture.queries(5, 3).map((vector) => ({ vector }));
    const requests: SearchRequest[] = ['DOT', 'COSINE', 'EUCLIDEAN'].map((d) => ({
      collection: `snap_${d}`,
      queries,
      filters: [{ field: 'tenth', op: 'IN', values: ['true'] }],
      limit: 10,
      withPayload: true,
    }));
    const before = await Promise.all(requests.map((r) => db.search(r)));
    const infoBefore = await db.collectionInfo('snap_EUCLIDEAN');
    assert.deepEqual([infoBefore.points, infoBefore.indexedPoints], [601, 600]);
    await db.close();

    const manifest = JSON.parse(readFileSync(join(dir, 'snap_DOT', '1', 'manifest.json'), 'utf8'));
    assert.equal(manifest.format, 'lattice.vectordb.collection');
    assert.equal(manifest.version, 1);
    assert.equal(manifest.points, 597);
    assert.deepEqual(Object.keys(manifest.files).sort(), ['graph', 'points', 'rows', 'vectors']);

    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => reopened.close());
    assert.deepEqual(await reopened.listCollections(), ['snap_COSINE', 'snap_DOT', 'snap_EUCLIDEAN']);
    const after = await Promise.all(requests.map((r) => reopened.search(r)));
    assert.deepEqual(after, before);
    assert.deepEqual((await reopened.getPoints('snap_DOT', ['p10', 'p1']))[1], undefined);
    assert.deepEqual((await reopened.getPoints('snap_DOT', ['p10'], { withVector: false }))[0]?.payload, {
      tenth: true,
      label: 'merged',
    });
    assert.equal((await reopened.collectionInfo('snap_DOT')).points, 597);
    await reopened.waitForIndexing('snap_EUCLIDEAN');
    const info = await reopened.collectionInfo('snap_EUCLIDEAN');
    assert.deepEqual([info.points, info.indexedPoints, info.status], [601, 601, 'READY']);
    const [late] = await reopened.search({
      collection: 'snap_EUCLIDEAN',
      queries: [{ vector: fixture.vector(5) }],
      filters: [{ field: 'late', op: 'EXISTS', values: [] }],
      limit: 1,
      indexedOnly: true,
    });
    assert.deepEqual(ids(late), ['late']);
  });

  test('vectors spread over many storage chunks read back, scan and snapshot exactly', async (t) => {
    // 32,768-d vectors fill a 4 MB chunk every 32 rows: 100 points span four chunks.
    const dimension = 32_768;
    const vector = (seed: number) => {
      const v = new Float32Array(dimension);
      for (let d = 0; d < dimension; d++) v[d] = Math.sin(seed * 7.1 + d * 0.013) * (1 + (seed % 5));
      return v;
    };
    const bits = (v: Float32Array | undefined) => [...new Uint32Array(v!.slice().buffer)];
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    await db.createCollection({ name: 'chunks', dimension, distance: 'EUCLIDEAN' });
    db.pauseIndexing('chunks'); // every search below is an exact scan of the stored vectors
    await db.upsert(
      'chunks',
      Array.from({ length: 100 }, (_, i) => ({ id: `p${i}`, vector: vector(i) })),
    );
    await db.delete(
      'chunks',
      Array.from({ length: 10 }, (_, i) => `p${30 + i}`),
    ); // rows across a chunk edge
    await db.upsert('chunks', [
      ...Array.from({ length: 10 }, (_, i) => ({ id: `q${i}`, vector: vector(1000 + i) })),
      { id: 'p63', vector: vector(2000) },
    ]);
    const expected = new Map<string, Float32Array>();
    for (let i = 0; i < 100; i++) if (i < 30 || i >= 40) expected.set(`p${i}`, vector(i === 63 ? 2000 : i));
    for (let i = 0; i < 10; i++) expected.set(`q${i}`, vector(1000 + i));

    const check = async (vdb: EmbeddedVectorDb) => {
      const names = [...expected.keys()];
      const points = await vdb.getPoints('chunks', names);
      for (const [i, point] of points.entries()) {
        assert.deepEqual(bits(point?.vector), bits(expected.get(names[i]!)), names[i]);
      }
      for (const name of ['p0', 'p31', 'p32', 'p63', 'p64', 'p99', 'q0', 'q9']) {
        if (!expected.has(name)) continue;
        const [hits] = await vdb.search({
          collection: 'chunks',
          queries: [{ vector: expected.get(name)! }],
          limit: 1,
        });
        assert.deepEqual(ids(hits), [name]);
      }
      assert.equal((await vdb.collectionInfo('chunks')).points, 100);
    };
    await check(db);
    await db.snapshot('chunks');
    await db.close();
    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => reopened.close());
    reopened.pauseIndexing('chunks');
    await check(reopened);
  });

  test('one process owns a directory; a second open is FAILED_PRECONDITION', async (t) => {
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir });
    t.after(() => db.close());
    await rejectsWith(EmbeddedVectorDb.open({ dir }), 'FAILED_PRECONDITION', undefined, /in use by process/);
  });

  test('a half-written snapshot is ignored and removed; the last complete one loads', async (t) => {
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    await db.createCollection({ name: 'atomic', dimension: 2, distance: 'DOT' });
    await db.upsert('atomic', [{ id: 'a', vector: [1, 2] }]);
    await db.snapshot('atomic');
    await db.upsert('atomic', [{ id: 'b', vector: [3, 4] }]);
    // Indexed first: a graph build that finished after the snapshot would be saved again by close().
    await db.waitForIndexing('atomic');
    await db.snapshot('atomic');
    await db.close();
    // close() had nothing new to save; the second snapshot replaced the first, and the log segment
    // it started replaced the older ones.
    assert.deepEqual(
      readdirSync(join(dir, 'atomic')).sort(),
      ['2', 'wal-2.log'],
      'older snapshots and log segments are removed',
    );
    // A crash in the middle of snapshot 3: files but no manifest, under its temporary name.
    mkdirSync(join(dir, 'atomic', 'tmp-3'));
    writeFileSync(join(dir, 'atomic', 'tmp-3', 'vectors.f32'), 'partial');
    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => reopened.close());
    assert.equal((await reopened.collectionInfo('atomic')).points, 2);
    assert.ok(!existsSync(join(dir, 'atomic', 'tmp-3')));
  });

  test('a damaged or newer-format snapshot refuses to load, naming the problem', async (t) => {
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    await db.createCollection({ name: 'damaged', dimension: 2, distance: 'DOT' });
    await db.upsert('damaged', [{ id: 'a', vector: [1, 2] }]);
    await db.close();
    const snapshot = join(dir, 'damaged', readdirSync(join(dir, 'damaged'))[0]!);
    const vectors = readFileSync(join(snapshot, 'vectors.f32'));
    vectors[0] = vectors[0]! ^ 0xff;
    writeFileSync(join(snapshot, 'vectors.f32'), vectors);
    await rejectsWith(EmbeddedVectorDb.open({ dir }), 'FAILED_PRECONDITION', 'dir', /vectors\.f32/);
    vectors[0] = vectors[0]! ^ 0xff;
    writeFileSync(join(snapshot, 'vectors.f32'), vectors);
    const manifestPath = join(snapshot, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    writeFileSync(manifestPath, JSON.stringify({ ...manifest, version: 2 }));
    await rejectsWith(EmbeddedVectorDb.open({ dir }), 'FAILED_PRECONDITION', 'dir', /version 2/);
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const reopened = await EmbeddedVectorDb.open({ dir });
    await reopened.close();
  });

  test('a snapshot compacts: the graph is rebuilt without deleted points, rows are reused', async (t) => {
    const dir = tempDir(t);
    const fixture = clusteredFixture({ count: 1000, dimension: 8, clusters: 4, seed: 5 });
    // Indexed on the event loop (the stats below count worker builds: none).
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, workerBuildRows: 0 });
    await load(db, fixture, { name: 'compact', distance: 'EUCLIDEAN' });
    const doomed = fixture.ids.filter((_, i) => i % 5 !== 0);
    assert.equal(await db.delete('compact', doomed), 800);
    assert.deepEqual(db.storageStats('compact'), {
      rows: 1000,
      freeRows: 800,
      graphNodes: 1000,
      deletedGraphNodes: 800,
      compacting: false,
      buildingInWorker: false,
      workerBuilds: 0,
    });
    await db.snapshot('compact');
    assert.deepEqual(db.storageStats('compact'), {
      rows: 1000,
      freeRows: 800,
      graphNodes: 200,
      deletedGraphNodes: 0,
      compacting: false,
      buildingInWorker: false,
      workerBuilds: 0,
    });
    const query = fixture.queries(1, 9)[0]!;
    const truth = exactSearch(fixture.vectors, 8, query, 10, 'EUCLIDEAN', (row) => row % 5 === 0).indices.map(
      (row) => fixture.ids[row]!,
    );
    const [hits] = await db.search({
      collection: 'compact',
      queries: [{ vector: query }],
      limit: 10,
      indexedOnly: true,
    });
    assert.deepEqual(ids(hits), truth);
    // New points take the freed rows.
    await db.upsert('compact', [{ id: 'new', vector: fixture.vector(1) }]);
    assert.equal(db.storageStats('compact').rows, 1000);
    await db.waitForIndexing('compact');
    await db.close();
    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => reopened.close());
    const [again] = await reopened.search({ collection: 'compact', queries: [{ vector: query }], limit: 10 });
    assert.deepEqual(ids(again), truth);
    assert.equal(reopened.storageStats('compact').graphNodes, 201);
  });

  test('closing during a compaction abandons it and still saves the collection', async (t) => {
    const dir = tempDir(t);
    const fixture = clusteredFixture({ count: 3000, dimension: 32, clusters: 3, seed: 8 });
    // Short slices: the rebuild spans many turns of the event loop, so close() lands in the middle.
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, indexSliceMs: 1 });
    await load(db, fixture, { name: 'busy', distance: 'DOT' });
    await db.delete('busy', fixture.ids.slice(0, 1500));
    const snapshot = db.snapshot('busy');
    await eventually(() => db.storageStats('busy').compacting, 5000, 'the compaction to start');
    await db.close();
    await snapshot;
    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => reopened.close());
    assert.equal((await reopened.collectionInfo('busy')).points, 1500);
  });

  test('dropping a collection removes its snapshots', async (t) => {
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
    t.after(() => db.close());
    await db.createCollection({ name: 'gone', dimension: 2, distance: 'DOT' });
    await db.upsert('gone', [{ id: 'a', vector: [1, 2] }]);
    await db.snapshot();
    assert.ok(existsSync(join(dir, 'gone')));
    assert.equal(await db.dropCollection('gone'), true);
    assert.ok(!existsSync(join(dir, 'gone')));
  });
});

describe('embedded vector db: indexing', () => {
  test('a changed vector leaves the indexed space until it is re-indexed at its new place', async (t) => {
    const db = await EmbeddedVectorDb.open();
    t.after(() => db.close());
    await db.createCollection({ name: 'moves', dimension: 2, distance: 'EUCLIDEAN' });
    await db.upsert('moves', [
      { id: 'a', vector: [0, 0] },
      { id: 'b', vector: [10, 10] },
    ]);
    await db.waitForIndexing('moves');
    db.pauseIndexing('moves');
    await db.upsert('moves', [{ id: 'a', vector: [10, 11] }]);
    const near = { collection: 'moves', queries: [{ vector: [10, 11] }], limit: 2 };
    assert.deepEqual(ids((await db.search({ ...near, indexedOnly: true }))[0]), ['b']);
    assert.deepEqual(ids((await db.search(near))[0]), ['a', 'b']);
    // The same vector again changes nothing in the index.
    await db.upsert('moves', [{ id: 'b', vector: [10, 10], payload: { tag: 'x' } }]);
    assert.equal((await db.collectionInfo('moves')).indexedPoints, 1);
    db.resumeIndexing('moves');
    await db.waitForIndexing('moves');
    const [hits] = await db.search({ ...near, indexedOnly: true });
    assert.deepEqual(ids(hits), ['a', 'b']);
    assert.equal(hits![0]!.score, 0);
  });
});

describe('embedded vector db: request filters', () => {
  test('the rows a repeated request filter matched are recomputed after every kind of write', async (t) => {
    const db = await EmbeddedVectorDb.open();
    t.after(() => db.close());
    await db.createCollection({ name: 'member', dimension: 2, distance: 'EUCLIDEAN' });
    await db.upsert('member', [
      { id: 'a', vector: [0, 0], payload: { in: true } },
      { id: 'b', vector: [1, 0], payload: { in: false } },
      { id: 'c', vector: [2, 0], payload: { in: true } },
    ]);
    await db.waitForIndexing('member');
    // The same request-level filter each time, as a serving variant sends its membership filter.
    const search = async () =>
      ids(
        (
          await db.search({
            collection: 'member',
            queries: [{ vector: [0, 0] }],
            filters: [{ field: 'in', op: 'IN', values: ['true'] }],
            limit: 10,
            indexedOnly: true,
          })
        )[0],
      );
    assert.deepEqual(await search(), ['a', 'c']);
    assert.equal(await db.setPayload('member', ['b'], { in: true }), 1);
    assert.deepEqual(await search(), ['a', 'b', 'c']);
    assert.equal(await db.delete('member', ['a']), 1);
    assert.deepEqual(await search(), ['b', 'c']);
    await db.upsert('member', [{ id: 'd', vector: [3, 0], payload: { in: true } }]);
    await db.waitForIndexing('member');
    assert.deepEqual(await search(), ['b', 'c', 'd']);
    await db.upsert('member', [{ id: 'c', vector: [2, 0], payload: { in: false } }]);
    assert.deepEqual(await search(), ['b', 'd']);
  });
});

describe('embedded vector db: planner and recall (5,000 × 32 clustered)', () => {
  const fixture = clusteredFixture({
    count: 5000,
    dimension: 32,
    clusters: 2,
    seed: 42,
    flags: { half: 0.5, tenth: 0.1, rare: 0.005 },
  });
  const queries = fixture.queries(100, 7);
  const truthFor = (flag: string | undefined, k = 10) =>
    queries.map((query) =>
      exactSearch(
        fixture.vectors,
        32,
        query,
        k,
        'EUCLIDEAN',
        flag ? (row) => fixture.payloads[row]![flag] === true : undefined,
      ).indices.map((row) => fixture.ids[row]!),
    );
  const flagFilter = (flag: string): Filter[] => [{ field: flag, op: 'IN', values: ['true'] }];
  let db: EmbeddedVectorDb;
  before(async () => {
    db = await EmbeddedVectorDb.open();
    await load(db, fixture, { name: 'defaults', distance: 'EUCLIDEAN' });
    await load(db, fixture, { name: 'ef16', distance: 'EUCLIDEAN', hnsw: { efSearch: 16 } });
  });
  after(() => db?.close());
  const searchAll = async (collection: string, filters: Filter[] = [], limit = 10) =>
    (
      await db.search({
        collection,
        queries: queries.map((vector) => ({ vector })),
        filters,
        limit,
        indexedOnly: true,
      })
    ).map(ids);

  test('the planner scans selective filters exactly and walks the graph for broad ones', async () => {
    const plans = async (filters: Filter[], limit = 10) =>
      (
        await db.explain({
          collection: 'defaults',
          queries: [{ vector: queries[0]! }],
          filters,
          limit,
        })
      )[0]!.plan;
    assert.deepEqual(await plans(flagFilter('rare')), { path: 'exact', candidates: 25 });
    assert.deepEqual(await plans(flagFilter('half')), {
      path: 'graph',
      candidates: 2500,
      ef: HNSW_DEFAULTS.efSearch,
      filtered: true,
    });
    assert.deepEqual(await plans([]), {
      path: 'graph',
      candidates: 5000,
      ef: HNSW_DEFAULTS.efSearch,
      filtered: false,
    });
    // At 5,000 points a 10 % filter (500 candidates) is still cheaper to scan: the rule scales with size.
    assert.equal((await plans(flagFilter('tenth'))).path, 'exact');
    // Deep searches raise ef to the depth, and a deep enough one is scanned.
    assert.deepEqual(await plans([], 200), { path: 'graph', candidates: 5000, ef: 200, filtered: false });
    assert.equal((await plans(flagFilter('half'), 2010)).path, 'exact');
    const before = db.searchStats('defaults');
    await searchAll('defaults', flagFilter('rare'));
    await searchAll('defaults', flagFilter('half'));
    const after = db.searchStats('defaults');
    assert.equal(after.exactScans - before.exactScans, 100);
    assert.equal(after.filteredGraphSearches - before.filteredGraphSearches, 100);
    assert.equal(after.fallbacks, 0);
  });

  test('filtered queries return exactly limit hits when that many match, with high recall', async () => {
    for (const [flag, limit, matching] of [
      ['rare', 10, 25],
      ['rare', 30, 25],
      ['half', 100, 2500],
      ['half', 350, 2500],
    ] as const) {
      const found = await searchAll('defaults', flagFilter(flag), limit);
      for (const hits of found)
        assert.equal(hits.length, Math.min(limit, matching), `${flag} limit ${limit}`);
    }
    const halfTruth = truthFor('half');
    assert.ok(recall(await searchAll('defaults', flagFilter('half')), halfTruth) >= 0.95);
    assert.equal(recall(await searchAll('defaults', flagFilter('rare')), truthFor('rare')), 1);
  });

  test('recall@10 is at least 0.95 at the default ef and below 0.9 at ef 16', async () => {
    const truth = truthFor(undefined);
    const atDefaults = recall(await searchAll('defaults'), truth);
    const atEf16 = recall(await searchAll('ef16'), truth);
    console.log(
      `# recall@10 on 5,000 × 32 clustered: ${atDefaults.toFixed(3)} at ef 64, ${atEf16.toFixed(3)} at ef 16`,
    );
    assert.ok(atDefaults >= 0.95, `recall at defaults ${atDefaults}`);
    assert.ok(atEf16 < 0.9, `recall at ef 16 ${atEf16} should show the fixture is not trivial`);
  });
});
