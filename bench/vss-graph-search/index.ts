/**
 * vss-graph-search: how many cores an embedded vector DB process uses to answer concurrent searches
 * (issue 38, item 4). The serving process (db-process.ts) holds the seeded clustered fixture
 * (100,000 × 256, COSINE, HNSW_DEFAULTS) and answers searches (k 10) sent over IPC; this process
 * keeps 1 or 16 of them in flight, closed loop, and reads the serving process's CPU time around
 * each run.
 *
 * Reported for the search pool (the default) and, as the baseline, for graph walks on the event loop
 * (`searchThreads` 0, what every search did before the pool):
 * - serving_cores: the serving process's CPU time ÷ wall time with 16 in flight (goal ≥ 1.5);
 * - concurrency_ratio: throughput with 16 in flight ÷ with 1 in flight (goal ≥ 1.7);
 * - one at a time: latency, to see what the hop to a pool thread costs a lone search;
 * - recall@10 against exact search, so a fast wrong answer cannot pass;
 * - the same closed loops run inside the serving process (`local_*`): on a 2-core machine the load
 *   generator and the IPC take CPU from the same cores, which caps what the serving process can show.
 * Median of BENCH_ROUNDS alternating rounds. The load generator takes CPU of its own, on a 2-core
 * machine from the same cores: the figures are the shared machine's, with its load average.
 *
 * `npm run bench -- vss-graph-search` (env BENCH_POINTS, BENCH_DIMENSION, BENCH_QUERIES, BENCH_ROUNDS,
 * BENCH_CALLS, BENCH_CACHE_DIR: where the built collection is kept between runs).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusteredFixture, exactSearch, recall } from '../../test/support/vector-fixtures.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';
import type { FromServer, Params, ToServer } from './protocol.js';

const points = Number(process.env.BENCH_POINTS ?? 100_000);
const params: Params = {
  points,
  dimension: Number(process.env.BENCH_DIMENSION ?? 256),
  clusters: Math.max(1, Math.round(points / 1000)),
  seed: 2026,
  cacheDir: process.env.BENCH_CACHE_DIR ?? join(tmpdir(), 'lattice-bench-vss-graph-search'),
};
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CALLS = Number(process.env.BENCH_CALLS ?? 800);
const K = 10;
const IN_FLIGHT = 16;

const log = (line: string) => console.log(line);

const fixture = clusteredFixture({
  count: params.points,
  dimension: params.dimension,
  clusters: params.clusters,
  seed: params.seed,
});
const queries = fixture.queries(QUERIES, 77);
const truth = queries
  .slice(0, 50)
  .map((q) =>
    exactSearch(fixture.vectors, params.dimension, q, K, 'COSINE').indices.map((row) => fixture.ids[row]!),
  );
log(`fixture ${params.points} × ${params.dimension}, ${params.clusters} clusters, ${QUERIES} queries`);

class Server {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, (message: FromServer) => void>();
  readonly ready: Promise<Extract<FromServer, { type: 'ready' }>>;

  constructor(searchThreads: number | undefined) {
    this.child = fork(fileURLToPath(new URL('./db-process.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
      serialization: 'advanced',
      env: {
        ...process.env,
        BENCH_PARAMS: JSON.stringify(params),
        BENCH_SEARCH_THREADS: searchThreads === undefined ? '' : String(searchThreads),
      },
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.once('exit', (code) => reject(new Error(`the serving process exited with ${code}`)));
      this.child.on('message', (message: FromServer) => {
        if (message.type === 'ready') resolve(message);
        else this.waiting.get(message.id)?.(message);
      });
    });
  }

  private call(message: ToServer & { id: number }): Promise<FromServer> {
    return new Promise((resolve) => {
      this.waiting.set(message.id, (answer) => {
        this.waiting.delete(message.id);
        resolve(answer);
      });
      this.child.send(message);
    });
  }

  async search(vector: Float32Array): Promise<string[]> {
    const answer = await this.call({ type: 'search', id: this.next++, vector, k: K });
    if (answer.type !== 'hits') throw new Error(answer.type === 'error' ? answer.message : answer.type);
    return answer.ids;
  }

  async cpu(): Promise<{ cpuMicros: number; wallMs: number }> {
    const answer = await this.call({ type: 'cpu', id: this.next++ });
    if (answer.type !== 'cpu') throw new Error(`expected cpu, got ${answer.type}`);
    return answer;
  }

  async local(calls: number, inFlight: number): Promise<Run> {
    const answer = await this.call({ type: 'local', id: this.next++, queries, calls, inFlight });
    if (answer.type !== 'local') throw new Error(`expected local, got ${answer.type}`);
    return { ...answer.stats, cores: answer.cores, generatorCores: 0 };
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.send({ type: 'close' } satisfies ToServer);
    });
  }
}

interface Run extends RunStats {
  /** The serving process's CPU time ÷ wall time over the run. */
  cores: number;
  /** This process's (the load generator's), over the run. */
  generatorCores: number;
}

async function run(server: Server, calls: number, inFlight: number): Promise<Run> {
  const before = await server.cpu();
  const generator = process.cpuUsage();
  const stats = await measure(calls, inFlight, (i) => server.search(queries[i % queries.length]!));
  const used = process.cpuUsage(generator);
  const after = await server.cpu();
  return {
    ...stats,
    cores: (after.cpuMicros - before.cpuMicros) / 1000 / (after.wallMs - before.wallMs),
    generatorCores: (used.user + used.system) / 1000 / (stats.seconds * 1000),
  };
}

async function mode(name: string, searchThreads: number | undefined) {
  const server = new Server(searchThreads);
  const ready = await server.ready;
  log(
    `${name}: collection ready in ${ready.loadOrBuild_s.toFixed(1)} s, search pool ${ready.poolThreads} threads`,
  );
  const found = await Promise.all(truth.map((_, i) => server.search(queries[i]!)));
  const recallAt10 = recall(found, truth);
  await run(server, CALLS / 4, IN_FLIGHT); // warm-up
  const one: Run[] = [];
  const many: Run[] = [];
  const localOne: Run[] = [];
  const localMany: Run[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    one.push(await run(server, CALLS / 4, 1));
    many.push(await run(server, CALLS, IN_FLIGHT));
    localOne.push(await server.local(CALLS / 4, 1));
    localMany.push(await server.local(CALLS, IN_FLIGHT));
  }
  await server.close();
  const single = medianRun(one) as Run;
  const loaded = medianRun(many) as Run;
  const inProcessOne = medianRun(localOne) as Run;
  const inProcessMany = medianRun(localMany) as Run;
  const result = {
    pool_threads: ready.poolThreads,
    recall: round(recallAt10),
    one: single,
    many: loaded,
    serving_cores: round(loaded.cores, 2),
    serving_cores_one: round(single.cores, 2),
    concurrency_ratio: round(loaded.throughput / single.throughput, 2),
    generator_cores: round(loaded.generatorCores, 2),
    local_one: inProcessOne,
    local_many: inProcessMany,
    local_serving_cores: round(inProcessMany.cores, 2),
    local_concurrency_ratio: round(inProcessMany.throughput / inProcessOne.throughput, 2),
  };
  log(
    `${name}: 1 in flight ${Math.round(single.throughput)}/s (p50 ${single.p50_ms.toFixed(3)} ms, ${result.serving_cores_one} cores); ` +
      `${IN_FLIGHT} in flight ${Math.round(loaded.throughput)}/s (p50 ${loaded.p50_ms.toFixed(3)} / p99 ${loaded.p99_ms.toFixed(3)} ms, ${result.serving_cores} cores); ` +
      `ratio ${result.concurrency_ratio}; load generator ${result.generator_cores} cores; recall@10 ${result.recall}`,
  );
  log(
    `${name}, in the serving process: 1 in flight ${Math.round(inProcessOne.throughput)}/s (p50 ${inProcessOne.p50_ms.toFixed(3)} ms, ${round(inProcessOne.cores, 2)} cores); ` +
      `${IN_FLIGHT} in flight ${Math.round(inProcessMany.throughput)}/s (${result.local_serving_cores} cores); ratio ${result.local_concurrency_ratio}`,
  );
  return result;
}

const pool = await mode('search pool', undefined);
const loop = await mode('event loop', 0);
printResult({
  bench: 'vss-graph-search',
  ratio: pool.concurrency_ratio,
  throughput: round(pool.many.throughput, 1),
  baseline_throughput: round(loop.many.throughput, 1),
  p50_ms: round(pool.many.p50_ms),
  p99_ms: round(pool.many.p99_ms),
  points: params.points,
  dimension: params.dimension,
  pool_threads: pool.pool_threads,
  serving_cores: pool.serving_cores,
  concurrency_ratio: pool.concurrency_ratio,
  one_at_a_time_p50_ms: round(pool.one.p50_ms),
  recall: pool.recall,
  generator_cores: pool.generator_cores,
  local_serving_cores: pool.local_serving_cores,
  local_concurrency_ratio: pool.local_concurrency_ratio,
  local_one_at_a_time_p50_ms: round(pool.local_one.p50_ms),
  loop_serving_cores: loop.serving_cores,
  loop_concurrency_ratio: loop.concurrency_ratio,
  loop_one_at_a_time_p50_ms: round(loop.one.p50_ms),
  loop_recall: loop.recall,
  loop_local_serving_cores: loop.local_serving_cores,
  loop_local_concurrency_ratio: loop.local_concurrency_ratio,
  loop_local_one_at_a_time_p50_ms: round(loop.local_one.p50_ms),
  loadavg: loadavg().map((x) => round(x, 2)),
});
