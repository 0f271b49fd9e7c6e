/**
 * The orchestrator under test in the predict benchmark, in its own process as in production (forked by
 * index.ts with an IPC channel), so that the load client's encoding, decoding and garbage never run
 * on the orchestrator's event loop. Wired as src/orchestrator/orchestrator-part.ts wires `lattice
 * orchestrator`, plus the measurement decorators of attribution.ts. Two models: the catalog ranker, and the same config under
 * a second id with `logging_perc: 100` (format proto), both on one InferenceLogger over a memory
 * queue (the unlogged one samples 0 %).
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
import { createQueue } from '../../src/platform/queue/index.js';
import { attribute, DownstreamTimer, type Window, WindowMetrics } from './attribution.js';
import type { DownstreamInfo } from './downstream.js';
import { LOGGED_ID, type ServiceCommand, type ServiceReply } from './protocol.js';

const send = (reply: ServiceReply) => process.send!(reply);

if (process.send === undefined) throw new Error('service.ts runs forked by bench/predict/index.ts');
const info = JSON.parse(process.env.BENCH_DOWNSTREAM ?? '') as DownstreamInfo;
const logger = createLogger('bench-service', { level: 'silent' });
const metrics = new WindowMetrics();
const timer = new DownstreamTimer();
/** The process's garbage-collection pauses during a measured run (performance.now ms). */
const pauses: Window[] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    pauses.push({ start: entry.startTime, end: entry.startTime + entry.duration });
  }
}).observe({ entryTypes: ['gc'] });
const clients = createOrchestratorClients({ metrics, featureStoreTarget: info.featureStore });
const fetcher: FeatureFetcher = clients.featureFetcher!;
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
        clients.modelInferer.infer(target, request, options),
      ),
    ),
};
const remoteCompute: RemoteCompute = {
  compute: (target, request, options) =>
    timer.track('compute', () =>
      remember(`c${target}${request.ids.length}`, () =>
        clients.remoteCompute.compute(target, request, options),
      ),
    ),
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
// Records leave the orchestrator's heap after 1 s, as a broker takes them in production: an in-process
// topic that nobody consumes would otherwise hold every record of the run (≈100 MB) in this process.
const sink = new QueueLogSink(queue, undefined, { retentionMs: 1_000, dedupWindowMs: 1_000 });
const inferenceLogger = new InferenceLogger({ sink, metrics, logger });
const cache = await createCache({ kind: 'memory' });
/** Tracking ids of finished executions (sequential runs: one per handling window). */
let observed = 0;
let cpuAtBegin = process.cpuUsage();
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
    observed++;
    inferenceLogger.log(context);
  },
});
for (const id of [CATALOG_RANKER_ID, LOGGED_ID]) {
  if (!orchestrator.registry.get(id)) throw new Error(`model ${id} did not load`);
}

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
      const logStats = await inferenceLogger.close(10_000);
      const logMetrics = (await metrics.scrape()).body
        .split('\n')
        .filter((l) => l.startsWith('orchestrator_inference_log_') && !l.startsWith('#'));
      await orchestrator.stop();
      clients.close();
      await queue.close();
      await cache.close();
      await config.close();
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
