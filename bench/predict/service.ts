/**
 * The orchestrator under test in the predict benchmark, in its own process as in production (forked by
 * index.ts with an IPC channel), so that the load client's encoding, decoding and garbage never run
 * on the orchestrator's event loop. Started by startOrchestratorPart, as `lattice orchestrator` starts
 * it, on a platform of its own (memory queue and cache, a file config store in a temporary directory),
 * with the measurement decorators of attribution.ts around its downstream clients. Two models: the
 * catalog ranker, and the same config under a second id with `logging_perc: 100` (format proto), both
 * on the part's one InferenceLogger (the unlogged one samples 0 %).
 *
 * IPC: sends `{ type: 'ready', port }`; then answers `begin` (clear the windows, start a measured run),
 * `end` (attribute the run's windows: handling, waiting and overhead per call) and `close` (drain
 * the logger, report its figures and the downstream breakdown, exit).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { CATALOG_RANKER_ID, catalogRankerConfig } from '../../examples/catalog-ranker.js';
import type { FeatureFetcher, ModelInferer, RemoteCompute } from '../../src/orchestrator/clients/index.js';
import { type DownstreamClients, startOrchestratorPart } from '../../src/orchestrator/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { attribute, DownstreamTimer, type Window, WindowMetrics } from './attribution.js';
import type { DownstreamInfo } from './downstream.js';
import { LOGGED_ID, type ServiceCommand, type ServiceReply } from './protocol.js';

const send = (reply: ServiceReply) => process.send!(reply);

if (process.send === undefined) throw new Error('service.ts runs forked by bench/predict/index.ts');
const info = JSON.parse(process.env.BENCH_DOWNSTREAM ?? '') as DownstreamInfo;
const metrics = new WindowMetrics();
const timer = new DownstreamTimer();
/** The process's garbage-collection pauses during a measured run (performance.now ms). */
const pauses: Window[] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    pauses.push({ start: entry.startTime, end: entry.startTime + entry.duration });
  }
}).observe({ entryTypes: ['gc'] });
/**
 * BENCH_INSTANT=1: each distinct downstream call is made once, then answered from memory (a
 * resolved promise), so that a run measures the orchestrator's own work alone (a diagnostic: the
 * goal's figures come from runs without it).
 */
const instant = process.env.BENCH_INSTANT === '1';
const memo = new Map<string, unknown>();
function remember<T>(key: string, call: () => Promise<T>): Promise<T> {
  if (!instant) return call();
  const hit = memo.get(key);
  if (hit !== undefined) return Promise.resolve(hit as T);
  return call().then((v) => {
    memo.set(key, v);
    return v;
  });
}
/** The part's downstream clients, each call timed (attribution.ts) and, with BENCH_INSTANT, memoised. */
function measured(clients: DownstreamClients): DownstreamClients {
  const fetcher = clients.featureFetcher!;
  const inferer = clients.modelInferer!;
  const compute = clients.remoteCompute!;
  const featureFetcher: FeatureFetcher = {
    retrieve: (query, options) =>
      timer.track(`feature:${query.entity}`, () =>
        remember(`f${query.entity}${query.keys.join(';')}`, () => fetcher.retrieve(query, options)),
      ),
  };
  const modelInferer: ModelInferer = {
    infer: (target, request, options) =>
      timer.track('model', () =>
        remember(`m${target}${JSON.stringify(request.inputs.map((i) => i.shape))}`, () =>
          inferer.infer(target, request, options),
        ),
      ),
  };
  const remoteCompute: RemoteCompute = {
    compute: (target, request, options) =>
      timer.track('compute', () =>
        remember(`c${target}${request.ids.length}`, () => compute.compute(target, request, options)),
      ),
  };
  return { featureFetcher, modelInferer, remoteCompute };
}

const settings = loadSettings({
  // The bench's own settings alone: none of the caller's LATTICE_* environment.
  env: {},
  overrides: {
    host: '127.0.0.1',
    logLevel: 'silent',
    configStore: { kind: 'file', dir: mkdtempSync(join(tmpdir(), 'lattice-bench-config-')) },
    queue: { kind: 'memory', journalDir: '' },
    cache: { kind: 'memory' },
    orchestrator: {
      port: 0,
      featureStoreTarget: info.featureStore,
      // Records leave the orchestrator's heap after 1 s (and so does their de-duplication window), as
      // a broker takes them in production: an in-process topic that nobody consumes would otherwise
      // hold every record of the run (≈100 MB) in this process.
      logTopicRetentionMs: 1_000,
    },
  },
});
const platform = new Platform(settings, { metrics });
const config = await platform.configStore();
const base = catalogRankerConfig(info);
await config.put(`models/${CATALOG_RANKER_ID}`, base);
await config.put(`models/${LOGGED_ID}`, {
  ...base,
  model_config_id: LOGGED_ID,
  logging: { logging_perc: 100, format: 'proto' },
});
/** Tracking ids of finished executions (sequential runs: one per handling window). */
let observed = 0;
let cpuAtBegin = process.cpuUsage();
const orchestrator = await startOrchestratorPart(platform, settings.orchestrator.port, {
  decorateClients: measured,
  onExecution: () => {
    observed++;
  },
});
for (const id of [CATALOG_RANKER_ID, LOGGED_ID]) {
  const status = orchestrator.modelStatus().find((model) => model.id === id);
  if (status?.version === undefined) throw new Error(`model ${id} did not load`);
}
orchestrator.open?.();

process.on('message', async (message: ServiceCommand) => {
  switch (message.cmd) {
    case 'begin':
      cpuAtBegin = process.cpuUsage();
      metrics.windows.length = 0;
      timer.intervals.length = 0;
      pauses.length = 0;
      observed = 0;
      timer.countKinds = message.countKinds;
      return;
    case 'end': {
      timer.countKinds = false;
      const windows = metrics.windows.splice(0);
      if (windows.length !== message.calls) {
        throw new Error(`attribution: ${windows.length} windows for ${message.calls} calls`);
      }
      const { handling, waiting, lead, gaps, tail, gc } = attribute(
        windows,
        timer.intervals.splice(0),
        pauses.splice(0).sort((a, b) => a.start - b.start),
      );
      const cpu = process.cpuUsage(cpuAtBegin);
      send({
        type: 'ended',
        handling,
        waiting,
        lead,
        gaps,
        tail,
        gc,
        executions: observed,
        cpuMs: (cpu.user + cpu.system) / 1000,
      });
      return;
    }
    case 'close': {
      const logStats = await orchestrator.closeInferenceLog(10_000);
      const logMetrics = (await metrics.scrape()).body
        .split('\n')
        .filter((l) => l.startsWith('orchestrator_inference_log_') && !l.startsWith('#'));
      await orchestrator.stop();
      await platform.close();
      send({
        type: 'closed',
        dropped: logStats.dropped,
        logMetrics,
        breakdown: Object.fromEntries(timer.byKind),
      });
      process.disconnect();
      return;
    }
  }
});
send({ type: 'ready', port: orchestrator.port });
