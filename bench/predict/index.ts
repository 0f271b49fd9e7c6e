/**
 * Issue 5: PointWise with 100 targets through the whole service — the orchestrator over loopback gRPC,
 * its real clients calling the reference feature store, model server and compute server (in a child
 * process, bench/predict/downstream.ts) — against a bare grpc-js server using the same generated
 * `orchestrator.v1.Predict` definition that answers every call with one real PredictResponse (same
 * request, same response size). Sequential calls (concurrency 1), then a concurrent run.
 *
 * In-process overhead, per request: the orchestrator's server-side handling time (the gRPC metrics
 * interceptor's timing, from call start to status sent) minus the wall time during which at least one
 * downstream call (feature store, model server, compute server) was in flight — intervals merged,
 * since feature calls run concurrently — measured by timing decorators around the FeatureFetcher,
 * ModelInferer and RemoteCompute clients given to `createComponentBuilder`. Calls are sequential, so
 * each handling window holds exactly one request; the observe hook checks the tracking ids line up.
 *
 * Logging: the same model under a second id with `logging.logging_perc: 100` (format proto), the
 * InferenceLogger on a memory queue attached to both (the unlogged one samples 0 %), alternated with
 * the others each round; `logging_p99_increase` = (p99 logged − p99 unlogged) / p99 unlogged.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { CATALOG_RANKER_ID, catalogRankerConfig } from '../../examples/catalog-ranker.js';
import {
  PredictClient,
  type PredictRequest,
  PredictResponse,
  type PredictServer,
  PredictService,
} from '../../src/gen/orchestrator/v1/predict.js';
import { DataType } from '../../src/gen/orchestrator/v1/types.js';
import { startOrchestrator } from '../../src/orchestrator/api/index.js';
import {
  createOrchestratorClients,
  type FeatureFetcher,
  type ModelInferer,
  type RemoteCompute,
} from '../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../src/orchestrator/components/index.js';
import { InferenceLogger, QueueLogSink } from '../../src/orchestrator/logging/index.js';
import { createCache } from '../../src/platform/cache/index.js';
import { createConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics, type TimingMetric } from '../../src/platform/metrics/index.js';
import { createQueue } from '../../src/platform/queue/index.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';
import type { DownstreamInfo } from './downstream.js';

const TARGETS = 100;
const CALLS = Number(process.env.BENCH_CALLS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const CONCURRENT_CALLS = Number(process.env.BENCH_CONCURRENT_CALLS ?? 1000);
const DEADLINE_MS = 5000;
const LOGGED_ID = `${CATALOG_RANKER_ID}_logged`;
const DEFER_LOG = process.env.BENCH_DEFER_LOG === '1';

// ---------------------------------------------------------------------------------------------------
// Measurement: handling windows (from the gRPC metrics interceptor) and downstream busy intervals.

interface Window {
  start: number;
  end: number;
}

/** Metrics that also keep each orchestrator call's handling window (start, end in performance.now ms). */
class WindowMetrics extends Metrics {
  readonly windows: Window[] = [];
  override timing(...args: Parameters<Metrics['timing']>): TimingMetric {
    const inner = super.timing(...args);
    if (args[0] !== 'grpc_server_handling_seconds') return inner;
    return {
      observeMs: (labels, ms) => {
        const end = performance.now();
        this.windows.push({ start: end - ms, end });
        inner.observeMs(labels, ms);
      },
    };
  }
}

/** Wall time during which at least one downstream call was in flight, as merged intervals. */
class DownstreamTimer {
  readonly intervals: Window[] = [];
  private inFlight = 0;
  private since = 0;

  /** Summed call durations (not merged) and call counts by kind, for the breakdown. */
  readonly byKind = new Map<string, { ms: number; calls: number }>();
  /** Whether `byKind` counts now (only during the unlogged sequential runs). */
  countKinds = false;

  track<T>(kind: string, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    if (this.inFlight++ === 0) this.since = started;
    const finish = () => {
      if (!this.countKinds) return this.done();
      const k = this.byKind.get(kind) ?? { ms: 0, calls: 0 };
      k.ms += performance.now() - started;
      k.calls++;
      this.byKind.set(kind, k);
      this.done();
    };
    return call().then(
      (value) => {
        finish();
        return value;
      },
      (err: unknown) => {
        finish();
        throw err;
      },
    );
  }

  private done(): void {
    if (--this.inFlight === 0) this.intervals.push({ start: this.since, end: performance.now() });
  }
}

/** Per window: its length and the part of it covered by downstream intervals (both sorted by start). */
function attribute(
  windows: readonly Window[],
  intervals: readonly Window[],
): { handling: number[]; waiting: number[] } {
  const handling: number[] = [];
  const waiting: number[] = [];
  let j = 0;
  for (const w of windows) {
    while (j < intervals.length && intervals[j]!.end <= w.start) j++;
    let busy = 0;
    for (let k = j; k < intervals.length && intervals[k]!.start < w.end; k++) {
      busy += Math.max(0, Math.min(w.end, intervals[k]!.end) - Math.max(w.start, intervals[k]!.start));
    }
    handling.push(w.end - w.start);
    waiting.push(busy);
  }
  return { handling, waiting };
}

function pct(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const median = (values: readonly number[]): number => pct(values, 50);

// ---------------------------------------------------------------------------------------------------
// The downstream servers (child process) and the orchestrator (this process).

async function startDownstream(): Promise<{ info: DownstreamInfo; child: ChildProcess }> {
  const script = fileURLToPath(new URL('./downstream.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const info = await new Promise<DownstreamInfo>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`downstream exited early (${code})`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as DownstreamInfo));
  });
  return { info, child };
}

const { info, child } = await startDownstream();
const logger = createLogger('bench', { level: 'silent' });
const metrics = new WindowMetrics();
const timer = new DownstreamTimer();
const clients = createOrchestratorClients({ metrics, featureStoreTarget: info.featureStore });
const fetcher: FeatureFetcher = clients.featureFetcher!;
const featureFetcher: FeatureFetcher = {
  retrieve: (query, options) =>
    timer.track(`feature:${query.entity}`, () => fetcher.retrieve(query, options)),
};
const modelInferer: ModelInferer = {
  infer: (target, request, options) =>
    timer.track('model', () => clients.modelInferer.infer(target, request, options)),
};
const remoteCompute: RemoteCompute = {
  compute: (target, request, options) =>
    timer.track('compute', () => clients.remoteCompute.compute(target, request, options)),
};

const config = await createConfigStore({
  kind: 'file',
  dir: mkdtempSync(join(tmpdir(), 'lattice-bench-config-')),
});
const base = catalogRankerConfig(info);
await config.put(`models/${CATALOG_RANKER_ID}`, base);
await config.put(`models/${LOGGED_ID}`, {
  ...base,
  model_config_id: LOGGED_ID,
  logging: { logging_perc: 100, format: 'proto' },
});
const queue = await createQueue({ kind: 'memory' });
const inferenceLogger = new InferenceLogger({ sink: new QueueLogSink(queue), metrics, logger });
/** Tracking ids in the order executions finished (sequential runs: one per handling window). */
let observed: string[] = [];
const cache = await createCache({ kind: 'memory' });
const orchestrator = await startOrchestrator({
  host: '127.0.0.1',
  port: 0,
  store: config,
  buildComponent: createComponentBuilder({
    featureFetcher,
    modelInferer,
    remoteCompute,
    featureCache: { cache, metrics },
  }),
  logger,
  metrics,
  observe: (context) => {
    observed.push(context.trackingId);
    // As src/cli/parts.ts wires it. BENCH_DEFER_LOG=1 tries the suggested fix instead: hand the request
    // to the logger after the response is sent, so its workers' encoding leaves the request's path.
    if (DEFER_LOG) setImmediate(() => inferenceLogger.log(context));
    else inferenceLogger.log(context);
  },
});
for (const id of [CATALOG_RANKER_ID, LOGGED_ID]) {
  if (!orchestrator.registry.get(id)) throw new Error(`model ${id} did not load`);
}

// ---------------------------------------------------------------------------------------------------
// Requests and the echo baseline.

const catalogs = info.catalogs.slice(0, TARGETS);
if (catalogs.length < TARGETS) throw new Error(`only ${catalogs.length} catalogs seeded`);
function request(modelConfigId: string, i: number, trackingId: string): PredictRequest {
  const user = info.users[i % info.users.length]!;
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

const service = caller(`127.0.0.1:${orchestrator.port}`);
// Warm the service first (JIT, channels, feature cache), so that the sample is a steady-state response
// (a cold first call can time out a feature component and carry an error string on every row).
for (let i = 0; i < WARMUP; i++) await service.call(request(CATALOG_RANKER_ID, i, `warm-${i}`));
const sample = await service.call(request(CATALOG_RANKER_ID, 0, 'sample'));
const rowErrors = sample.targetScores.filter((score) => score.error !== '').length;
if (sample.targetScores.length !== TARGETS) throw new Error(`expected ${TARGETS} scores`);
const responseBytes = PredictResponse.encode(sample).finish();
const canned = PredictResponse.decode(responseBytes);
const requestBytes = PredictService.inferPointWise.requestSerialize(
  request(CATALOG_RANKER_ID, 0, 'sample'),
).length;

const bareServer = new grpc.Server();
const answer: PredictServer['inferPointWise'] = (_call, cb) => cb(null, canned);
const bareHandlers: PredictServer = { inferPointWise: answer, inferPairWise: answer, inferSlateWise: answer };
bareServer.addService(PredictService, bareHandlers);
const barePort = await new Promise<number>((resolve, reject) =>
  bareServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
    e ? reject(e) : resolve(p),
  ),
);
const echo = caller(`127.0.0.1:${barePort}`);

// ---------------------------------------------------------------------------------------------------
// Rounds.

let seq = 0;
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

const failures: Record<string, number> = {
  echo: 0,
  service: 0,
  logged: 0,
  echo_concurrent: 0,
  service_concurrent: 0,
};

interface Overhead {
  overhead: number[];
  handling: number[];
  waiting: number[];
}

/** A sequential run of the service with its per-request overhead attribution. */
async function serviceRun(kind: 'service' | 'logged'): Promise<RunStats & Overhead> {
  metrics.windows.length = 0;
  timer.intervals.length = 0;
  observed = [];
  timer.countKinds = kind === 'service';
  const stats = await run(kind, CALLS, 1);
  timer.countKinds = false;
  const windows = metrics.windows.splice(0);
  // One handling window per call (failed calls too); one execution per successful call.
  if (windows.length !== CALLS || new Set(observed).size !== observed.length) {
    throw new Error(
      `attribution: ${windows.length} windows, ${observed.length} executions for ${CALLS} calls`,
    );
  }
  const { handling, waiting } = attribute(windows, timer.intervals);
  return { ...stats, handling, waiting, overhead: handling.map((h, i) => h - waiting[i]!) };
}

// Warm up the other paths before measuring.
await run('echo', WARMUP, 1);
await run('logged', WARMUP, 1);

const echoRuns: RunStats[] = [];
const serviceRuns: (RunStats & Overhead)[] = [];
const loggedRuns: (RunStats & Overhead)[] = [];
for (let r = 0; r < ROUNDS; r++) {
  // Rotate the order so that no side always follows the same neighbour.
  const order = [0, 1, 2].map((k) => (k + r) % 3);
  for (const k of order) {
    if (k === 0) echoRuns.push(await run('echo', CALLS, 1));
    else if (k === 1) serviceRuns.push(await serviceRun('service'));
    else loggedRuns.push(await serviceRun('logged'));
  }
  const s = serviceRuns.at(-1)!;
  const l = loggedRuns.at(-1)!;
  const e = echoRuns.at(-1)!;
  console.log(
    `round ${r + 1}: service ${Math.round(s.throughput)}/s p50 ${s.p50_ms.toFixed(3)} p99 ${s.p99_ms.toFixed(3)} ` +
      `overhead p99 ${pct(s.overhead, 99).toFixed(3)} | logged ${Math.round(l.throughput)}/s p99 ${l.p99_ms.toFixed(3)} | ` +
      `echo ${Math.round(e.throughput)}/s p50 ${e.p50_ms.toFixed(3)} p99 ${e.p99_ms.toFixed(3)}`,
  );
}

/** Mean per request of each kind of downstream call, over the sequential service runs (no logging). */
const breakdown = [...timer.byKind].map(
  ([kind, k]) =>
    `${kind} ${(k.ms / (CALLS * ROUNDS)).toFixed(3)} ms in ${(k.calls / (CALLS * ROUNDS)).toFixed(1)} calls`,
);

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

const logStats = await inferenceLogger.close(10_000);
const logMetrics = (await metrics.scrape()).body
  .split('\n')
  .filter((l) => l.startsWith('orchestrator_inference_log_') && !l.startsWith('#'));

service.close();
echo.close();
bareServer.forceShutdown();
await orchestrator.stop();
clients.close();
await queue.close();
await cache.close();
await config.close();
child.stdin?.end();

// ---------------------------------------------------------------------------------------------------
// Report.

const s = medianRun(serviceRuns);
const b = medianRun(echoRuns);
const l = medianRun(loggedRuns);
const serviceP99 = median(serviceRuns.map((x) => x.p99_ms));
const loggedP99 = median(loggedRuns.map((x) => x.p99_ms));
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
console.log(`downstream calls per request (mean): ${breakdown.join('; ')}`);
console.log(`p99 median over rounds: ${serviceP99.toFixed(3)} ms; with logging ${loggedP99.toFixed(3)} ms`);
console.log(`inference logger: dropped at close ${logStats.dropped}; ${logMetrics.join('; ')}`);
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
  logging_p99_increase: round((loggedP99 - serviceP99) / serviceP99),
  logged_p50_ms: round(l.p50_ms),
  logged_p99_ms: round(loggedP99),
  logged_overhead_p99_ms: round(pct(loggedOverhead, 99)),
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
  deferred_logging: DEFER_LOG,
});
