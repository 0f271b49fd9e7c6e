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
import { BuildPacing, type PacingWait } from './build-pacing.js';
import type { BuildRequest, BuildResponse } from './graph-builder.js';
import { HnswGraph } from './hnsw-graph.js';

/** Length of a slice of inserts between two looks at the writes, ms. */
const SLICE_MS = 10;
/** Kept across builds: the credit of waiting for writes is the worker's, not one build's. */
const pacing = new BuildPacing();

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
  const { writes, cancel } = request;
  const lastWrite = () => writes[0]!;
  // Ends early on a cancel.
  const wait = ({ ms }: PacingWait) => Atomics.wait(cancel, 0, 0, ms) === 'timed-out';
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
