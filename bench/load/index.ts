/**
 * Issue 13 load test (`npm run bench -- load`; never part of `npm test`). Starts `lattice
 * orchestrator` and `lattice vss serving` as their own processes on embedded defaults (the
 * orchestrator's reference feature store and model server in a third process, downstream.ts), then:
 *
 * 1. baseline: a good request to each service every 100 ms, nothing else (LOAD_BASELINE_S);
 * 2. per RPC, for LOAD_PHASE_S: the largest request it accepts (requests.ts), LOAD_CONCURRENCY (4)
 *    at a time with a client deadline of LOAD_DEADLINE_MS, while the good requests go on every 100 ms;
 * 3. after each phase, once the last heavy call's deadline has passed (+ LOAD_GRACE_MS), the server's
 *    CPU time over LOAD_IDLE_WINDOW_MS (from /proc/<pid>/stat, good requests paused): work still
 *    running for callers that have given up shows up here. Compared with the idle rate measured
 *    before the run.
 *
 * Pass: each phase's good p99 ≤ the baseline good p99 of that service + 100 ms; peak RSS of each
 * server < 1.5 GB; post-deadline CPU ≤ the busiest idle second + LOAD_IDLE_SLACK (50 ms of CPU per second).
 * The last line is one JSON object (engineering.md): `throughput` / `baseline_throughput` are good
 * requests answered per second under load / at baseline, `p50_ms` / `p99_ms` the worst phase's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { status } from '@grpc/grpc-js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { callRaw, rawClient } from '../../test/e2e/fuzz/fuzz-runner.js';
import { DUO_ID, startOrchestratorProcess } from '../../test/support/orchestrator-process.js';
import { cpuRate, memoryOf } from '../../test/support/proc-stats.js';
import { seedVssDataDir, startVssProcess } from '../../test/support/vss-process.js';
import { Client as VssClient } from '../../test/vss/serving/harness.js';
import { envNumber, percentile, printResult, round } from '../support/stats.js';
import type { LoadDownstream } from './downstream.js';
import { type HeavyRequest, heavyRequests } from './requests.js';

const env = envNumber;
const BASELINE_S = env('LOAD_BASELINE_S', 10);
const PHASE_S = env('LOAD_PHASE_S', 10);
const CONCURRENCY = env('LOAD_CONCURRENCY', 4);
const DEADLINE_MS = env('LOAD_DEADLINE_MS', 2000);
const GRACE_MS = env('LOAD_GRACE_MS', 250);
const IDLE_WINDOW_MS = env('LOAD_IDLE_WINDOW_MS', 1000);
const IDLE_SLACK = env('LOAD_IDLE_SLACK', 50);
const GOOD_EVERY_MS = 100;
const GOOD_OVERHEAD_MS = 100;
const RSS_LIMIT = 1.5e9;
const SCALE = env('LOAD_SCALE', 1);
const VSS_POINTS = env('LOAD_VSS_POINTS', 10_000);
const VSS_DIMENSION = env('LOAD_VSS_DIMENSION', 32);
/** Comma-separated RPC names (`Search,GetEmbeddings`) to run only those phases; all when unset. */
const ONLY = process.env.LOAD_ONLY?.split(',').filter(Boolean);
/** A directory to write both servers' CPU profiles to (`--cpu-prof`), to see what holds their event loops. */
const PROFILE_DIR = process.env.LOAD_CPU_PROF;
/** Extra Node options for every server process (`--trace-gc`), space-separated. */
const EXTRA_NODE_ARGS = process.env.LOAD_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const nodeArgs = [
  ...(PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${PROFILE_DIR}`] : []),
  ...EXTRA_NODE_ARGS,
];

const mb = (bytes: number) => round(bytes / 1e6, 0);

// --- Start everything ------------------------------------------------------------------------------

const downstreamChild: ChildProcess = spawn(
  process.execPath,
  [
    ...nodeArgs.filter((a) => !EXTRA_NODE_ARGS.includes(a)),
    '--import',
    'tsx',
    fileURLToPath(new URL('./downstream.ts', import.meta.url)),
  ],
  { stdio: ['pipe', 'pipe', 'inherit'] },
);
const downstream = await new Promise<LoadDownstream>((resolve, reject) => {
  createInterface({ input: downstreamChild.stdout! }).once('line', (line) => resolve(JSON.parse(line)));
  downstreamChild.once('exit', (code) => reject(new Error(`downstream exited ${code}`)));
});
console.log(`seeding vss: ${VSS_POINTS} points of dimension ${VSS_DIMENSION} …`);
const world = await seedVssDataDir({ count: VSS_POINTS, dimension: VSS_DIMENSION, clusters: 16 });
const [orchestrator, vss] = await Promise.all([
  startOrchestratorProcess({
    configDir: downstream.configDir,
    featureStoreTarget: downstream.featureStore,
    nodeArgs,
  }),
  startVssProcess({ dataDir: world.dataDir, nodeArgs }),
]);
const pids = { orchestrator: orchestrator.child.pid!, vss: vss.child.pid! };
const heavy = heavyRequests({ scale: SCALE, catalogs: downstream.catalogs, fixture: world.fixture }).filter(
  (r) => ONLY === undefined || ONLY.includes(r.path.split('/').pop()!),
);
const clients = { orchestrator: rawClient(orchestrator.address), vss: rawClient(vss.address) };
const orchestratorClient = new OrchestratorClient(orchestrator.address);
const vssClient = new VssClient(vss.address);

// --- Good requests -------------------------------------------------------------------------------

type ServiceName = 'orchestrator' | 'vss';
const good: Record<ServiceName, () => Promise<void>> = {
  orchestrator: async () => {
    const { targets } = await orchestratorClient.pointWise({
      modelConfigId: DUO_ID,
      context: { weight: 1 },
      targets: [
        { id: 'a', features: { price: 1, quality: 0.5 } },
        { id: 'b', features: { price: -1, quality: 2 } },
      ],
      schema: { price: 'FP32', quality: 'FP32', weight: 'FP32' },
      deadlineMs: 5000,
    });
    if (targets.length !== 2 || targets[0]!.error) throw new Error(`bad good answer: ${targets[0]?.error}`);
  },
  vss: async () => {
    const { results } = await vssClient.search(
      {
        queries: [{ embedding: { values: Array.from(world.fixture.vector(5)) }, pageToken: '', filters: [] }],
        pageSize: 10,
      },
      5000,
    );
    if (results[0]!.candidates.length !== 10) throw new Error('bad good answer: not 10 candidates');
  },
};

interface GoodRun {
  latencies: Record<ServiceName, number[]>;
  failures: Record<ServiceName, string[]>;
  seconds: number;
  stop(): Promise<void>;
}

/** A good request to each service every 100 ms until stopped. */
function runGood(): GoodRun {
  const run: GoodRun = {
    latencies: { orchestrator: [], vss: [] },
    failures: { orchestrator: [], vss: [] },
    seconds: 0,
    stop: async () => {},
  };
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  const tick = () => {
    for (const name of ['orchestrator', 'vss'] as const) {
      const t = performance.now();
      const p = good[name]().then(
        () => {
          run.latencies[name].push(performance.now() - t);
        },
        (err: unknown) => {
          run.failures[name].push(String(err).slice(0, 200));
        },
      );
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
  };
  const timer = setInterval(tick, GOOD_EVERY_MS);
  run.stop = async () => {
    clearInterval(timer);
    await Promise.all(pending);
    run.seconds = (performance.now() - started) / 1000;
  };
  return run;
}

const stats = (xs: number[]) => {
  const sorted = Float64Array.from(xs).sort();
  return { n: xs.length, p50: round(percentile(sorted, 50), 1), p99: round(percentile(sorted, 99), 1) };
};

// --- Memory sampling -----------------------------------------------------------------------------

const peakRss: Record<ServiceName, number> = { orchestrator: 0, vss: 0 };
const sampler = setInterval(() => {
  for (const name of ['orchestrator', 'vss'] as const) {
    try {
      peakRss[name] = Math.max(peakRss[name], memoryOf(pids[name]).rss);
    } catch {
      // The process is gone: its exit is reported below.
    }
  }
}, 50);

// --- The run -------------------------------------------------------------------------------------

// Warm both services (channels, models, JIT) before the baseline.
for (let i = 0; i < 20; i++) await Promise.all([good.orchestrator(), good.vss()]);
const baselineRun = runGood();
await new Promise((r) => setTimeout(r, BASELINE_S * 1000));
await baselineRun.stop();
const baseline = {
  orchestrator: stats(baselineRun.latencies.orchestrator),
  vss: stats(baselineRun.latencies.vss),
};
// Idle rates once warm (a fresh vss process is still finishing its index for a few seconds): an idle
// server polls its configuration, so its CPU rate varies from window to window; the busiest of five
// 1 s windows is the bar.
const idleRates = async (pid: number) => {
  const rates: number[] = [];
  for (let i = 0; i < 5; i++) rates.push(await cpuRate(pid, IDLE_WINDOW_MS));
  return { mean: rates.reduce((a, b) => a + b, 0) / rates.length, max: Math.max(...rates) };
};
const idleStats = { orchestrator: await idleRates(pids.orchestrator), vss: await idleRates(pids.vss) };
const idle = { orchestrator: idleStats.orchestrator.max, vss: idleStats.vss.max };
console.log(
  `idle CPU (mean / busiest 1 s): orchestrator ${round(idleStats.orchestrator.mean, 1)} / ${round(idle.orchestrator, 1)} ms/s, vss ${round(idleStats.vss.mean, 1)} / ${round(idle.vss, 1)} ms/s; baseline good requests (every ${GOOD_EVERY_MS} ms): ` +
    `orchestrator p50 ${baseline.orchestrator.p50} p99 ${baseline.orchestrator.p99} ms (n=${baseline.orchestrator.n}), ` +
    `vss p50 ${baseline.vss.p50} p99 ${baseline.vss.p99} ms (n=${baseline.vss.n})`,
);

interface PhaseResult {
  rpc: string;
  shape: string;
  bytes: number;
  heavy: { sent: number; statuses: Record<string, number>; p50_ms: number };
  good: { n: number; p50: number; p99: number; failures: number };
  goodPerSecond: number;
  overheadP99: number;
  postDeadlineCpu: number;
  settleMs: number;
  pass: { latency: boolean; cpu: boolean };
}

async function phase(request: HeavyRequest): Promise<PhaseResult> {
  const name = request.service;
  const client = clients[name];
  const statuses: Record<string, number> = {};
  const heavyLatencies: number[] = [];
  let lastDeadline = 0;
  let sent = 0;
  const until = performance.now() + PHASE_S * 1000;
  const goodRun = runGood();
  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      lastDeadline = Math.max(lastDeadline, Date.now() + DEADLINE_MS);
      sent++;
      const { error } = await callRaw(client, request.path, request.bytes, DEADLINE_MS);
      heavyLatencies.push(performance.now() - t);
      const code = status[error?.code ?? status.OK];
      statuses[code] = (statuses[code] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await goodRun.stop();
  // Every heavy caller has given up or been answered. From the last deadline on, 250 ms windows until
  // one is back at the idle rate (settle), then one window starting GRACE_MS after the deadline.
  const untilDeadline = lastDeadline - Date.now();
  if (untilDeadline > 0) await new Promise((r) => setTimeout(r, untilDeadline));
  let settleMs = Number.POSITIVE_INFINITY;
  while (Date.now() - lastDeadline < 15_000) {
    const windowStart = Date.now();
    if ((await cpuRate(pids[name], 250)) <= idle[name] + IDLE_SLACK) {
      settleMs = Math.max(0, windowStart - lastDeadline);
      break;
    }
  }
  const untilGrace = lastDeadline + GRACE_MS - Date.now();
  if (untilGrace > 0) await new Promise((r) => setTimeout(r, untilGrace));
  const postDeadlineCpu = await cpuRate(pids[name], IDLE_WINDOW_MS);
  const g = stats(goodRun.latencies[name]);
  const overheadP99 = round(g.p99 - baseline[name].p99, 1);
  return {
    rpc: request.path,
    shape: request.shape,
    bytes: request.bytes.length,
    heavy: { sent, statuses, p50_ms: stats(heavyLatencies).p50 },
    good: { ...g, failures: goodRun.failures[name].length },
    goodPerSecond: round(goodRun.latencies[name].length / goodRun.seconds, 2),
    overheadP99,
    postDeadlineCpu: round(postDeadlineCpu, 1),
    settleMs,
    pass: {
      latency: g.p99 <= baseline[name].p99 + GOOD_OVERHEAD_MS && goodRun.failures[name].length === 0,
      cpu: postDeadlineCpu <= idle[name] + IDLE_SLACK,
    },
  };
}

const results: PhaseResult[] = [];
for (const request of heavy) {
  const result = await phase(request);
  results.push(result);
  console.log(
    `${result.rpc} (${result.shape}, ${(result.bytes / 1e6).toFixed(1)} MB) ×${CONCURRENCY}, deadline ${DEADLINE_MS} ms: ` +
      `heavy ${result.heavy.sent} sent ${JSON.stringify(result.heavy.statuses)} p50 ${result.heavy.p50_ms} ms; ` +
      `good p50 ${result.good.p50} p99 ${result.good.p99} ms (n=${result.good.n}, ${result.good.failures} failed; p99 +${result.overheadP99} ms over baseline) ${result.pass.latency ? 'ok' : 'FAIL'}; ` +
      `CPU ${GRACE_MS} ms after the last deadline ${result.postDeadlineCpu} ms/s (idle ${round(idle[request.service], 1)}; idle again ${result.settleMs} ms after it) ${result.pass.cpu ? 'ok' : 'FAIL'}`,
  );
  for (const name of ['orchestrator', 'vss'] as const) {
    const exited = name === 'orchestrator' ? orchestrator.exited() : vss.exited();
    if (exited) throw new Error(`${name} exited: ${JSON.stringify(exited)}`);
  }
}
clearInterval(sampler);
for (const name of ['orchestrator', 'vss'] as const)
  peakRss[name] = Math.max(peakRss[name], memoryOf(pids[name]).peakRss);
console.log(
  `peak RSS: orchestrator ${mb(peakRss.orchestrator)} MB, vss ${mb(peakRss.vss)} MB (limit ${mb(RSS_LIMIT)} MB)`,
);

if (process.env.LOAD_SERVER_LOG) {
  // What the servers printed (with LOAD_NODE_ARGS=--trace-gc, their GC pauses), for a look afterwards.
  writeFileSync(`${process.env.LOAD_SERVER_LOG}/orchestrator.log`, orchestrator.output());
  writeFileSync(`${process.env.LOAD_SERVER_LOG}/vss.log`, vss.output());
}
orchestratorClient.close();
vssClient.close();
clients.orchestrator.close();
clients.vss.close();
await Promise.all([orchestrator.stop(), vss.stop()]);
downstreamChild.stdin!.end();

const worst = results.reduce((a, b) => (b.good.p99 > a.good.p99 ? b : a));
const goodUnderLoad = results.reduce((n, r) => n + r.goodPerSecond, 0) / results.length;
const baselinePerSecond = baselineRun.latencies.orchestrator.length / baselineRun.seconds;
const pass = {
  latency: results.every((r) => r.pass.latency),
  rss: peakRss.orchestrator < RSS_LIMIT && peakRss.vss < RSS_LIMIT,
  nothing_after_deadline: results.every((r) => r.pass.cpu),
};
printResult({
  bench: 'load',
  ratio: round(goodUnderLoad / baselinePerSecond),
  throughput: round(goodUnderLoad, 2),
  baseline_throughput: round(baselinePerSecond, 2),
  p50_ms: worst.good.p50,
  p99_ms: worst.good.p99,
  baseline_p99_ms: { orchestrator: baseline.orchestrator.p99, vss: baseline.vss.p99 },
  overhead_p99_ms: Math.max(...results.map((r) => r.overheadP99)),
  peak_rss_mb: { orchestrator: mb(peakRss.orchestrator), vss: mb(peakRss.vss) },
  post_deadline_cpu_ms_per_s: Math.max(...results.map((r) => r.postDeadlineCpu)),
  idle_cpu_ms_per_s: {
    orchestrator: { mean: round(idleStats.orchestrator.mean, 1), max: round(idle.orchestrator, 1) },
    vss: { mean: round(idleStats.vss.mean, 1), max: round(idle.vss, 1) },
  },
  deadline_ms: DEADLINE_MS,
  concurrency: CONCURRENCY,
  scale: SCALE,
  phases: Object.fromEntries(
    results.map((r) => [
      r.rpc.split('/').pop(),
      {
        heavy: r.heavy.statuses,
        good_p50_ms: r.good.p50,
        good_p99_ms: r.good.p99,
        overhead_p99_ms: r.overheadP99,
        post_deadline_cpu_ms_per_s: r.postDeadlineCpu,
        settle_ms: r.settleMs,
      },
    ]),
  ),
  pass,
});
process.exit(pass.latency && pass.rss && pass.nothing_after_deadline ? 0 : 1);
