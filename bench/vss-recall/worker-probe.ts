/**
 * Is search off the event loop worth it? The same hnswlib graph is loaded into a worker thread and
 * queried by message, one at a time (latency) and with 8 in flight (throughput), to compare with
 * in-process calls measured by the caller.
 */
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type hnswlib from 'hnswlib-node';
import { measure, type RunStats } from '../support/stats.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const hnswlib = require(workerData.module);
const index = new hnswlib.HierarchicalNSW('l2', workerData.dimension);
index.readIndexSync(workerData.file);
index.setEf(workerData.ef);
parentPort.on('message', ({ id, query }) => {
  const found = index.searchKnn(Array.from(query), workerData.k);
  parentPort.postMessage({ id, rows: Uint32Array.from(found.neighbors), distances: Float32Array.from(found.distances) });
});
parentPort.postMessage('ready');`;

export async function probeWorker(
  graph: hnswlib.HierarchicalNSW,
  options: { dimension: number; ef: number; k: number; queries: Float32Array[]; calls: number },
): Promise<{ sequential: RunStats; pipelined: RunStats }> {
  const file = join(tmpdir(), `lattice-vss-recall-${process.pid}.hnsw`);
  graph.writeIndexSync(file);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      module: createRequire(import.meta.url).resolve('hnswlib-node'),
      dimension: options.dimension,
      file,
      ef: options.ef,
      k: options.k,
    },
  });
  try {
    await new Promise((resolve) => worker.once('message', resolve));
    const waiting = new Map<number, () => void>();
    let nextId = 0;
    worker.on('message', ({ id }: { id: number }) => {
      waiting.get(id)?.();
      waiting.delete(id);
    });
    const ask = (query: Float32Array) =>
      new Promise<void>((resolve) => {
        const id = nextId++;
        waiting.set(id, resolve);
        worker.postMessage({ id, query });
      });
    const { queries, calls } = options;
    const sequential = await measure(calls, 1, (i) => ask(queries[i % queries.length]!));
    const pipelined = await measure(calls, 8, (i) => ask(queries[i % queries.length]!));
    return { sequential, pipelined };
  } finally {
    await worker.terminate();
    rmSync(file, { force: true });
  }
}
