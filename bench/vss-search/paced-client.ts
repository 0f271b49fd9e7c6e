/**
 * The open-loop load generator of bench/vss-search in a process of its own (forked by index.ts with
 * an IPC channel), holding nothing but the prepared requests and a lean HTTP/2 client
 * (lean-client.ts): the bench process also holds the fixture and the raw hnswlib index, whose full
 * garbage collections (10 ms and more) would stall sends and replies and be charged to the server. Receives one {@link PacedJob}, answers with a
 * {@link PacedResult} and exits.
 */
import { LeanSearchClient } from './lean-client.js';
import { type PacedStats, paced, searchRequests } from './load.js';
import { PauseMonitor, type Pauses } from './pauses.js';

export interface PacedJob {
  address: string;
  queries: number[][];
  rate: number;
  seconds: number;
  /** Calls made before the paced run (connection, JIT). */
  warmup: number;
}

export interface PacedResult {
  stats: PacedStats;
  pauses: Pauses;
}

if (process.send !== undefined) {
  process.once('message', async (job: PacedJob) => {
    const caller = new LeanSearchClient(
      job.address,
      searchRequests(job.queries.map((q) => Float32Array.from(q))),
    );
    for (let i = 0; i < job.warmup; i++) await caller.call(i);
    const monitor = new PauseMonitor();
    const stats = await paced(job.rate, job.seconds, (i) => caller.call(i));
    const pauses = monitor.take();
    monitor.stop();
    caller.close();
    process.send!({ stats, pauses } satisfies PacedResult, () => process.disconnect());
  });
}
