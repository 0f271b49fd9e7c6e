/**
 * The embedded vector DB's write-ahead log. A "crash image" is a copy of the data directory taken
 * while the database is open, after the calls of interest were acknowledged and with no snapshot
 * since: exactly what a process killed at that moment leaves on disk (the lock file sits beside the
 * directory, so the copy is not locked). Opening the image must bring back every acknowledged write.
 */
import assert from 'node:assert/strict';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { WriteAheadLog } from '../../../src/platform/vectordb/embedded/storage/write-ahead-log.js';
import { EmbeddedVectorDb, type PointInput } from '../../../src/platform/vectordb/index.js';
import { eventually } from '../../support/servers.js';
import { rejectsWith } from './contract.js';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-wal-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Copies the open database's directory: what a SIGKILL now would leave behind. */
function crashImage(dir: string, name = 'image'): string {
  const image = join(dir, name);
  cpSync(join(dir, 'db'), image, { recursive: true });
  return image;
}

const open = (dir: string) => EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });

const point = (id: string, i: number, payload: PointInput['payload'] = { i, even: i % 2 === 0 }) => ({
  id,
  vector: [i, -i / 3, Math.fround(Math.PI * i)],
  payload,
});

const files = (dir: string) => readdirSync(dir).sort();

describe('embedded vector db: write-ahead log', () => {
  test('acknowledged writes come back from the log alone: creates, upserts, deletes, payloads, drops', async (t) => {
    const dir = tempDir(t);
    const db = await open(join(dir, 'db'));
    t.after(() => db.close());
    await db.createCollection({ name: 'kept', dimension: 3, distance: 'COSINE', hnsw: { m: 8 } });
    await db.createCollection({ name: 'empty', dimension: 2, distance: 'DOT' });
    await db.createCollection({ name: 'dropped', dimension: 2, distance: 'DOT' });
    await db.upsert('dropped', [{ id: 'x', vector: [1, 1] }]);
    assert.equal(await db.dropCollection('dropped'), true);
    // Ids that UTF-8 could not carry, and concurrent calls (one group commit).
    const odd = ['lone \ud800 surrogate', 'emoji 😀', 'quote " and \\ backslash'];
    await Promise.all([
      db.upsert('kept', [point('a', 1), point('b', 2), point('c', 3)]),
      db.upsert(
        'kept',
        odd.map((id, i) => point(id, 10 + i, { tags: ['t1', 't2'], label: id })),
      ),
      db.upsert('kept', [point('d', 4), point('e', 5)]),
    ]);
    assert.equal(await db.delete('kept', ['b', 'nope']), 1);
    assert.equal(await db.setPayload('kept', ['c', 'nope'], { even: true, added: 'yes' }), 1);
    await db.upsert('kept', [point('a', 7)]); // replaces vector and payload
    const expected = await db.getPoints('kept', ['a', 'b', 'c', 'd', 'e', ...odd]);

    const image = crashImage(dir);
    assert.deepEqual(files(join(image, 'kept')), ['wal-0.log'], 'no snapshot was written');
    const reopened = await open(image);
    t.after(() => reopened.close());
    assert.deepEqual(await reopened.listCollections(), ['empty', 'kept']);
    const kept = await reopened.collectionInfo('kept');
    assert.deepEqual([kept.dimension, kept.distance, kept.hnsw.m, kept.points], [3, 'COSINE', 8, 7]);
    assert.deepEqual(await reopened.getPoints('kept', ['a', 'b', 'c', 'd', 'e', ...odd]), expected);
    assert.equal((await reopened.collectionInfo('empty')).points, 0);
    // Replayed points are indexed in the background.
    await reopened.waitForIndexing('kept');
    const [hits] = await reopened.search({
      collection: 'kept',
      queries: [{ vector: [4, -4 / 3, Math.fround(Math.PI * 4)] }],
      limit: 1,
      indexedOnly: true,
    });
    assert.equal(hits?.[0]?.id, 'd');
  });

  test('group commit: calls made while the log is busy share one write and one fdatasync', async (t) => {
    const dir = tempDir(t);
    const wal = WriteAheadLog.open(dir, 0, { name: 'groups' });
    t.after(() => wal.close());
    // Calls made in one turn of the event loop go out together.
    await Promise.all(Array.from({ length: 100 }, (_, i) => wal.appendDelete([`id${i}`])));
    assert.deepEqual(wal.stats, { groups: 1, records: 100 });
    // A large call goes out at once; the calls behind it wait for its fdatasync and share the next.
    const vector = new Float32Array(128);
    const large = Array.from({ length: 200 }, (_, i) => ({ id: `p${i}`, vector, payload: {} }));
    await Promise.all([
      wal.appendUpsert(large, 128),
      ...Array.from({ length: 10 }, () => wal.appendDelete(['x'])),
    ]);
    assert.deepEqual(wal.stats, { groups: 3, records: 111 });
    let replayed = 0;
    WriteAheadLog.replay(dir, 0, () => replayed++);
    assert.equal(replayed, 111);
  });

  test('an upsert is acknowledged before it is indexed, and is durable', async (t) => {
    const dir = tempDir(t);
    const db = await open(join(dir, 'db'));
    t.after(() => db.close());
    await db.createCollection({ name: 'held', dimension: 3, distance: 'EUCLIDEAN' });
    db.pauseIndexing('held');
    await db.upsert('held', [point('a', 1), point('b', 2)]);
    assert.deepEqual((await db.collectionInfo('held')).indexedPoints, 0);
    const reopened = await open(crashImage(dir));
    t.after(() => reopened.close());
    await reopened.waitForIndexing('held');
    const info = await reopened.collectionInfo('held');
    assert.deepEqual([info.points, info.indexedPoints], [2, 2]);
  });

  test('a torn record at the end of the log is ignored and cut off; appends then follow the good records', async (t) => {
    const dir = tempDir(t);
    const db = await open(join(dir, 'db'));
    t.after(() => db.close());
    await db.createCollection({ name: 'torn', dimension: 3, distance: 'DOT' });
    await db.upsert('torn', [point('a', 1)]);
    const log = join(dir, 'db', 'torn', 'wal-0.log');
    const goodLength = statSync(log).size;
    await db.upsert('torn', [point('b', 2), point('c', 3)]);
    const fullLength = statSync(log).size;

    // The second upsert cut short at every kind of place: inside the header, inside the body.
    for (const cut of [goodLength + 3, goodLength + 8, goodLength + 20, fullLength - 1]) {
      const image = crashImage(dir, `cut-${cut}`);
      truncateSync(join(image, 'torn', 'wal-0.log'), cut);
      const reopened = await open(image);
      assert.deepEqual(
        (await reopened.getPoints('torn', ['a', 'b', 'c'], { withVector: false })).map((p) => p?.id),
        ['a', undefined, undefined],
        `cut at ${cut}: never half a call`,
      );
      assert.equal(statSync(join(image, 'torn', 'wal-0.log')).size, goodLength, 'the torn tail is cut off');
      await reopened.upsert('torn', [point('d', 4)]);
      // Closing snapshots; the log is what matters here, so reopen from a crash image instead.
      cpSync(image, `${image}-again`, { recursive: true });
      await reopened.close();
      const after = await open(`${image}-again`);
      assert.deepEqual(
        (await after.getPoints('torn', ['a', 'd'], { withVector: false })).map((p) => p?.id),
        ['a', 'd'],
      );
      await after.close();
    }

    // A flipped byte inside the last record fails its checksum the same way.
    const image = crashImage(dir, 'flipped');
    const bytes = readFileSync(join(image, 'torn', 'wal-0.log'));
    bytes[fullLength - 40] = bytes[fullLength - 40]! ^ 0x01;
    writeFileSync(join(image, 'torn', 'wal-0.log'), bytes);
    const reopened = await open(image);
    t.after(() => reopened.close());
    assert.equal((await reopened.collectionInfo('torn')).points, 1);
  });

  test('a snapshot starts a new log segment and deletes the ones it replaces', async (t) => {
    const dir = tempDir(t);
    const db = await open(join(dir, 'db'));
    t.after(() => db.close());
    await db.createCollection({ name: 'snap', dimension: 3, distance: 'DOT' });
    await db.upsert('snap', [point('a', 1), point('b', 2)]);
    const collectionDir = join(dir, 'db', 'snap');
    assert.deepEqual(files(collectionDir), ['wal-0.log']);
    await db.snapshot('snap');
    assert.deepEqual(files(collectionDir), ['1', 'wal-1.log']);
    assert.equal(statSync(join(collectionDir, 'wal-1.log')).size, 8, 'the new segment holds its header only');
    await db.delete('snap', ['a']);
    await db.upsert('snap', [point('c', 3)]);
    assert.ok(statSync(join(collectionDir, 'wal-1.log')).size > 8);

    const reopened = await open(crashImage(dir));
    t.after(() => reopened.close());
    assert.deepEqual(
      (await reopened.getPoints('snap', ['a', 'b', 'c'], { withVector: false })).map((p) => p?.id),
      [undefined, 'b', 'c'],
    );
    await db.snapshot('snap');
    assert.deepEqual(files(collectionDir), ['2', 'wal-2.log']);
  });

  test('a log that outgrows walSnapshotBytes triggers a snapshot', async (t) => {
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, walSnapshotBytes: 4096 });
    t.after(() => db.close());
    await db.createCollection({ name: 'big', dimension: 64, distance: 'DOT' });
    const points = Array.from({ length: 40 }, (_, i) => ({
      id: `p${i}`,
      vector: new Float32Array(64).fill(i),
    }));
    await db.upsert('big', points);
    const collectionDir = join(dir, 'big');
    await eventually(() => existsSync(join(collectionDir, '1')), 10_000, 'an early snapshot to be written');
  });

  test('damage before the newest segment fails the open, naming the file', async (t) => {
    const dir = tempDir(t);
    const db = await open(join(dir, 'db'));
    t.after(() => db.close());
    await db.createCollection({ name: 'hurt', dimension: 3, distance: 'DOT' });
    await db.snapshot('hurt');
    await db.upsert('hurt', [point('a', 1)]);
    const image = crashImage(dir);
    // As if the snapshot that started segment 2 had failed: segment 1 is no longer the newest.
    const segment1 = readFileSync(join(image, 'hurt', 'wal-1.log'));
    writeFileSync(join(image, 'hurt', 'wal-2.log'), segment1.subarray(0, 8));
    segment1[segment1.length - 5] = segment1[segment1.length - 5]! ^ 0xff;
    writeFileSync(join(image, 'hurt', 'wal-1.log'), segment1);
    await rejectsWith(open(image), 'FAILED_PRECONDITION', 'dir', /wal-1\.log is damaged/);
  });

  test('a creation cut short before its record reached the disk leaves nothing behind', async (t) => {
    const dir = tempDir(t);
    const db = await open(join(dir, 'db'));
    t.after(() => db.close());
    await db.createCollection({ name: 'born', dimension: 3, distance: 'DOT' });
    const image = crashImage(dir);
    truncateSync(join(image, 'born', 'wal-0.log'), 12);
    const reopened = await open(image);
    t.after(() => reopened.close());
    assert.deepEqual(await reopened.listCollections(), []);
    assert.ok(!existsSync(join(image, 'born')));
    // The name is free again.
    await reopened.createCollection({ name: 'born', dimension: 5, distance: 'EUCLIDEAN' });
    assert.equal((await reopened.collectionInfo('born')).dimension, 5);
  });

  test('without the log (wal: false) writes since the last snapshot are lost on a crash', async (t) => {
    const dir = tempDir(t);
    const db = await EmbeddedVectorDb.open({ dir: join(dir, 'db'), wal: false, snapshotIntervalMs: 0 });
    t.after(() => db.close());
    await db.createCollection({ name: 'loose', dimension: 3, distance: 'DOT' });
    await db.upsert('loose', [point('a', 1)]);
    const reopened = await open(crashImage(dir));
    t.after(() => reopened.close());
    assert.deepEqual(await reopened.listCollections(), []);
  });
});
