/**
 * Issue 5: PointWise with 100 targets through the whole service against a bare grpc-js server
 * returning a response of the same size, in one run. Three processes besides this one, as in
 * production: the downstream (reference feature store, model server and compute server,
 * downstream.ts), the orchestrator (service.ts: its real clients, config store, feature cache and
 * inference logger) and the bare echo server (echo.ts), which uses the same generated
 * `orchestrator.v1.Predict` definition and answers with one real PredictResponse. This process is
 * only the load client. Sequential calls (concurrency 1), then a concurrent run.
 *
 * In-process overhead, per request (attribution.ts): the orchestrator's server-side handling time
 * (the gRPC metrics interceptor's timing, from call start to status sent) minus the wall time during
 * which at least one downstream call was in flight. Downstream waiting includes the orchestrator's own
 * gRPC client work for those calls (call setup, proto encode/decode), so the overhead is a lower bound
 * on its in-process CPU. Calls are sequential, so each handling window holds exactly one request.
 *
 * Logging: the same model under a second id with `logging_perc: 100` (format proto). Each round runs
 * the two in one sequential run, alternating blocks of BLOCK calls (pairedRun), so that both meet the
 * same phases of the machine; `logging_p99_increase` = (p99 logged − p99 unlogged) / p99 unlogged over
 * every round's client-side latencies pooled (per-round figures are printed too).
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { CATALOG_RANKER_ID } from '../../examples/catalog-ranker.js';
import {
  PredictClient,
  type PredictRequest,
  PredictResponse,
  PredictService,
} from '../../src/gen/orchestrator/v1/predict.js';
import { DataType } from '../../src/gen/orchestrator/v1/types.js';
import { measure, medianRun, percentile, printResult, type RunStats, round } from '../support/stats.js';
import { type Attribution, pct } from './attribution.js';
import type { DownstreamInfo } from './downstream.js';
import { LOGGED_ID, type ServiceCommand, type ServiceReply } from './protocol.js';

const TARGETS = 100;
const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1000);
/** Calls in a row to one side (unlogged or logged) of a paired run. */
const BLOCK = Number(process.env.BENCH_BLOCK ?? 50);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const CONCURRENT_CALLS = Number(process.env.BENCH_CONCURRENT_CALLS ?? 1000);
const DEADLINE_MS = 5000;

// ---------------------------------------------------------------------------------------------------
// The processes.

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

async function startDownstream(): Promise<{ info: DownstreamInfo; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', here('./downstream.ts')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const info = await new Promise<DownstreamInfo>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`downstream exited early (${code})`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as DownstreamInfo));
  });
  return { info, child };
}

/** A forked child with an IPC channel; `next` resolves with its next message. */
function forkChild(file: string, env: Record<string, string> = {}) {
  const child = fork(here(file), [], {
    // BENCH_CPU_PROF=<dir> profiles the orchestrator and echo processes (node --cpu-prof);
    // BENCH_NODE_FLAGS adds V8/Node flags to both (e.g. --max-semi-space-size=64).
    execArgv: [
      '--import',
      'tsx',
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== ''),
    ],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting: ((message: unknown) => void)[] = [];
  child.on('message', (message) => waiting.shift()?.(message));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${file} exited (${code})`))),
  );
  exited.catch(() => {});
  const next = <T>() =>
    Promise.race([new Promise<T>((resolve) => waiting.push(resolve as (m: unknown) => void)), exited]);
  return { child, next };
}

const downstream = await startDownstream();
const orchestrator = forkChild('./service.ts', { BENCH_DOWNSTREAM: JSON.stringify(downstream.info) });

const ready = await orchestrator.next<ServiceReply & { type: 'ready' }>();
const command = (message: ServiceCommand) => orchestrator.child.send(message);

// ---------------------------------------------------------------------------------------------------
// Requests.

const catalogs = downstream.info.catalogs.slice(0, TARGETS);
if (catalogs.length < TARGETS) throw new Error(`only ${catalogs.length} catalogs seeded`);
function request(modelConfigId: string, i: number, trackingId: string): PredictRequest {
  const user = downstream.info.users[i % downstream.info.users.length]!;
  return {
    modelConfigId,
    trackingId,
    contextFeatures: [
      { name: 'user_id', dataType: DataType.DATA_TYPE_STRING, vectorDim: 0, value: Buffer.from(user) },
    ],
    targetInputSchema: [],
    targets: catalogs.map((id) => ({ id, featureValues: [] })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

type Caller = (req: PredictRequest) => Promise<PredictResponse>;
function caller(address: string): { call: Caller; close: () => void } {
  const client = new PredictClient(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  const call: Caller = (req) =>
    new Promise((resolve, reject) =>
      client.inferPointWise(req, md, { deadline: Date.now() + DEADLINE_MS }, (err, res) =>
        err ? reject(err) : resolve(res),
      ),
    );
  return { call, close: () => client.close() };
}

const service = caller(`127.0.0.1:${ready.port}`);
// Warm the service first (JIT, channels, feature cache), so that the sample is a steady-state response
// (a cold first call can time out a feature component and carry an error string on every row).
for (let i = 0; i < WARMUP; i++) await service.call(request(CATALOG_RANKER_ID, i, `warm-${i}`));
const sample = await service.call(request(CATALOG_RANKER_ID, 0, 'sample'));
const rowErrors = sample.targetScores.filter((score) => score.error !== '').length;
if (sample.targetScores.length !== TARGETS) throw new Error(`expected ${TARGETS} scores`);
const responseBytes = PredictResponse.encode(sample).finish();
const requestBytes = PredictService.inferPointWise.requestSerialize(
  request(CATALOG_RANKER_ID, 0, 'sample'),
).length;

const echoServer = forkChild('./echo.ts');
echoServer.child.send({ response: Buffer.from(responseBytes).toString('base64') });
const echo = caller(`127.0.0.1:${(await echoServer.next<{ port: number }>()).port}`);

// ---------------------------------------------------------------------------------------------------
// Rounds.

let seq = 0;
const failures: Record<string, number> = {
  echo: 0,
  service: 0,
  logged: 0,
  echo_concurrent: 0,
  service_concurrent: 0,
};

async function run(
  kind: 'echo' | 'service' | 'logged',
  calls: number,
  concurrency: number,
): Promise<RunStats> {
  const model = kind === 'logged' ? LOGGED_ID : CATALOG_RANKER_ID;
  const target = kind === 'echo' ? echo : service;
  const prefix = `${kind}-${seq++}-`;
  let errors = 0;
  const stats = await measure(calls, concurrency, (i) =>
    target.call(request(model, i, prefix + i)).catch((err: unknown) => {
      // A failed call (e.g. a downstream deadline on the loaded machine) is counted, not fatal.
      if (errors++ === 0) console.error(`${kind}: ${err instanceof Error ? err.message : String(err)}`);
    }),
  );
  const phase = concurrency > 1 ? `${kind}_concurrent` : kind;
  failures[phase] = (failures[phase] ?? 0) + errors;
  return stats;
}

interface Overhead extends Attribution {
  /** Orchestrator CPU per call, ms. */
  cpuPerCall: number;
  /** handling − waiting, per call. */
  overhead: number[];
  /** Client-side latency of each call, ascending. */
  latencies: Float64Array;
}

/**
 * One sequential run of CALLS unlogged and CALLS logged calls in alternating blocks of BLOCK calls, with
 * the orchestrator's attribution of each call: both sides meet the same phases of the machine, which
 * on this shared 2-vCPU VM move a p99 by more than the 5 % the logging goal allows.
 */
async function pairedRun(loggedFirst: boolean): Promise<{
  service: RunStats & Overhead;
  logged: RunStats & Overhead;
  /** The unlogged calls of every other unlogged block, and of the blocks between: an A/A pair. */
  halves: [number[], number[]];
}> {
  command({ cmd: 'begin', countKinds: true });
  const total = 2 * CALLS;
  const latencies = new Float64Array(total);
  const logged = new Uint8Array(total);
  const prefix = `paired-${seq++}-`;
  for (let i = 0; i < total; i++) {
    const isLogged = (Math.floor(i / BLOCK) % 2 === 0) === loggedFirst;
    logged[i] = isLogged ? 1 : 0;
    const kind = isLogged ? 'logged' : 'service';
    const t = performance.now();
    await service
      .call(request(isLogged ? LOGGED_ID : CATALOG_RANKER_ID, i, prefix + i))
      .catch((err: unknown) => {
        const failed = (failures[kind] ?? 0) + 1;
        failures[kind] = failed;
        if (failed === 1) console.error(`${kind}: ${err instanceof Error ? err.message : String(err)}`);
      });
    latencies[i] = performance.now() - t;
  }
  command({ cmd: 'end', calls: total });
  const ended = await orchestrator.next<ServiceReply & { type: 'ended' }>();
  if (ended.executions < total - failures.service! - failures.logged!) {
    throw new Error(`attribution: ${ended.executions} executions for ${total} calls`);
  }
  const side = (want: number): RunStats & Overhead => {
    const pick = <T>(values: readonly T[]) => values.filter((_, i) => logged[i] === want);
    const own = Float64Array.from(pick([...latencies])).sort();
    const seconds = own.reduce((sum, ms) => sum + ms, 0) / 1000;
    const handling = pick(ended.handling);
    const waiting = pick(ended.waiting);
    return {
      calls: own.length,
      seconds,
      throughput: own.length / seconds,
      p50_ms: percentile(own, 50),
      p99_ms: percentile(own, 99),
      latencies: own,
      // Both sides share the process: its CPU per call over the whole run.
      cpuPerCall: ended.cpuMs / total,
      lead: pick(ended.lead),
      gaps: pick(ended.gaps),
      tail: pick(ended.tail),
      gc: pick(ended.gc),
      handling,
      waiting,
      overhead: handling.map((h, i) => h - waiting[i]!),
    };
  };
  const halves: [number[], number[]] = [[], []];
  for (let i = 0; i < total; i++) {
    if (logged[i] === 0) halves[Math.floor(Math.floor(i / BLOCK) / 2) % 2]!.push(latencies[i]!);
  }
  return { service: side(0), logged: side(1), halves };
}

// Warm up the other paths before measuring.
await run('echo', WARMUP, 1);
await run('logged', WARMUP, 1);

const echoRuns: RunStats[] = [];
const serviceRuns: (RunStats & Overhead)[] = [];
const loggedRuns: (RunStats & Overhead)[] = [];
const unloggedHalves: [number[], number[]] = [[], []];
for (let r = 0; r < ROUNDS; r++) {
  // Rotate the order so that no side always follows the same neighbour.
  const echoFirst = r % 2 === 0;
  if (echoFirst) echoRuns.push(await run('echo', CALLS, 1));
  const paired = await pairedRun(r % 2 === 1);
  serviceRuns.push(paired.service);
  loggedRuns.push(paired.logged);
  unloggedHalves[0].push(...paired.halves[0]);
  unloggedHalves[1].push(...paired.halves[1]);
  if (!echoFirst) echoRuns.push(await run('echo', CALLS, 1));
  const s = serviceRuns.at(-1)!;
  const l = loggedRuns.at(-1)!;
  const e = echoRuns.at(-1)!;
  console.log(
    `round ${r + 1}: service ${Math.round(s.throughput)}/s p50 ${s.p50_ms.toFixed(3)} p99 ${s.p99_ms.toFixed(3)} ` +
      `overhead p50 ${pct(s.overhead, 50).toFixed(3)} p99 ${pct(s.overhead, 99).toFixed(3)} cpu ${s.cpuPerCall.toFixed(3)} | ` +
      `logged ${Math.round(l.throughput)}/s p99 ${l.p99_ms.toFixed(3)} overhead p99 ${pct(l.overhead, 99).toFixed(3)} | ` +
      `echo ${Math.round(e.throughput)}/s p50 ${e.p50_ms.toFixed(3)} p99 ${e.p99_ms.toFixed(3)}`,
  );
}

// Concurrent run (throughput under load; overhead is only attributed in sequential runs).
const concurrentEcho: RunStats[] = [];
const concurrentService: RunStats[] = [];
if (CONCURRENCY > 1) {
  await run('service', 200, CONCURRENCY);
  for (let r = 0; r < 3; r++) {
    concurrentEcho.push(await run('echo', CONCURRENT_CALLS, CONCURRENCY));
    concurrentService.push(await run('service', CONCURRENT_CALLS, CONCURRENCY));
  }
}

service.close();
echo.close();
command({ cmd: 'close' });
const closed = await orchestrator.next<ServiceReply & { type: 'closed' }>();
echoServer.child.disconnect();
downstream.child.stdin?.end();

// ---------------------------------------------------------------------------------------------------
// Report.

/** Mean per request of each kind of downstream call, over the paired runs (both sides). */
const breakdown = Object.entries(closed.breakdown).map(
  ([kind, k]) =>
    `${kind} ${(k.ms / (2 * CALLS * ROUNDS)).toFixed(3)} ms in ${(k.calls / (2 * CALLS * ROUNDS)).toFixed(1)} calls`,
);
const median = (values: readonly number[]): number => pct(values, 50);
const s = medianRun(serviceRuns);
const b = medianRun(echoRuns);
const l = medianRun(loggedRuns);
// The two sides ran interleaved in every round, so their calls can be pooled: the p99 of all
// logged calls against the p99 of all unlogged ones (ROUNDS × CALLS each) is far steadier than
// any one round's (a p99 of 2,000 calls is its 20th worst).
const pooledP99 = (runs: readonly { latencies: Float64Array }[]) =>
  percentile(Float64Array.from(runs.flatMap((x) => [...x.latencies])).sort(), 99);
const serviceP99 = pooledP99(serviceRuns);
const loggedP99 = pooledP99(loggedRuns);
const loggingIncrease = (loggedP99 - serviceP99) / serviceP99;
// The same comparison between two halves of the unlogged calls (A/A): what chance alone gives.
// Each half holds half the calls, so its spread is about √2 times that of the comparison above.
const halfP99 = unloggedHalves.map((half) => percentile(Float64Array.from(half).sort(), 99));
const loggingNoise = (halfP99[1]! - halfP99[0]!) / halfP99[0]!;
const roundIncreases = loggedRuns.map(
  (run, r) => (run.p99_ms - serviceRuns[r]!.p99_ms) / serviceRuns[r]!.p99_ms,
);
const overhead = serviceRuns.flatMap((x) => x.overhead);
const handling = serviceRuns.flatMap((x) => x.handling);
const waiting = serviceRuns.flatMap((x) => x.waiting);
const loggedOverhead = loggedRuns.flatMap((x) => x.overhead);
const fmt = (x: RunStats) =>
  `${Math.round(x.throughput)} calls/s, p50 ${x.p50_ms.toFixed(3)} ms, p99 ${x.p99_ms.toFixed(3)} ms`;
console.log(
  `request ${requestBytes} B, response ${responseBytes.length} B (${rowErrors} rows with a row error), ${TARGETS} targets`,
);
console.log(`bare grpc-js echo:        ${fmt(b)}`);
console.log(`orchestrator:             ${fmt(s)}`);
console.log(`orchestrator, logging:    ${fmt(l)}`);
console.log(
  `server handling p50/p99 ${pct(handling, 50).toFixed(3)}/${pct(handling, 99).toFixed(3)} ms, ` +
    `downstream waiting p50/p99 ${pct(waiting, 50).toFixed(3)}/${pct(waiting, 99).toFixed(3)} ms, ` +
    `overhead p50/p99 ${pct(overhead, 50).toFixed(3)}/${pct(overhead, 99).toFixed(3)} ms ` +
    `(with logging ${pct(loggedOverhead, 50).toFixed(3)}/${pct(loggedOverhead, 99).toFixed(3)} ms)`,
);
const split = (key: 'lead' | 'gaps' | 'tail') => {
  const values = serviceRuns.flatMap((x) => x[key]);
  return `${key} p50 ${pct(values, 50).toFixed(3)} / p99 ${pct(values, 99).toFixed(3)} ms`;
};
console.log(`overhead by place: ${split('lead')}; ${split('gaps')}; ${split('tail')}`);
const overheadGc = serviceRuns.flatMap((x) => x.gc);
const withGc = overheadGc.filter((ms) => ms > 0).length;
const overheadLessGc = overhead.map((ms, i) => ms - overheadGc[i]!);
console.log(
  `GC pauses inside the overhead: ${withGc} of ${overhead.length} calls (${((100 * withGc) / overhead.length).toFixed(2)} %), ` +
    `${pct(
      overheadGc.filter((ms) => ms > 0),
      50,
    ).toFixed(3)} ms median when present; ` +
    `overhead less GC p50/p99 ${pct(overheadLessGc, 50).toFixed(3)}/${pct(overheadLessGc, 99).toFixed(3)} ms`,
);
console.log(`downstream calls per request (mean): ${breakdown.join('; ')}`);
console.log(
  `p99 over all rounds' calls: ${serviceP99.toFixed(3)} ms; with logging ${loggedP99.toFixed(3)} ms; ` +
    `increase per round ${roundIncreases.map((x) => x.toFixed(3)).join(', ')}; ` +
    `A/A between two halves of the unlogged calls ${loggingNoise.toFixed(3)}`,
);
console.log(`inference logger: dropped at close ${closed.dropped}; ${closed.logMetrics.join('; ')}`);
const cs = concurrentService.length ? medianRun(concurrentService) : undefined;
const cb = concurrentEcho.length ? medianRun(concurrentEcho) : undefined;
if (cs && cb) {
  console.log(`concurrency ${CONCURRENCY}: orchestrator ${fmt(cs)}; echo ${fmt(cb)}`);
}

printResult({
  bench: 'predict',
  ratio: round(s.throughput / b.throughput),
  throughput: round(s.throughput, 1),
  baseline_throughput: round(b.throughput, 1),
  p50_ms: round(s.p50_ms),
  p99_ms: round(s.p99_ms),
  baseline_p50_ms: round(b.p50_ms),
  baseline_p99_ms: round(b.p99_ms),
  overhead_p50_ms: round(pct(overhead, 50)),
  overhead_p99_ms: round(pct(overhead, 99)),
  handling_p50_ms: round(pct(handling, 50)),
  handling_p99_ms: round(pct(handling, 99)),
  downstream_p50_ms: round(pct(waiting, 50)),
  downstream_p99_ms: round(pct(waiting, 99)),
  overhead_gc_share: round(withGc / overhead.length, 4),
  overhead_less_gc_p99_ms: round(pct(overheadLessGc, 99)),
  logging_p99_increase: round(loggingIncrease),
  logging_p99_aa_difference: round(loggingNoise),
  logged_p50_ms: round(l.p50_ms),
  logged_p99_ms: round(loggedP99),
  logged_overhead_p50_ms: round(pct(loggedOverhead, 50)),
  logged_overhead_p99_ms: round(pct(loggedOverhead, 99)),
  service_cpu_ms_per_call: round(median(serviceRuns.map((x) => x.cpuPerCall))),
  logged_cpu_ms_per_call: round(median(loggedRuns.map((x) => x.cpuPerCall))),
  concurrency: CONCURRENCY,
  concurrent_ratio: cs && cb ? round(cs.throughput / cb.throughput) : null,
  concurrent_throughput: cs ? round(cs.throughput, 1) : null,
  concurrent_baseline_throughput: cb ? round(cb.throughput, 1) : null,
  concurrent_p99_ms: cs ? round(cs.p99_ms) : null,
  targets: TARGETS,
  calls: CALLS,
  rounds: ROUNDS,
  request_bytes: requestBytes,
  response_bytes: responseBytes.length,
  response_row_errors: rowErrors,
  failed_calls: failures,
});
