/**
 * The embedded vector engine against raw hnswlib-node (same graph parameters, same data) on the
 * seeded clustered fixture: 100,000 × 128, 100 clusters, boolean attributes matching 10 %, 5 %, 2 %
 * and 0.5 % of the points. Measures recall@10 against exact brute force (unfiltered, 10 %, 0.5 %),
 * build rate, memory per point and query latency; the ratio is the engine's unfiltered query
 * throughput over the raw library's, from alternating rounds (medians). Two probes follow: the
 * planner's crossover (the same filtered queries forced down each path), and hnswlib search in a
 * worker thread against in-process, to tell whether moving search off the event loop pays. Last, the
 * harder fixture beside it (hard-fixture.ts: 100,000 × 256, COSINE, overlapping clusters): recall@10
 * and throughput at the former default ef 64 and at the current default.
 *
 * `npm run bench -- vss-recall` (env BENCH_POINTS, BENCH_QUERIES, BENCH_HARD_POINTS to scale it down;
 * BENCH_HARD_POINTS=0 skips the harder fixture).
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EmbeddedVectorDb,
  type EmbeddedVectorDbOptions,
  type Filter,
  HNSW_DEFAULTS,
} from '../../src/platform/vectordb/index.js';
import { clusteredFixture, exactSearch, recall } from '../../test/support/vector-fixtures.js';
import { buildRawIndex } from '../support/hnswlib.js';
import { settledRss } from '../support/memory.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';
import { runHardFixture } from './hard-fixture.js';
import { probeWorker } from './worker-probe.js';

const POINTS = Number(process.env.BENCH_POINTS ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const DIMENSION = 128;
const K = 10;
const ROUNDS = 3;
const FLAGS = { tenth: 0.1, five: 0.05, two: 0.02, rare: 0.005 } as const;
type Flag = keyof typeof FLAGS;

const log = (line: string) => console.log(line);
const seconds = (since: number) => (performance.now() - since) / 1000;
const ms = (stats: RunStats) => `p50 ${stats.p50_ms.toFixed(3)} / p99 ${stats.p99_ms.toFixed(3)} ms`;

const fixture = clusteredFixture({
  count: POINTS,
  dimension: DIMENSION,
  clusters: Math.max(1, Math.round(POINTS / 1000)),
  seed: 2026,
  flags: FLAGS,
});
const queries = fixture.queries(QUERIES, 77);
const calls = QUERIES * 5;
const pick = (i: number) => queries[i % QUERIES]!;

let started = performance.now();
const truthFor = (flag?: Flag) =>
  queries.map((q) =>
    exactSearch(
      fixture.vectors,
      DIMENSION,
      q,
      K,
      'EUCLIDEAN',
      flag ? (row) => fixture.payloads[row]![flag] === true : undefined,
    ).indices.map((row) => fixture.ids[row]!),
  );
const truth = { none: truthFor(), tenth: truthFor('tenth'), rare: truthFor('rare') };
log(`ground truth for ${QUERIES} queries × 3 by brute force: ${seconds(started).toFixed(1)} s`);

// --- the product: build ----------------------------------------------------------------------
const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), 'lattice-vss-recall-')));
const rss = settledRss();
started = performance.now();
const db = await EmbeddedVectorDb.open({ dir: dirs[0]!, snapshotIntervalMs: 0 });
await db.createCollection({ name: 'bench', dimension: DIMENSION, distance: 'EUCLIDEAN' });
for (let start = 0; start < POINTS; start += 1000) {
  const points = [];
  for (let i = start; i < Math.min(POINTS, start + 1000); i++) {
    points.push({ id: fixture.ids[i]!, vector: fixture.vector(i), payload: fixture.payloads[i]! });
  }
  await db.upsert('bench', points);
}
await db.waitForIndexing('bench');
const buildSeconds = seconds(started);
const bytesPerPoint = (settledRss() - rss) / POINTS;
log(`engine build ${buildSeconds.toFixed(1)} s, ${bytesPerPoint.toFixed(0)} B/point (RSS growth)`);
started = performance.now();
await db.snapshot('bench');
const snapshotSeconds = seconds(started);

// --- baseline: hnswlib-node alone ------------------------------------------------------------
const {
  index: raw,
  buildSeconds: baselineBuildSeconds,
  bytesPerPoint: baselineBytesPerPoint,
} = buildRawIndex(POINTS, DIMENSION, (i) => fixture.vector(i));
log(`baseline build ${baselineBuildSeconds.toFixed(1)} s, ${baselineBytesPerPoint.toFixed(0)} B/point`);

// --- recall ------------------------------------------------------------------------------------
const filterOf = (flag?: Flag): Filter[] => (flag ? [{ field: flag, op: 'IN', values: ['true'] }] : []);
const search = async (target: EmbeddedVectorDb, q: Float32Array, flag?: Flag) =>
  (
    await target.search({
      collection: 'bench',
      queries: [{ vector: q }],
      filters: filterOf(flag),
      limit: K,
      indexedOnly: true,
    })
  )[0]!.map((hit) => hit.id);
const engineRecall = async (flag?: 'tenth' | 'rare') => {
  const found: string[][] = [];
  for (const q of queries) found.push(await search(db, q, flag));
  return recall(found, truth[flag ?? 'none']);
};
const recallNone = await engineRecall();
const recallTenth = await engineRecall('tenth');
const recallRare = await engineRecall('rare');
const rawSearch = (q: Float32Array, accept?: (row: number) => boolean) =>
  raw.searchKnn(Array.from(q), K, accept).neighbors.map((row) => fixture.ids[row]!);
const rawRecall = (ef: number) => {
  raw.setEf(ef);
  const value = recall(
    queries.map((q) => rawSearch(q)),
    truth.none,
  );
  raw.setEf(HNSW_DEFAULTS.efSearch);
  return value;
};
const baselineRecall = rawRecall(HNSW_DEFAULTS.efSearch);
const fixtureRecallEf16 = rawRecall(16);
log(
  `recall@10 engine: ${recallNone.toFixed(3)} unfiltered, ${recallTenth.toFixed(3)} at 10 %, ${recallRare.toFixed(3)} at 0.5 %; ` +
    `hnswlib: ${baselineRecall.toFixed(3)} at ef ${HNSW_DEFAULTS.efSearch}, ${fixtureRecallEf16.toFixed(3)} at ef 16`,
);

// --- latency, alternating rounds -----------------------------------------------------------------
const acceptFor = (flag: Flag) => {
  const bits = new Uint32Array(Math.ceil(POINTS / 32));
  for (let i = 0; i < POINTS; i++) if (fixture.payloads[i]![flag] === true) bits[i >>> 5]! |= 1 << (i & 31);
  return (row: number) => (bits[row >>> 5]! & (1 << (row & 31))) !== 0;
};
const rawTenth = acceptFor('tenth');
const rawRare = acceptFor('rare');
const rounds: Record<string, RunStats[]> = {};
const round_ = async (name: string, run: () => Promise<RunStats>) => {
  rounds[name] ??= [];
  rounds[name].push(await run());
};
for (let r = 0; r < ROUNDS; r++) {
  await round_('engine', () => measure(calls, 1, (i) => search(db, pick(i))));
  await round_('baseline', () => measure(calls, 1, async (i) => rawSearch(pick(i))));
  await round_('engine10', () => measure(calls, 1, (i) => search(db, pick(i), 'tenth')));
  await round_('baseline10', () => measure(calls, 1, async (i) => rawSearch(pick(i), rawTenth)));
  await round_('engine05', () => measure(calls, 1, (i) => search(db, pick(i), 'rare')));
  await round_('baseline05', () => measure(QUERIES, 1, async (i) => rawSearch(pick(i), rawRare)));
}
const median = Object.fromEntries(
  Object.entries(rounds).map(([name, runs]) => [name, medianRun(runs)]),
) as Record<string, RunStats>;
log(`unfiltered: engine ${ms(median.engine!)}, hnswlib ${ms(median.baseline!)}`);
log(`10 %: engine ${ms(median.engine10!)}, hnswlib with filter callback ${ms(median.baseline10!)}`);
log(`0.5 %: engine ${ms(median.engine05!)}, hnswlib with filter callback ${ms(median.baseline05!)}`);
started = performance.now();
await db.search({
  collection: 'bench',
  queries: queries.map((vector) => ({ vector })),
  limit: K,
  indexedOnly: true,
});
const batchPerQuery = (performance.now() - started) / QUERIES;

// --- planner crossover: the same filtered queries forced down each path -------------------------
await db.close();
for (const dir of dirs.slice(1)) cpSync(dirs[0]!, dir, { recursive: true });
const forced = async (dir: string, planner: EmbeddedVectorDbOptions['planner']) =>
  EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0, planner });
started = performance.now();
const exactOnly = await forced(dirs[1]!, { exactScanRatio: Number.POSITIVE_INFINITY });
const reloadSeconds = seconds(started);
const graphOnly = await forced(dirs[2]!, { exactScanRatio: 0, exactScanMinCandidates: 0 });
const crossover: Record<string, { candidates: number; exact_ms: number; graph_ms: number }> = {};
for (const flag of ['rare', 'two', 'five', 'tenth'] as const) {
  const runs = { exact: [] as RunStats[], graph: [] as RunStats[] };
  for (let r = 0; r < ROUNDS; r++) {
    runs.exact.push(await measure(QUERIES, 1, (i) => search(exactOnly, pick(i), flag)));
    runs.graph.push(await measure(QUERIES, 1, (i) => search(graphOnly, pick(i), flag)));
  }
  const candidates = Math.round(FLAGS[flag] * POINTS);
  crossover[flag] = {
    candidates,
    exact_ms: round(medianRun(runs.exact).p50_ms),
    graph_ms: round(medianRun(runs.graph).p50_ms),
  };
  log(
    `planner probe, ${candidates} candidates: exact p50 ${crossover[flag].exact_ms} ms, graph p50 ${crossover[flag].graph_ms} ms`,
  );
}
const reopened = await forced(dirs[0]!, {});
const plans = await Promise.all(
  (['rare', 'two', 'five', 'tenth'] as const).map(async (flag) => {
    const [explained] = await reopened.explain({
      collection: 'bench',
      queries: [{ vector: queries[0]! }],
      filters: filterOf(flag),
      limit: K,
    });
    return `${FLAGS[flag] * 100} %: ${explained!.plan.path}`;
  }),
);
log(`planner choices: ${plans.join(', ')}`);
await Promise.all([exactOnly.close(), graphOnly.close(), reopened.close()]);
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });

// --- search in a worker thread ---------------------------------------------------------------------
raw.setEf(HNSW_DEFAULTS.efSearch);
const worker = await probeWorker(raw, {
  dimension: DIMENSION,
  ef: HNSW_DEFAULTS.efSearch,
  k: K,
  queries,
  calls,
});
log(
  `worker: one at a time ${ms(worker.sequential)} vs in-process ${ms(median.baseline!)}; ` +
    `8 in flight ${worker.pipelined.throughput.toFixed(0)}/s vs in-process ${median.baseline!.throughput.toFixed(0)}/s`,
);

// --- the harder fixture ----------------------------------------------------------------------------
const hard = await runHardFixture(QUERIES, ROUNDS, log);

printResult({
  bench: 'vss-recall',
  ratio: round(median.engine!.throughput / median.baseline!.throughput),
  throughput: round(median.engine!.throughput, 1),
  baseline_throughput: round(median.baseline!.throughput, 1),
  p50_ms: round(median.engine!.p50_ms),
  p99_ms: round(median.engine!.p99_ms),
  points: POINTS,
  dimension: DIMENSION,
  queries: QUERIES,
  recall_at_10: round(recallNone),
  recall_at_10_filtered_10pct: round(recallTenth),
  recall_at_10_filtered_0_5pct: round(recallRare),
  baseline_recall_at_10: round(baselineRecall),
  fixture_recall_at_10_ef16: round(fixtureRecallEf16),
  build_points_per_s: round(POINTS / buildSeconds, 0),
  baseline_build_points_per_s: round(POINTS / baselineBuildSeconds, 0),
  bytes_per_point: round(bytesPerPoint, 0),
  baseline_bytes_per_point: round(baselineBytesPerPoint, 0),
  snapshot_s: round(snapshotSeconds, 2),
  reload_s: round(reloadSeconds, 2),
  baseline_p50_ms: round(median.baseline!.p50_ms),
  filtered_10pct_p50_ms: round(median.engine10!.p50_ms),
  filtered_10pct_p99_ms: round(median.engine10!.p99_ms),
  baseline_filtered_10pct_p50_ms: round(median.baseline10!.p50_ms),
  filtered_0_5pct_p50_ms: round(median.engine05!.p50_ms),
  filtered_0_5pct_p99_ms: round(median.engine05!.p99_ms),
  baseline_filtered_0_5pct_p50_ms: round(median.baseline05!.p50_ms),
  batch_search_ms_per_query: round(batchPerQuery),
  planner_crossover: crossover,
  worker_sequential_p50_ms: round(worker.sequential.p50_ms),
  worker_pipelined_throughput: round(worker.pipelined.throughput, 1),
  ...hard,
});
