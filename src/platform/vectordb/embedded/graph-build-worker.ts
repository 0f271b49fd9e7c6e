/**
 * The worker thread of graph-builder.ts: inserts a batch of rows into a collection's HNSW graph (an
 * empty one, or the serving graph read from the file the event loop wrote) with the collection's
 * parameters and {@link HnswGraph}'s fixed seed, in the order given, and writes the result to a file.
 * The same class as the in-process indexer, so the same rows in the same order give the same graph.
 *
 * The worker keeps the graph it built last: the next round of the same collection sends only what
 * changed in the serving graph since (`sync`) instead of the whole graph as a file, which the event
 * loop would have to write (about 1 ms per 1,000 nodes of 128-d).
 */
import { parentPort } from 'node:worker_threads';
import { Bitset } from './bitset.js';
import type { BuildRequest, BuildResponse } from './graph-builder.js';
import { HnswGraph } from './hnsw-graph.js';

/**
 * The build is background work (searches scan what is not indexed yet): while the process's
 * collections are being written, it pauses after each slice of inserts for `WRITER_SHARE` times the
 * slice, so the event loop and PGlite's thread, which acknowledge the writes, get most of the cores
 * (the in-process indexer gives way the same: indexer.ts). At full speed the three took turns on
 * the two cores of the target machine and ingestion acknowledged 1.3-1.8 times slower
 * (bench/RESULTS.md, "vss-ingest"). A lower thread priority did as well on a quiet machine but
 * starved the build whenever other processes kept the cores busy.
 */
const SLICE_MS = 10;
const WRITER_SHARE = 2;
/** Writes within this long count as "being written", ms. */
const WRITES_RECENT_MS = 50;

class Cancelled extends Error {}

/** The graph of the last build and its key. */
let kept: { key: string; graph: HnswGraph } | undefined;

function build(request: BuildRequest): BuildResponse {
  const started = performance.now();
  const { distance, dimension, params, rows, vectors, sync } = request;
  const base = kept;
  kept = undefined; // until this build completes
  if (sync && base?.key !== sync.key) throw new Error(`the worker does not hold graph ${sync.key}`);
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
  if (sync) {
    // Bring the kept graph to the serving graph's state for each row that changed there.
    for (let i = 0; i < sync.rows.length; i++) {
      const row = sync.rows[i]!;
      if (sync.live[i] || !graph.present.has(row)) {
        graph.insert(row, sync.vectors.subarray(i * dimension, (i + 1) * dimension));
      }
      if (!sync.live[i]) graph.remove(row);
    }
  }
  graph.reserve(graph.size + graph.deletedCount + rows.length);
  let sliceStart = performance.now();
  for (let i = 0; i < rows.length; i++) {
    if (Atomics.load(request.cancel, 0) !== 0) throw new Cancelled('cancelled');
    graph.insert(rows[i]!, vectors.subarray(i * dimension, (i + 1) * dimension));
    const now = performance.now();
    if (now - sliceStart >= SLICE_MS) {
      // Woken early by a cancel.
      if (Date.now() - request.writes[0]! < WRITES_RECENT_MS)
        Atomics.wait(request.cancel, 0, 0, (now - sliceStart) * WRITER_SHARE);
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
  };
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
