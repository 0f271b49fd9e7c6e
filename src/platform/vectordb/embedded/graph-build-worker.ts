/**
 * The worker thread of graph-builder.ts: inserts a batch of rows into a collection's HNSW graph (an
 * empty one, or the serving graph read from the file the event loop wrote) with the collection's
 * parameters and {@link HnswGraph}'s fixed seed, in the order given, and writes the result to a file.
 * The same class as the in-process indexer, so the same rows in the same order give the same graph.
 */
import { parentPort } from 'node:worker_threads';
import { Bitset } from './bitset.js';
import type { BuildRequest, BuildResponse } from './graph-builder.js';
import { HnswGraph } from './hnsw-graph.js';

function build(request: BuildRequest): BuildResponse {
  const started = performance.now();
  const { distance, dimension, params, rows, vectors } = request;
  const graph = request.baseFile
    ? HnswGraph.load(
        request.baseFile,
        distance,
        dimension,
        params,
        Bitset.of(request.present),
        Bitset.of(request.deleted),
      )
    : new HnswGraph(distance, dimension, params, rows.length);
  graph.reserve(graph.size + graph.deletedCount + rows.length);
  for (let i = 0; i < rows.length; i++) {
    graph.insert(rows[i]!, vectors.subarray(i * dimension, (i + 1) * dimension));
  }
  graph.save(request.outFile);
  return {
    id: request.id,
    ok: true,
    present: graph.present.words,
    deleted: graph.deleted.words,
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
    port.postMessage({
      id: request.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    });
    return;
  }
  if (response.ok)
    port.postMessage(response, [response.present.buffer, response.deleted.buffer] as ArrayBuffer[]);
});
