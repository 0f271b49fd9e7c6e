/**
 * What a 100 % shadow costs the primary's callers: one orchestrator (in this process) serving an
 * in-process compute config twice, `plain` without a shadow and `mirrored` with
 * `shadow: { model_config_id: twin, percentage: 100 }` (twin: the same config), called over gRPC at
 * a fixed rate (an open loop: a server with headroom, as one is run) in alternating rounds so drift
 * in the machine's load falls on both arms. Exported for the retrieve-rank benchmark's
 * `shadow_p99_increase` too.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { PredictClient, type PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import { startOrchestrator } from '../../src/orchestrator/api/index.js';
import { FileConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { blendOnly, blendOnlyRequest, computeOnlyBuilder } from '../../test/support/orchestrator.js';
import { percentile } from '../support/stats.js';

export interface ShadowOverheadOptions {
  /** Requests per second per arm. */
  rate: number;
  /** Seconds per round; the arms alternate `rounds` times each. */
  roundSeconds: number;
  rounds: number;
  targets: number;
}

export interface ShadowOverhead {
  p99_ms: number;
  shadow_p99_ms: number;
  p50_ms: number;
  shadow_p50_ms: number;
  /** shadow_p99_ms ÷ p99_ms − 1: 0.05 is +5 %. */
  shadow_p99_increase: number;
  /** Mirrored requests compared, and dropped by the bounded queue. */
  compared: number;
  dropped: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Sends `rate`/s for `seconds`, each call timed from when it was due, not when it was sent. */
export async function paced(
  rate: number,
  seconds: number,
  once: () => Promise<unknown>,
  into: number[],
): Promise<void> {
  const interval = 1000 / rate;
  const start = performance.now();
  const calls: Promise<void>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    const due = start + i * interval;
    await sleep(due - performance.now());
    calls.push(
      once().then(() => {
        into.push(performance.now() - due);
      }),
    );
  }
  await Promise.all(calls);
}

export async function measureShadowOverhead(options: ShadowOverheadOptions): Promise<ShadowOverhead> {
  const store = new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-bench-shadow-')) });
  const running = await startOrchestrator({
    host: '127.0.0.1',
    port: 0,
    store,
    buildComponent: computeOnlyBuilder,
    logger: createLogger('bench', { level: 'silent' }),
    metrics: new Metrics(),
  });
  const client = new PredictClient(`127.0.0.1:${running.port}`, credentials.createInsecure());
  try {
    await store.put('models/twin', blendOnly('twin'));
    await store.put('models/plain', blendOnly('plain'));
    await store.put('models/mirrored', {
      ...blendOnly('mirrored'),
      shadow: { model_config_id: 'twin', percentage: 100 },
    });
    while (['twin', 'plain', 'mirrored'].some((id) => running.registry.get(id) === undefined))
      await sleep(50);
    const prices = Array.from({ length: options.targets }, (_, i) => ((i * 7919) % 1000) / 10);
    let n = 0;
    const call = (modelConfigId: string) => () => {
      const request: PredictRequest = blendOnlyRequest(prices, { modelConfigId, trackingId: `b${n++}` });
      return new Promise((resolve, reject) =>
        client.inferPointWise(request, (err, answer) => (err ? reject(err) : resolve(answer))),
      );
    };
    // Warm-up: JIT and connections, both arms.
    await paced(options.rate, 1, call('plain'), []);
    await paced(options.rate, 1, call('mirrored'), []);
    const plain: number[] = [];
    const mirrored: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      await paced(options.rate, options.roundSeconds, call('plain'), plain);
      await paced(options.rate, options.roundSeconds, call('mirrored'), mirrored);
    }
    const sorted = (values: number[]) => Float64Array.from(values).sort();
    const a = sorted(plain);
    const b = sorted(mirrored);
    const figures = running.shadows.get('mirrored', 'twin');
    return {
      p99_ms: percentile(a, 99),
      shadow_p99_ms: percentile(b, 99),
      p50_ms: percentile(a, 50),
      shadow_p50_ms: percentile(b, 50),
      shadow_p99_increase: percentile(b, 99) / percentile(a, 99) - 1,
      compared: figures?.compared ?? 0,
      dropped: (figures?.dropped.queue_full ?? 0) + (figures?.dropped.unknown_shadow ?? 0),
    };
  } finally {
    client.close();
    await running.stop();
  }
}
