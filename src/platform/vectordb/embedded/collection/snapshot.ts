/**
 * Snapshots of embedded collections on disk, format version 1. Layout under the data directory:
 *
 *   <dir>/<collection>/<seq>/manifest.json   format, version, collection spec, counts, file sizes and SHA-256
 *                            graph.hnsw      the hnswlib graph (labels are row numbers)
 *                            vectors.f32     highWater × dimension float32, little-endian, by row
 *                            rows.u8         per row: bits 0-1 state (0 free, 1 pending, 2 indexed),
 *                                            bit 2 in the graph, bit 3 deleted in the graph
 *                            points.jsonl    one `[row, id, payload]` per live point
 *
 * A snapshot is written into `tmp-<seq>`, every file fsynced, the manifest last, then the directory
 * is renamed to `<seq>`: the rename is the commit, so a crash leaves either the old snapshot or the
 * new one. Loading takes the highest `<seq>` with a manifest and removes the rest. Deleted points are
 * not written (their rows are free), which is the compaction; graph nodes of deleted points are
 * dropped by the graph rebuild the caller runs before snapshotting when there are many of them.
 * Beside the snapshots, `wal-<n>.log` is the collection's write-ahead log: what changed since
 * snapshot n's capture (collection-files.ts).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { LatticeError } from '../../../errors.js';
import { type ValidatedSpec, validateCollectionSpec } from '../../validation.js';
import type { Payload } from '../../vector-db.js';
import { HnswGraph } from '../index/hnsw-graph.js';
import { Bitset } from '../storage/bitset.js';
import { syncDirectory, writeDurably } from '../storage/fs-sync.js';
import { INDEXED, PENDING, PointStore } from '../storage/point-store.js';
import type { Collection } from './collection.js';

export const SNAPSHOT_FORMAT = 'lattice.vectordb.collection';
export const SNAPSHOT_VERSION = 1;

const IN_GRAPH = 4;
const GRAPH_DELETED = 8;
/**
 * Points restored between two turns of the event loop: a snapshot of a million points takes seconds
 * to load, and the process it loads in (`lattice up`, `lattice vss`) must meanwhile answer its health
 * checks and its gated servers' calls (UNAVAILABLE, "starting") at once.
 */
const POINTS_PER_TURN = 5000;

interface FileEntry {
  name: string;
  bytes: number;
  sha256: string;
}

interface Manifest {
  format: string;
  version: number;
  createdAt: string;
  collection: ValidatedSpec;
  highWater: number;
  points: number;
  files: Record<'graph' | 'vectors' | 'rows' | 'points', FileEntry>;
}

export interface LoadedCollection {
  spec: ValidatedSpec;
  store: PointStore;
  graph: HnswGraph;
  seq: number;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
/** Bytes hashed between two turns of the event loop while loading (about 20 ms each). */
const HASH_BYTES_PER_TURN = 32 * 1024 * 1024;

/** {@link sha256} that lets the event loop turn between slices of a large file. */
export async function sha256Yielding(bytes: Uint8Array): Promise<string> {
  const hash = createHash('sha256');
  for (let at = 0; at < bytes.length; at += HASH_BYTES_PER_TURN) {
    hash.update(bytes.subarray(at, at + HASH_BYTES_PER_TURN));
    if (at + HASH_BYTES_PER_TURN < bytes.length) await turn();
  }
  return hash.digest('hex');
}

async function snapshotSeqs(collectionDir: string): Promise<{ complete: number[]; other: string[] }> {
  let names: string[];
  try {
    names = await readdir(collectionDir);
  } catch {
    return { complete: [], other: [] };
  }
  const complete: number[] = [];
  const other: string[] = [];
  for (const name of names) {
    if (/^\d+$/.test(name)) complete.push(Number(name));
    else other.push(name);
  }
  return { complete: complete.sort((a, b) => a - b), other };
}

/**
 * Writes a snapshot of `collection` and removes older ones. The state is captured synchronously (a
 * consistent point in time); `onCapture` runs in that same synchronous step (the write-ahead log
 * switches segments there), and files are then written without blocking the event loop.
 */
export async function writeSnapshot(
  dir: string,
  collection: Collection,
  seq: number,
  onCapture?: () => void,
): Promise<void> {
  const collectionDir = join(dir, collection.name);
  const temp = join(collectionDir, `tmp-${seq}`);
  await rm(temp, { recursive: true, force: true });
  await mkdir(temp, { recursive: true });

  // Capture: nothing below may yield until the buffers are built.
  const { store, graph, spec } = collection;
  graph.save(join(temp, 'graph.hnsw'));
  const highWater = store.highWater;
  const vectors = store.vectorBytes(highWater);
  const rows = new Uint8Array(highWater);
  const lines: string[] = [];
  for (let row = 0; row < highWater; row++) {
    let flags = store.state[row]!;
    if (graph.present.has(row)) flags |= IN_GRAPH;
    if (graph.deleted.has(row)) flags |= GRAPH_DELETED;
    rows[row] = flags;
    const id = store.ids[row];
    if (id !== undefined) lines.push(JSON.stringify([row, id, store.payloads[row]]));
  }
  const points = Buffer.from(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
  const version = collection.version;
  const { graphVersion } = collection;
  const indexedCount = store.indexedCount;
  onCapture?.();

  await writeDurably(join(temp, 'vectors.f32'), vectors);
  await writeDurably(join(temp, 'rows.u8'), rows);
  await writeDurably(join(temp, 'points.jsonl'), points);
  const graphBytes = await readFile(join(temp, 'graph.hnsw'));
  await writeDurably(join(temp, 'graph.hnsw'), graphBytes); // fsync what hnswlib wrote
  const entry = (name: string, bytes: Uint8Array): FileEntry => ({
    name,
    bytes: bytes.length,
    sha256: sha256(bytes),
  });
  const manifest: Manifest = {
    format: SNAPSHOT_FORMAT,
    version: SNAPSHOT_VERSION,
    createdAt: new Date().toISOString(),
    collection: spec,
    highWater,
    points: lines.length,
    files: {
      graph: entry('graph.hnsw', graphBytes),
      vectors: entry('vectors.f32', vectors),
      rows: entry('rows.u8', rows),
      points: entry('points.jsonl', points),
    },
  };
  await writeDurably(join(temp, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await syncDirectory(temp);
  await rename(temp, join(collectionDir, String(seq)));
  await syncDirectory(collectionDir);
  collection.savedVersion = version;
  collection.savedGraphVersion = graphVersion;
  collection.savedIndexedCount = indexedCount;
  collection.savedAt = Date.now();
  const { complete } = await snapshotSeqs(collectionDir);
  for (const old of complete) {
    if (old < seq) await rm(join(collectionDir, String(old)), { recursive: true, force: true });
  }
}

function corrupt(path: string, why: string): LatticeError {
  return new LatticeError('FAILED_PRECONDITION', `snapshot ${path} cannot be loaded: ${why}`, {
    field: 'dir',
  });
}

async function readChecked(snapshotDir: string, file: FileEntry): Promise<Buffer> {
  const path = join(snapshotDir, file.name);
  const bytes = await readFile(path);
  if (bytes.length !== file.bytes || (await sha256Yielding(bytes)) !== file.sha256) {
    throw corrupt(snapshotDir, `${file.name} does not match its size or checksum in the manifest`);
  }
  return bytes;
}

async function loadOne(snapshotDir: string, seq: number): Promise<LoadedCollection> {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(join(snapshotDir, 'manifest.json'), 'utf8')) as Manifest;
  } catch (err) {
    throw corrupt(snapshotDir, `manifest.json is unreadable (${(err as Error).message})`);
  }
  if (manifest.format !== SNAPSHOT_FORMAT) throw corrupt(snapshotDir, `unknown format "${manifest.format}"`);
  if (manifest.version !== SNAPSHOT_VERSION) {
    throw corrupt(
      snapshotDir,
      `format version ${manifest.version}; this build reads version ${SNAPSHOT_VERSION}`,
    );
  }
  const spec = validateCollectionSpec(manifest.collection);
  const { highWater } = manifest;
  const vectorBytes = await readChecked(snapshotDir, manifest.files.vectors);
  const rows = await readChecked(snapshotDir, manifest.files.rows);
  const points = await readChecked(snapshotDir, manifest.files.points);
  await readChecked(snapshotDir, manifest.files.graph);
  if (vectorBytes.length !== highWater * spec.dimension * 4 || rows.length !== highWater) {
    throw corrupt(snapshotDir, 'file sizes disagree with highWater and dimension');
  }

  const store = new PointStore(spec.dimension, Math.max(1024, highWater));
  // A copy: Buffers from readFile need not be 4-byte aligned.
  const floats = new Float32Array(
    vectorBytes.buffer.slice(vectorBytes.byteOffset, vectorBytes.byteOffset + vectorBytes.length),
  );
  const present = new Bitset(highWater);
  const deleted = new Bitset(highWater);
  for (let row = 0; row < highWater; row++) {
    const flags = rows[row]!;
    if (flags & IN_GRAPH) present.add(row);
    if (flags & GRAPH_DELETED) deleted.add(row);
  }
  const count = await restorePoints(store, points, rows, floats, spec.dimension);
  if (count !== manifest.points)
    throw corrupt(snapshotDir, `points.jsonl holds ${count} points, manifest says ${manifest.points}`);
  store.restoreFreeRows(highWater);
  // Read on libuv's thread pool: the event loop goes on meanwhile.
  const graph = await HnswGraph.loadAsync(
    join(snapshotDir, 'graph.hnsw'),
    spec.distance,
    spec.dimension,
    spec.hnsw,
    present,
    deleted,
  );
  return { spec, store, graph, seq };
}

/**
 * Restores the live points of `points.jsonl` into `store` (ids, payloads, vectors, states), letting
 * the event loop turn every {@link POINTS_PER_TURN} points; the number of points.
 */
export async function restorePoints(
  store: PointStore,
  points: Buffer,
  rows: Uint8Array,
  floats: Float32Array,
  dimension: number,
): Promise<number> {
  let count = 0;
  for (const line of points.toString('utf8').split('\n')) {
    if (line === '') continue;
    const [row, id, payload] = JSON.parse(line) as [number, string, Payload];
    store.ids[row] = id;
    store.payloads[row] = payload;
    store.rowOf.set(id, row);
    store.live.add(row);
    store.setVector(row, floats.subarray(row * dimension, (row + 1) * dimension));
    const state = rows[row]! & 3;
    store.setState(row, state === INDEXED ? INDEXED : PENDING);
    if (++count % POINTS_PER_TURN === 0) await turn();
  }
  return count;
}

/**
 * Loads the newest complete snapshot in `collectionDir` (the directory of collection `name`),
 * removing older and half-written ones; undefined when there is none.
 */
export async function loadNewestSnapshot(
  collectionDir: string,
  name: string,
): Promise<LoadedCollection | undefined> {
  const { complete, other } = await snapshotSeqs(collectionDir);
  for (const entry of other)
    if (entry.startsWith('tmp-')) await rm(join(collectionDir, entry), { recursive: true, force: true });
  const newest = complete.at(-1);
  if (newest === undefined) return undefined;
  const collection = await loadOne(join(collectionDir, String(newest)), newest);
  if (collection.spec.name !== name) {
    throw corrupt(collectionDir, `it holds collection "${collection.spec.name}"`);
  }
  for (const old of complete.slice(0, -1))
    await rm(join(collectionDir, String(old)), { recursive: true, force: true });
  return collection;
}
