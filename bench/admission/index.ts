/**
 * Issue 36 item 6, one service cannot starve another (`npm run bench -- admission`; never part of
 * `npm test`). Starts `lattice up` (built dist/, every port free on loopback, a fresh data directory,
 * embedded defaults: everything in one process and one event loop), waits for the vss demo, then:
 *
 * 1. baseline, ADMISSION_BASELINE_S (10): a small Predict (catalog_ranker, 2 targets) and a small
 *    Search (1 query, page 10, demo catalog/products) every 100 ms each, deadline 2 s, nothing else;
 * 2. load, ADMISSION_LOAD_S (30): the same probes while load.ts, in its own process, keeps 200
 *    Search calls of 4 queries and page 100 in flight (variants shoes and all).
 *
 * A probe counts as OK when it is answered OK within its 2 s deadline. The last line is one JSON
 * object: `throughput` / `baseline_throughput` are probes answered OK per second under load / at
 * baseline, `p50_ms` / `p99_ms` the probes' latencies under load, `predict_probe_ok_pct` and
 * `search_probe_ok_pct` the share of probes answered OK under load (goal ≥ 99), and the heavy load's
 * answers by status, the machine's 1-minute load average before and after the load phase (the
 * 2-core machine is shared: anything else running shows there) and the CPU time `lattice up` got per
 * second of it (its threads together).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { status } from '@grpc/grpc-js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { startLattice } from '../../test/support/lattice-up-process.js';
import { cpuTimeMs } from '../../test/support/proc-stats.js';
import { Client as VssClient } from '../../test/vss/serving/harness.js';
import { envNumber, percentile, printResult, round } from '../support/stats.js';

const env = envNumber;
const BASELINE_S = env('ADMISSION_BASELINE_S', 10);
const LOAD_S = env('ADMISSION_LOAD_S', 30);
const PROBE_EVERY_MS = 100;
const PROBE_DEADLINE_MS = 2000;
const START_TIMEOUT_MS = 180_000;

const dataDir = mkdtempSync(join(tmpdir(), 'bench-admission-'));
/** A directory for a CPU profile of `lattice up`, to see what holds its event loop. */
const PROFILE_DIR = process.env.ADMISSION_CPU_PROF;
const lattice = startLattice(
  ['up'],
  { LATTICE_DATA_DIR: dataDir, LATTICE_LOG_LEVEL: 'error' },
  PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-interval=500', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
);
const stopLattice = async () => {
  if (lattice.child.exitCode === null) {
    lattice.child.kill('SIGTERM');
    await lattice.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
};
process.once('SIGINT', () => void stopLattice().then(() => process.exit(130)));

const startedAt = performance.now();
while (!lattice.output.stdout.includes('Ctrl-C')) {
  if (lattice.child.exitCode !== null || performance.now() - startedAt > START_TIMEOUT_MS) {
    await stopLattice();
    throw new Error(`lattice up did not start:\n${lattice.output.stdout}\n${lattice.output.stderr}`);
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const orchestratorAddress = /gRPC orchestrator\.v1 .*\s+(\S+)\n/.exec(lattice.output.stdout)?.[1];
const vssAddress = /gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/.exec(lattice.output.stdout)?.[1];
if (!orchestratorAddress || !vssAddress) throw new Error(`no addresses in:\n${lattice.output.stdout}`);
console.log(`lattice up: orchestrator ${orchestratorAddress}, vss ${vssAddress}`);

const orchestrator = new OrchestratorClient(orchestratorAddress);
const vss = new VssClient(vssAddress);
let seed = 7;
const probes = {
  predict: async () => {
    const { targets } = await orchestrator.pointWise({
      modelConfigId: 'catalog_ranker',
      context: { user_id: 'u1' },
      targets: [{ id: 'c1' }, { id: 'c2' }],
      deadlineMs: PROBE_DEADLINE_MS,
    });
    if (targets.length !== 2 || targets.some((t) => t.error))
      throw new Error(`bad answer: ${targets[0]?.error}`);
  },
  search: async () => {
    seed = (seed * 48271) % 2147483647;
    const { results } = await vss.search(
      {
        entity: 'catalog',
        modelName: 'products',
        variant: 'shoes',
        queries: [{ candidateId: `c${(seed % 1000) + 1}`, pageToken: '', filters: [] }],
        pageSize: 10,
      },
      PROBE_DEADLINE_MS,
    );
    if (results[0]?.candidates.length !== 10) throw new Error('bad answer: not 10 candidates');
  },
};
type Probe = keyof typeof probes;

interface ProbeRun {
  sent: Record<Probe, number>;
  latencies: Record<Probe, number[]>;
  failures: Record<Probe, Record<string, number>>;
  seconds: number;
}

/** Both probes every 100 ms for `seconds`; resolves once every probe sent has settled. */
async function runProbes(seconds: number): Promise<ProbeRun> {
  const run: ProbeRun = {
    sent: { predict: 0, search: 0 },
    latencies: { predict: [], search: [] },
    failures: { predict: {}, search: {} },
    seconds,
  };
  const pending: Promise<void>[] = [];
  const started = performance.now();
  for (let tick = 0; tick * PROBE_EVERY_MS < seconds * 1000; tick++) {
    const due = started + tick * PROBE_EVERY_MS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    for (const name of ['predict', 'search'] as const) {
      run.sent[name]++;
      const t = performance.now();
      pending.push(
        probes[name]().then(
          () => {
            const ms = performance.now() - t;
            if (ms <= PROBE_DEADLINE_MS) run.latencies[name].push(ms);
            else run.failures[name].LATE = (run.failures[name].LATE ?? 0) + 1;
          },
          (err: unknown) => {
            const c = (err as { code?: number }).code;
            const code = c === undefined ? String(err).slice(0, 80) : (status[c] ?? String(c));
            run.failures[name][code] = (run.failures[name][code] ?? 0) + 1;
          },
        ),
      );
    }
  }
  await Promise.all(pending);
  return run;
}

const okPct = (run: ProbeRun, name: Probe) => round((100 * run.latencies[name].length) / run.sent[name], 2);
const okPerSecond = (run: ProbeRun) =>
  (run.latencies.predict.length + run.latencies.search.length) / run.seconds;
const describe = (label: string, run: ProbeRun) => {
  for (const name of ['predict', 'search'] as const) {
    const sorted = Float64Array.from(run.latencies[name]).sort();
    console.log(
      `${label} ${name}: ${okPct(run, name)} % OK of ${run.sent[name]}, p50 ${round(percentile(sorted, 50), 1)} ms, p99 ${round(percentile(sorted, 99), 1)} ms, failures ${JSON.stringify(run.failures[name])}`,
    );
  }
};

try {
  // Warm-up: the first calls compile the model config's plan and open the channels.
  await runProbes(1);
  const baseline = await runProbes(BASELINE_S);
  describe('baseline', baseline);

  const loader = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./load.ts', import.meta.url)), vssAddress, String(LOAD_S + 2)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: loader.stdout! });
  const loaderLines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    lines.on('line', (line) => {
      loaderLines.push(line);
      if (line === 'started') resolve();
    });
    loader.once('exit', (code) => reject(new Error(`load generator exited ${code}`)));
  });
  // The load ramps up: 200 calls connect and queue; probes start once it has.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const loadBefore = loadavg()[0]!;
  const cpuBefore = cpuTimeMs(lattice.child.pid!);
  const loaded = await runProbes(LOAD_S);
  // CPU time `lattice up` got per second of the load phase: below 1000 the machine, not the
  // process, decided how fast it went.
  const serverCpu = round((cpuTimeMs(lattice.child.pid!) - cpuBefore) / LOAD_S, 0);
  // The machine is shared: its 1-minute load average says how much else was running meanwhile.
  const machineLoad = [round(loadBefore, 1), round(loadavg()[0]!, 1)];
  describe('load', loaded);
  await new Promise((resolve) => loader.once('exit', resolve));
  const load = JSON.parse(loaderLines.at(-1)!) as {
    counts: Record<string, number>;
    ok_per_s: number;
    p50_ms: number;
    p99_ms: number;
  };
  console.log(`heavy Search load: ${JSON.stringify(load)}`);

  const all = Float64Array.from([...loaded.latencies.predict, ...loaded.latencies.search]).sort();
  const throughput = okPerSecond(loaded);
  const baselineThroughput = okPerSecond(baseline);
  printResult({
    bench: 'admission',
    ratio: round(throughput / baselineThroughput),
    throughput: round(throughput, 2),
    baseline_throughput: round(baselineThroughput, 2),
    p50_ms: round(percentile(all, 50), 2),
    p99_ms: round(percentile(all, 99), 2),
    predict_probe_ok_pct: okPct(loaded, 'predict'),
    search_probe_ok_pct: okPct(loaded, 'search'),
    baseline_predict_probe_ok_pct: okPct(baseline, 'predict'),
    baseline_search_probe_ok_pct: okPct(baseline, 'search'),
    heavy_ok_per_s: load.ok_per_s,
    heavy_counts: load.counts,
    heavy_p50_ms: load.p50_ms,
    heavy_p99_ms: load.p99_ms,
    machine_load_1m: machineLoad,
    server_cpu_ms_per_s: serverCpu,
    load_backoff: process.env.ADMISSION_BACKOFF === 'fixed' ? 'fixed' : 'exponential',
  });
} finally {
  orchestrator.close();
  vss.close();
  await stopLattice();
}
