/**
 * What the embedded vector DB serves after a restart: the graph it had built, not the graph of an
 * older snapshot. A snapshot is forced in the middle of a build (the indexer paused with half the
 * points still pending, so the snapshot holds a half-built graph), the build then finishes and
 * searches answer; after a clean restart the same `indexedOnly` searches (what vss serving sends)
 * must give the same answers, and after a crash (a copy of the directory taken at that moment) the
 * same recall from the first search.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { EmbeddedVectorDb, type SearchHit } from '../../../src/platform/vectordb/index.js';
import { seededVector } from '../../support/vss-ingest-catalog.js';

const DIMENSION = 8;
const POINTS = 8_000;
const QUERIES = 50;
const K = 10;
const NAME = 'served';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-restart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const open = (dir: string) =>
  // In-process indexing: the test decides when the build is half done (pauseIndexing). Snapshots are
  // on (a build-end snapshot needs them), their period longer than the test.
  EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 3_600_000, workerBuildRows: 0 });

const points = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => ({
    id: `p${from + i}`,
    vector: seededVector(from + i + 1, DIMENSION),
  }));

const queries = Array.from({ length: QUERIES }, (_, i) => seededVector(1_000_000 + i, DIMENSION));

async function served(db: EmbeddedVectorDb): Promise<string[][]> {
  const hits: SearchHit[][] = await db.search({
    collection: NAME,
    queries: queries.map((vector) => ({ vector })),
    limit: K,
    indexedOnly: true,
  });
  return hits.map((row) => row.map((hit) => hit.id));
}

/** The exact top K of every query over all points (EUCLIDEAN). */
function exactTopK(): string[][] {
  const all = points(0, POINTS);
  return queries.map((q) =>
    all
      .map((p) => ({ id: p.id, d: p.vector.reduce((sum, v, i) => sum + (v - q[i]!) ** 2, 0) }))
      .sort((a, b) => a.d - b.d)
      .slice(0, K)
      .map((p) => p.id),
  );
}

function recall(answers: string[][], truth: string[][]): number {
  let found = 0;
  answers.forEach((ids, i) => {
    const expected = new Set(truth[i]);
    for (const id of ids) if (expected.has(id)) found++;
  });
  return found / (truth.length * K);
}

/** Builds the collection with a snapshot forced when half its points are in the graph. */
async function buildWithSnapshotMidway(dir: string): Promise<EmbeddedVectorDb> {
  const db = await open(dir);
  await db.createCollection({ name: NAME, dimension: DIMENSION, distance: 'EUCLIDEAN' });
  await db.upsert(NAME, points(0, POINTS / 2));
  await db.waitForIndexing(NAME);
  db.pauseIndexing(NAME);
  await db.upsert(NAME, points(POINTS / 2, POINTS));
  await db.snapshot(NAME); // the graph holds half the points, the rest are pending
  db.resumeIndexing(NAME);
  await db.waitForIndexing(NAME);
  return db;
}

describe('embedded vector db: a restart serves the index it had built', () => {
  const truth = exactTopK();

  test('a clean restart after a snapshot taken mid-build answers exactly as before it', async (t) => {
    const dir = join(tempDir(t), 'db');
    const before = await buildWithSnapshotMidway(dir);
    const answers = await served(before);
    const recallBefore = recall(answers, truth);
    assert.ok(recallBefore > 0.9, `recall before the restart: ${recallBefore}`);
    assert.equal((await before.collectionInfo(NAME)).indexedPoints, POINTS);
    await before.close();

    const after = await open(dir);
    t.after(() => after.close());
    after.pauseIndexing(NAME); // what the first search after the restart sees, before any rebuild
    const info = await after.collectionInfo(NAME);
    assert.equal(info.indexedPoints, POINTS, 'the finished graph was saved at shutdown');
    assert.deepEqual(await served(after), answers);
    assert.equal(recall(await served(after), truth), recallBefore);
  });

  test('the end of a build is saved: a crash after it restarts with the whole graph', async (t) => {
    const root = tempDir(t);
    const dir = join(root, 'db');
    const before = await buildWithSnapshotMidway(dir);
    t.after(() => before.close());
    const answers = await served(before);
    // The end-of-build snapshot is written in the background: poll for it through crash images.
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      const image = join(root, `image-${attempt}`);
      cpSync(dir, image, { recursive: true });
      const after = await open(image);
      after.pauseIndexing(NAME);
      const { indexedPoints } = await after.collectionInfo(NAME);
      const same = indexedPoints === POINTS ? await served(after) : undefined;
      await after.close();
      if (same) {
        assert.deepEqual(same, answers);
        break;
      }
      assert.ok(Date.now() < deadline, `the built graph was never saved (${indexedPoints} of ${POINTS})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  test('after a crash with the graph half saved, the first search has the recall of before', async (t) => {
    const root = tempDir(t);
    const dir = join(root, 'db');
    const db = await open(dir);
    t.after(() => db.close());
    await db.createCollection({ name: NAME, dimension: DIMENSION, distance: 'EUCLIDEAN' });
    await db.upsert(NAME, points(0, POINTS / 2));
    await db.waitForIndexing(NAME);
    db.pauseIndexing(NAME);
    await db.upsert(NAME, points(POINTS / 2, POINTS));
    await db.snapshot(NAME);
    const image = join(root, 'image');
    cpSync(dir, image, { recursive: true }); // SIGKILL now: half the graph on disk
    db.resumeIndexing(NAME);
    await db.waitForIndexing(NAME);
    const recallBefore = recall(await served(db), truth);

    const after = await open(image);
    t.after(() => after.close());
    after.pauseIndexing(NAME); // the rebuild has not caught up yet
    const info = await after.collectionInfo(NAME);
    assert.equal(info.indexedPoints, POINTS / 2);
    const recallAfter = recall(await served(after), truth);
    assert.ok(recallAfter >= recallBefore, `recall ${recallAfter} after the crash, ${recallBefore} before`);
  });
});
