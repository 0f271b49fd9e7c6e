/**
 * Graph builds on the worker thread (src/platform/vectordb/embedded/index/worker-round.ts): the built graph
 * is the in-process one, writes during a build are in the graph after the swap, close / drop /
 * snapshots during a build, and the worker loads however the sources are started.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/embedded/collection/embedded-vector-db.js';
import type { DistanceFunction, PointInput, SearchHit } from '../../../src/platform/vectordb/vector-db.js';
import { eventually } from '../../support/servers.js';
import { clusteredFixture, exactSearch, type VectorFixture } from '../../support/vector-fixtures.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-worker-build-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function points(fixture: VectorFixture, from = 0, to = fixture.count): PointInput[] {
  const out: PointInput[] = [];
  for (let i = from; i < to; i++) {
    out.push({ id: fixture.ids[i]!, vector: Array.from(fixture.vector(i)), payload: { n: i } });
  }
  return out;
}

async function create(db: EmbeddedVectorDb, name: string, dimension: number, distance: DistanceFunction) {
  await db.createCollection({ name, dimension, distance });
}

const ids = (hits: SearchHit[] | undefined) => (hits ?? []).map((hit) => hit.id);

async function building(db: EmbeddedVectorDb, name: string): Promise<void> {
  await eventually(() => db.storageStats(name).buildingInWorker, 10_000, 'a worker build to start');
}

describe('embedded vector db: graph builds on a worker thread', () => {
  test('the worker builds the graph the in-process indexer builds: same hits and scores', async (t) => {
    const fixture = clusteredFixture({ count: 3000, dimension: 24, clusters: 6, seed: 21 });
    const inProcess = await EmbeddedVectorDb.open({ workerBuildRows: 0 });
    const inWorker = await EmbeddedVectorDb.open({ workerBuildRows: 1000 });
    t.after(() => Promise.all([inProcess.close(), inWorker.close()]));
    for (const db of [inProcess, inWorker]) {
      await create(db, 'same', 24, 'COSINE');
      // Two rounds: the second builds on the graph the worker kept from the first.
      await db.upsert('same', points(fixture, 0, 1500));
      await db.waitForIndexing('same');
      await db.upsert('same', points(fixture, 1500));
      await db.waitForIndexing('same');
    }
    assert.equal(inProcess.storageStats('same').workerBuilds, 0);
    assert.equal(inWorker.storageStats('same').workerBuilds, 2);
    assert.equal(inWorker.storageStats('same').lastWorkerRound?.synced, 0);
    const queries = fixture.queries(300, 77).map((vector) => ({ vector }));
    const request = { collection: 'same', queries, limit: 10, indexedOnly: true };
    const [plan] = await inWorker.explain(request);
    assert.equal(plan!.plan.path, 'graph');
    const [expected, actual] = await Promise.all([inProcess.search(request), inWorker.search(request)]);
    assert.equal(actual.length, 300);
    assert.deepEqual(actual, expected);
    const { lastWorkerRound: _, ...stats } = inWorker.storageStats('same');
    assert.deepEqual(stats, { ...inProcess.storageStats('same'), workerBuilds: 2 });
  });

  const rounds: [name: string, parallelFrom: number][] = [
    ['both rounds on one thread', 0],
    ['the second round on the native parallel builder, from the graph the worker kept', 2000],
    ["both rounds on the native parallel builder, the second from the serving graph's file", 1000],
  ];
  for (const [name, parallelFrom] of rounds) {
    test(`upserts and deletes made during a build are in the graph after the swap (${name})`, async (t) => {
      await writesDuringBuild(t, parallelFrom);
    });
  }

  test('close during a build ends the worker; the rows are saved pending and indexed after reopening', async (t) => {
    const dir = tempDir(t);
    const fixture = clusteredFixture({ count: 8000, dimension: 32, clusters: 4, seed: 9 });
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, workerBuildRows: 1000 });
    await create(db, 'closing', 32, 'DOT');
    await db.upsert('closing', points(fixture));
    await building(db, 'closing');
    await db.close();
    const scratch = join(dir, '.graph-builds');
    assert.deepEqual(existsSync(scratch) ? readdirSync(scratch) : [], [], 'no graph file is left');

    const reopened = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, workerBuildRows: 1000 });
    t.after(() => reopened.close());
    const before = await reopened.collectionInfo('closing');
    assert.equal(before.points, 8000);
    await reopened.waitForIndexing('closing');
    assert.equal((await reopened.collectionInfo('closing')).indexedPoints, 8000);
    assert.equal(reopened.storageStats('closing').workerBuilds, 1);
  });

  test('dropping a collection during its build ends the worker; the next build runs', async (t) => {
    const fixture = clusteredFixture({ count: 4000, dimension: 16, clusters: 4, seed: 2 });
    const db = await EmbeddedVectorDb.open({ workerBuildRows: 1000 });
    t.after(() => db.close());
    await create(db, 'dropped', 16, 'EUCLIDEAN');
    await db.upsert('dropped', points(fixture));
    await building(db, 'dropped');
    assert.equal(await db.dropCollection('dropped'), true);
    await create(db, 'next', 16, 'EUCLIDEAN');
    await db.upsert('next', points(fixture));
    await db.waitForIndexing('next');
    assert.equal(db.storageStats('next').workerBuilds, 1);
  });

  test('a snapshot during a build saves the batch pending; a copy of the directory then (a crash) reloads whole', async (t) => {
    const dir = tempDir(t);
    const crashed = tempDir(t);
    const fixture = clusteredFixture({ count: 9000, dimension: 32, clusters: 6, seed: 14 });
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, workerBuildRows: 1000 });
    await create(db, 'snap', 32, 'COSINE');
    await db.upsert('snap', points(fixture, 0, 2000));
    await db.waitForIndexing('snap');
    assert.equal(db.storageStats('snap').workerBuilds, 1);
    await db.upsert('snap', points(fixture, 2000, 9000));
    await building(db, 'snap');
    await db.delete('snap', fixture.ids.slice(0, 10));
    await db.snapshot('snap');
    assert.ok(db.storageStats('snap').buildingInWorker, 'the snapshot was taken during the build');
    // What a crash now would leave: the snapshot, the log and the build's scratch files.
    cpSync(dir, join(crashed, 'db'), { recursive: true });

    await db.waitForIndexing('snap');
    const queries = fixture.queries(20, 8).map((vector) => ({ vector }));
    const request = { collection: 'snap', queries, limit: 10 };
    const live = await db.search(request);
    await db.close();

    for (const path of [dir, join(crashed, 'db')]) {
      const again = await EmbeddedVectorDb.open({ dir: path, snapshotIntervalMs: 0, workerBuildRows: 1000 });
      try {
        assert.ok(
          !existsSync(join(path, '.graph-builds')) || readdirSync(join(path, '.graph-builds')).length === 0,
        );
        const info = await again.collectionInfo('snap');
        assert.equal(info.points, 8990);
        await again.waitForIndexing('snap');
        assert.equal((await again.collectionInfo('snap')).indexedPoints, 8990);
        const results = await again.search(request);
        // Same points and scores; ids may differ only where a rebuilt graph found other near-ties.
        for (let q = 0; q < queries.length; q++) {
          const truth = exactSearch(
            fixture.vectors,
            32,
            queries[q]!.vector,
            10,
            'COSINE',
            (row) => row >= 10,
          );
          const found = new Set(ids(results[q]));
          const hit = truth.indices.filter((row) => found.has(fixture.ids[row]!)).length;
          assert.ok(hit >= 9, `query ${q}: ${hit}/10 of the exact top 10`);
        }
        if (path === dir) assert.deepEqual(results, live);
      } finally {
        await again.close();
      }
    }
  });

  test('a compaction asked for during a build runs after the swap and keeps every point', async (t) => {
    const fixture = clusteredFixture({ count: 5000, dimension: 16, clusters: 4, seed: 31 });
    const db = await EmbeddedVectorDb.open({ workerBuildRows: 1000 });
    t.after(() => db.close());
    await create(db, 'both', 16, 'EUCLIDEAN');
    await db.upsert('both', points(fixture, 0, 1000));
    await db.waitForIndexing('both');
    await db.delete('both', fixture.ids.slice(0, 500));
    await db.upsert('both', points(fixture, 1000, 5000));
    await building(db, 'both');
    await db.compact('both');
    await db.waitForIndexing('both');
    const stats = db.storageStats('both');
    assert.equal(stats.deletedGraphNodes, 0);
    assert.equal(stats.graphNodes, 4500);
    assert.equal((await db.collectionInfo('both')).indexedPoints, 4500);
  });
});

describe('embedded vector db: the graph worker loads however the sources run', () => {
  const script = 'test/platform/vectordb/fixtures/worker-build-run';
  const run = (args: string[], cwd = repo) => {
    const result = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 60_000 });
    assert.equal(result.status, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /failed/);
    assert.deepEqual(JSON.parse(result.stdout.trim()), { workerBuilds: 1, indexedPoints: 500 });
  };

  test('TypeScript under node --import tsx (the tests, npm scripts)', () => {
    run(['--import', 'tsx', `${script}.ts`]);
  });

  test('TypeScript with tsx registered at run time (bin/lattice.js)', () => {
    run([
      '--input-type=module',
      '-e',
      `const { register } = await import('tsx/esm/api'); register(); await import('./${script}.ts');`,
    ]);
  });

  test('JavaScript compiled by tsc', (t) => {
    const out = tempDir(t);
    writeFileSync(
      join(out, 'tsconfig.json'),
      JSON.stringify({
        extends: join(repo, 'tsconfig.json'),
        compilerOptions: {
          noEmit: false,
          outDir: join(out, 'dist'),
          rootDir: repo,
          typeRoots: [join(repo, 'node_modules/@types')],
        },
        include: [join(repo, 'src'), join(repo, `${script}.ts`)],
      }),
    );
    const tsc = spawnSync(join(repo, 'node_modules/.bin/tsc'), ['-p', join(out, 'tsconfig.json')], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.ok(
      existsSync(join(out, 'dist', `${script}.js`)),
      `tsc emitted nothing: ${tsc.stdout}${tsc.stderr}`,
    );
    writeFileSync(join(out, 'dist/package.json'), '{"type":"module"}');
    symlinkSync(join(repo, 'node_modules'), join(out, 'dist/node_modules'));
    run([join(out, 'dist', `${script}.js`)], out);
  });
});

/**
 * A build with deletes and moves between rounds and during the second one (1,500 rows, then 3,500).
 * Rounds of `parallelFrom` rows or more (0: none) go to the native parallel builder on two threads;
 * a round on one thread keeps its graph, so the next one syncs it; a parallel one does not, so the
 * next starts from the serving graph's file.
 */
async function writesDuringBuild(
  t: { after: (fn: () => Promise<void>) => void },
  parallelFrom: number,
): Promise<void> {
  const fixture = clusteredFixture({ count: 6000, dimension: 32, clusters: 5, seed: 3 });
  const db = await EmbeddedVectorDb.open({
    workerBuildRows: 1000,
    parallelBuildRows: parallelFrom,
    buildThreads: 2,
  });
  t.after(() => db.close());
  await create(db, 'moving', 32, 'EUCLIDEAN');
  await db.upsert('moving', points(fixture, 0, 1500));
  await db.waitForIndexing('moving');
  assert.equal(db.storageStats('moving').workerBuilds, 1);
  // Between rounds, in the serving graph (in-process): deletes and moves the worker's copy lacks.
  const deletedBefore = fixture.ids.slice(1400, 1450);
  await db.delete('moving', deletedBefore);
  const movedBefore = fixture.ids.slice(1450, 1500);
  const movedBeforeTo = (i: number) => Array.from(fixture.vector(i), (x) => x - 10);
  await db.upsert(
    'moving',
    movedBefore.map((id, i) => ({ id, vector: movedBeforeTo(i) })),
  );
  await db.waitForIndexing('moving');
  await db.upsert('moving', points(fixture, 1500, 5000));
  await building(db, 'moving');
  // During the second build (onto the first graph): deletes, new vectors for points in the serving
  // graph and for points of the batch, new points.
  const deletedDuring = [...fixture.ids.slice(0, 100), ...fixture.ids.slice(2000, 2100)];
  assert.equal(await db.delete('moving', deletedDuring), 200);
  const deleted = [...deletedBefore, ...deletedDuring];
  const moved = [...fixture.ids.slice(200, 250), ...fixture.ids.slice(3000, 3050)];
  const movedTo = (i: number) => Array.from(fixture.vector(5000 + i), (x) => x + 10);
  await db.upsert(
    'moving',
    moved.map((id, i) => ({ id, vector: movedTo(i) })),
  );
  await db.upsert('moving', points(fixture, 5000, 5800)); // with the 100 moved: a backlog under 1,000 after the swap
  // Searches during the build scan the pending rows exactly.
  const probe = { collection: 'moving', queries: [{ vector: movedTo(7) }], limit: 1 };
  assert.deepEqual(ids((await db.search(probe))[0]), [moved[7]]);
  assert.equal((await db.collectionInfo('moving')).status, 'INDEXING');
  assert.ok(db.storageStats('moving').buildingInWorker, 'the writes landed during the build');

  await db.waitForIndexing('moving');
  const info = await db.collectionInfo('moving');
  assert.equal(info.points, 5550);
  assert.equal(info.indexedPoints, 5550);
  assert.equal(info.status, 'READY');
  const stats = db.storageStats('moving');
  assert.equal(stats.workerBuilds, 2);
  if (parallelFrom === 0 || parallelFrom > 1500) {
    assert.equal(stats.lastWorkerRound?.synced, 100, 'the worker copy was brought up to date, not resent');
  } else {
    assert.equal(stats.lastWorkerRound?.synced, -1, 'a parallel build is not kept: the graph went as a file');
  }
  assert.equal(stats.lastWorkerRound?.threads, parallelFrom === 0 ? 1 : 2);
  assert.equal(stats.graphNodes - stats.deletedGraphNodes, 5550);

  // From the graph alone: moved points at their new place, deleted ones gone, new ones there.
  const graphOnly = async (vector: number[]) =>
    ids((await db.search({ collection: 'moving', queries: [{ vector }], limit: 1, indexedOnly: true }))[0]);
  for (let i = 0; i < 100; i += 7) assert.deepEqual(await graphOnly(movedTo(i)), [moved[i]]);
  for (let i = 0; i < 50; i += 7) assert.deepEqual(await graphOnly(movedBeforeTo(i)), [movedBefore[i]]);
  for (let i = 5000; i < 5800; i += 97) {
    assert.deepEqual(await graphOnly(Array.from(fixture.vector(i))), [fixture.ids[i]]);
  }
  const queries = fixture.queries(50, 5);
  const results = await db.search({
    collection: 'moving',
    queries: queries.map((vector) => ({ vector })),
    limit: 10,
    indexedOnly: true,
  });
  const gone = new Set(deleted);
  for (const hits of results) for (const id of ids(hits)) assert.ok(!gone.has(id), `${id} was deleted`);
}
