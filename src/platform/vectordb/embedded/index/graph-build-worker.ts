/**
 * The worker thread of graph-builder.ts: inserts a batch of rows into a collection's HNSW graph (an
 * empty one, or the serving graph read from the file the event loop wrote) with the collection's
 * parameters and {@link HnswGraph}'s fixed seed, in the order given, and writes the result to a file.
 * The same class as the in-process indexer, so the same rows in the same order give the same graph.
 *
 * The worker keeps the graph it built last: the next round of the same collection sends only what
 * changed in the serving graph since (`sync`) instead of the whole graph as a file, which the event
 * loop would have to write (about 1 ms per 1,000 nodes of 128-d).
 *
 * A large round (`request.parallel.minRows` rows or more) goes to the native parallel builder
 * (parallel-builder.ts) instead when it is installed: the rows are inserted in chunks, on every core
 * while the process neither writes nor searches, on one while it does, with the same pacing between
 * chunks as between slices here. Its graph depends on how the threads interleave, so it is not
 * kept: the next round starts from the serving graph's file.
 */
import { rmSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { Bitset } from '../storage/bitset.js';
import { BuildPacing, type PacingWait } from './build-pacing.js';
import type { BuildRequest, BuildResponse } from './graph-builder.js';
import { HnswGraph, RANDOM_SEED, SPACE } from './hnsw-graph.js';
import {
  loadParallelBuilder,
  type ParallelBuilderConstructor,
  type ParallelGraph,
} from './parallel-builder.js';

/** Length of a slice of inserts between two looks at the writes, ms. */
const SLICE_MS = 10;
/** Kept across builds: the credit of waiting for writes is the worker's, not one build's. */
const pacing = new BuildPacing();

class Cancelled extends Error {}

/** The graph of the last build and its key. */
let kept: { key: string; graph: HnswGraph } | undefined;

function build(request: BuildRequest): BuildResponse {
  const started = performance.now();
  const { distance, dimension, params, rows, vectors, sync, activity, cancel, parallel } = request;
  const Builder = parallel && rows.length >= parallel.minRows ? loadParallelBuilder() : undefined;
  const base = kept;
  kept = undefined; // until this build completes
  if (sync && base?.key !== sync.key) throw new Error(`the worker does not hold graph ${sync.key}`);
  if (Builder && parallel) {
    return buildInParallel(request, Builder, sync ? base!.graph : undefined, parallel.threads, started);
  }
  const lastWrite = () => activity[0]!;
  const wait = waitUnlessCancelled(cancel);
  const graph = sync
    ? base!.graph
    : request.baseFile
      ? HnswGraph.load(
          request.baseFile,
          distance,
          dimension,
          params,
          Bitset.of(request.present),
          Bitset.of(request.deleted),
        )
      : new HnswGraph(distance, dimension, params, rows.length);
  if (sync) applySync(graph, sync, dimension);
  graph.reserve(graph.size + graph.deletedCount + rows.length);
  let sliceStart = performance.now();
  for (let i = 0; i < rows.length; i++) {
    if (Atomics.load(cancel, 0) !== 0) throw new Cancelled('cancelled');
    graph.insert(rows[i]!, vectors.subarray(i * dimension, (i + 1) * dimension));
    const now = performance.now();
    if (now - sliceStart >= SLICE_MS) {
      if (!pacing.afterSlice(now - sliceStart, Date.now, lastWrite, wait)) throw new Cancelled('cancelled');
      sliceStart = performance.now();
    }
  }
  if (Atomics.load(request.cancel, 0) !== 0) throw new Cancelled('cancelled');
  graph.save(request.outFile);
  kept = { key: request.key, graph };
  return {
    id: request.id,
    ok: true,
    present: graph.present.words.slice(),
    deleted: graph.deleted.words.slice(),
    buildMs: performance.now() - started,
    threads: 1,
    kept: true,
  };
}

/** A pacing wait on the cancel flag: ends early (answering false) when the build is cancelled. */
function waitUnlessCancelled(cancel: Int32Array): (step: PacingWait) => boolean {
  return ({ ms }) => Atomics.wait(cancel, 0, 0, ms) === 'timed-out';
}

/** Brings a kept graph to the serving graph's state for each row that changed there. */
function applySync(graph: HnswGraph, sync: NonNullable<BuildRequest['sync']>, dimension: number): void {
  for (let i = 0; i < sync.rows.length; i++) {
    const row = sync.rows[i]!;
    if (sync.live[i] || !graph.present.has(row)) {
      graph.insert(row, sync.vectors.subarray(i * dimension, (i + 1) * dimension));
    }
    if (!sync.live[i]) graph.remove(row);
  }
}

/**
 * The round on the native builder: its base is the request's graph file, or the kept graph (synced,
 * then written for the addon to read), or nothing. The label sets follow what hnswlib does with an
 * insert: every row ends up in the graph, none of them deleted.
 */
function buildInParallel(
  request: BuildRequest,
  Builder: ParallelBuilderConstructor,
  keptGraph: HnswGraph | undefined,
  threads: number,
  started: number,
): BuildResponse {
  const { distance, dimension, params, rows, sync, cancel, outFile } = request;
  let present = Bitset.of(request.present);
  let deleted = Bitset.of(request.deleted);
  let baseFile = request.baseFile;
  let scratch: string | undefined;
  if (keptGraph && sync) {
    applySync(keptGraph, sync, dimension);
    present = keptGraph.present;
    deleted = keptGraph.deleted;
    scratch = present.count() > 0 ? `${outFile}.base` : undefined;
    if (scratch) keptGraph.save(scratch);
    baseFile = scratch;
  }
  let native: ParallelGraph;
  try {
    native = new Builder(
      SPACE[distance],
      dimension,
      present.count() + rows.length,
      params.m,
      params.efConstruction,
      RANDOM_SEED,
      baseFile,
    );
  } finally {
    if (scratch) rmSync(scratch, { force: true });
  }
  let most: number;
  try {
    most = insertInParallel(native, request, threads);
    if (Atomics.load(cancel, 0) !== 0) throw new Cancelled('cancelled');
    native.save(outFile);
  } finally {
    native.release();
  }
  for (const row of rows) {
    present.add(row);
    deleted.delete(row);
  }
  return {
    id: request.id,
    ok: true,
    present: present.words.slice(),
    deleted: deleted.words.slice(),
    buildMs: performance.now() - started,
    threads: most,
    kept: false,
  };
}

/** Rows per thread in one chunk of a parallel build: tens of milliseconds between two looks at the pacing. */
const CHUNK_PER_THREAD = 64;

/**
 * Inserts the request's rows into `native` chunk by chunk: on `threads` threads while neither writes
 * nor searches happened within the pacing's `recentMs`, else on one; the pacing decides after each
 * chunk as after a slice. Returns the most threads used at once; stops early on a cancel.
 */
function insertInParallel(native: ParallelGraph, request: BuildRequest, threads: number): number {
  const { rows, vectors, dimension, activity, cancel } = request;
  const lastWrite = () => activity[0]!;
  const wait = waitUnlessCancelled(cancel);
  let most = 1;
  for (let from = 0; from < rows.length; ) {
    const now = Date.now();
    const busy = Math.max(activity[0]!, activity[1]!);
    const use = now - busy >= pacing.recentMs ? threads : 1;
    most = Math.max(most, use);
    const to = Math.min(rows.length, from + CHUNK_PER_THREAD * use);
    const chunkStart = performance.now();
    native.add(vectors.subarray(from * dimension, to * dimension), rows.subarray(from, to), use, cancel);
    if (Atomics.load(cancel, 0) !== 0) return most;
    from = to;
    if (!pacing.afterSlice(performance.now() - chunkStart, Date.now, lastWrite, wait)) return most;
  }
  return most;
}

const port = parentPort;
if (!port) throw new Error('graph-build-worker runs as a worker thread (graph-builder.ts starts it)');
port.on('message', (request: BuildRequest) => {
  let response: BuildResponse;
  try {
    response = build(request);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    port.postMessage({ id: request.id, ok: false, cancelled: err instanceof Cancelled, message });
    return;
  }
  if (response.ok)
    port.postMessage(response, [response.present.buffer, response.deleted.buffer] as ArrayBuffer[]);
});
