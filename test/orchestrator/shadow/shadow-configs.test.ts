/**
 * Shadow configs end to end (docs/orchestrator.md "Shadow configs"): an orchestrator over a file
 * config store with in-process compute configs. The caller's answer is the same bytes with and
 * without a shadow; identical configs compare as overlap 1, τ 1, difference 0, a config with
 * reversed scores as τ −1; an unknown shadow is counted as dropped until it loads; an invalid shadow
 * block is rejected with its JSON path while the previous revision serves; a slow shadow fills the
 * bounded queue and the rest are dropped and counted while callers are answered; `lattice models
 * compare` prints the figures from the ops server.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, credentials } from '@grpc/grpc-js';
import { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { type RunningOrchestrator, startOrchestrator } from '../../../src/orchestrator/api/index.js';
import { validateModelConfig } from '../../../src/orchestrator/config/index.js';
import {
  ModelConfigs,
  ModelConsole,
  registerModelConsoleRoutes,
} from '../../../src/orchestrator/console/index.js';
import { TopologyCache } from '../../../src/orchestrator/dag/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { ShadowFigures } from '../../../src/orchestrator/shadow/shadow-figures.js';
import { ShadowMirror } from '../../../src/orchestrator/shadow/shadow-mirror.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { runCaptured } from '../../support/cli-capture.js';
import { blendOnly, blendOnlyRequest, computeOnlyBuilder, testRegistry } from '../../support/orchestrator.js';
import { eventually } from '../../support/servers.js';

const PRICES = [3, 1, 4, 1.5, 9, 2.5];
/** score = 2·price + bonus (bonus 0.5 in the request). */
const SCORES = PRICES.map((p) => 2 * p + 0.5);
/** The same DAG scoring −(2·price + bonus): every order reversed. */
const REVERSED = 'price -2 * bonus -';
const logger = createLogger('test', { level: 'silent' });

const withShadow = (id: string, shadow: Record<string, unknown> | undefined, expression?: string) => ({
  ...blendOnly(id, expression),
  ...(shadow === undefined ? {} : { shadow }),
});

const metrics = new Metrics();
let store: FileConfigStore;
let running: RunningOrchestrator;
let raw: Client;
let ops: HttpServer;
let opsBase: string;

/** The Predict answer's bytes, as the caller receives them. */
function predictBytes(modelConfigId: string, trackingId: string): Promise<Buffer> {
  const request = blendOnlyRequest(PRICES, { modelConfigId, trackingId });
  return new Promise((resolve, reject) =>
    raw.makeUnaryRequest(
      '/orchestrator.v1.Predict/InferPointWise',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(PredictRequest.encode(request).finish()),
      (err, value) => (err ? reject(err) : resolve(value!)),
    ),
  );
}

/** Writes a config and waits until the orchestrator serves (or rejects) that version. */
async function put(document: { model_config_id: string; [field: string]: unknown }): Promise<void> {
  const id = document.model_config_id;
  const version = String(await store.put(`models/${id}`, document));
  await eventually(
    () => {
      const status = running.registry.status().find((s) => s.id === id);
      return status?.version === version || status?.rejected?.version === version;
    },
    10_000,
    `${id} version ${version} loaded or rejected`,
  );
}

before(async () => {
  store = new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-shadow-')) });
  running = await startOrchestrator({
    host: '127.0.0.1',
    port: 0,
    store,
    buildComponent: computeOnlyBuilder,
    logger,
    metrics,
  });
  raw = new Client(`127.0.0.1:${running.port}`, credentials.createInsecure());
  ops = new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger,
    metrics,
    openapi: { title: 'shadow test ops API' },
  });
  const configs = new ModelConfigs({ store, registry: running.registry, logger });
  registerModelConsoleRoutes(ops.app).serve(
    new ModelConsole({
      configs,
      registry: running.registry,
      traffic: running.traffic,
      shadows: running.shadows,
    }),
  );
  opsBase = `http://127.0.0.1:${await ops.start()}`;
});

after(async () => {
  raw?.close();
  await ops?.stop();
  await running?.stop();
});

describe('a shadow config', () => {
  test('never changes the caller’s answer: the same bytes with and without a shadow', async () => {
    await put(withShadow('twin', undefined));
    await put(withShadow('reversed', undefined, REVERSED));
    await put(withShadow('primary', undefined));
    const alone = await predictBytes('primary', 'same-bytes');
    for (const shadow of ['twin', 'reversed']) {
      await put(withShadow('primary', { model_config_id: shadow, percentage: 100 }));
      const mirrored = await predictBytes('primary', 'same-bytes');
      assert.ok(alone.equals(mirrored), `with shadow ${shadow}: the answer's bytes differ`);
      await eventually(
        () => (running.shadows.get('primary', shadow)?.compared ?? 0) >= 1,
        10_000,
        'compared',
      );
    }
  });

  test('identical configs compare as overlap 1, τ 1, difference 0', async () => {
    await put(withShadow('same', { model_config_id: 'twin', percentage: 100, k: 3 }));
    for (let i = 0; i < 5; i++) await predictBytes('same', `identical-${i}`);
    await eventually(() => (running.shadows.get('same', 'twin')?.compared ?? 0) === 5, 10_000, 'compared');
    const figures = running.shadows.get('same', 'twin')!;
    assert.equal(figures.overlap_at_k, 1);
    assert.equal(figures.kendall_tau, 1);
    assert.equal(figures.mean_abs_diff, 0);
    assert.equal(figures.max_abs_diff, 0);
    assert.equal(figures.last?.shared, PRICES.length);
    assert.deepEqual(figures.dropped, { queue_full: 0, unknown_shadow: 0 });
    assert.ok('(total)' in figures.latency_diff_ms && 'blend' in figures.latency_diff_ms);
  });

  test('a config with reversed scores compares as τ −1, its top 3 disjoint', async () => {
    await put(withShadow('upside', { model_config_id: 'reversed', percentage: 100, k: 3 }));
    await predictBytes('upside', 'reversed-1');
    await eventually(
      () => (running.shadows.get('upside', 'reversed')?.compared ?? 0) === 1,
      10_000,
      'compared',
    );
    const figures = running.shadows.get('upside', 'reversed')!;
    assert.equal(figures.kendall_tau, -1);
    assert.equal(figures.overlap_at_k, 0);
    // |s − (−s)| = 2s per target.
    const meanScore = SCORES.reduce((a, b) => a + b, 0) / SCORES.length;
    assert.ok(Math.abs(figures.mean_abs_diff! - 2 * meanScore) < 1e-9);
    assert.equal(figures.max_abs_diff, 2 * Math.max(...SCORES));
    const exported = await metrics.registry.getSingleMetricAsString('orchestrator_shadow_kendall_tau');
    assert.match(exported, /orchestrator_shadow_kendall_tau\{primary="upside",shadow="reversed"\} -1/);
  });

  test('a shadow not loaded yet: its requests are dropped and counted until it loads', async () => {
    await put(withShadow('early', { model_config_id: 'late', percentage: 100 }));
    await predictBytes('early', 'early-1');
    await predictBytes('early', 'early-2');
    assert.deepEqual(running.shadows.get('early', 'late')?.dropped, { queue_full: 0, unknown_shadow: 2 });
    assert.equal(running.shadows.get('early', 'late')?.compared, 0);
    await put(withShadow('late', undefined));
    await predictBytes('early', 'early-3');
    await eventually(() => running.shadows.get('early', 'late')?.compared === 1, 10_000, 'compared');
    const exported = await metrics.registry.getSingleMetricAsString('orchestrator_shadow_dropped_total');
    assert.match(exported, /primary="early",shadow="late",reason="unknown_shadow"\} 2/);
  });

  test('a shadow that fails is counted as failed; the caller is answered by the primary', async () => {
    // The shadow reads a feature the callers' requests do not carry: its FeatureInit fails.
    await put({
      ...blendOnly('picky'),
      compute_components: [
        {
          name: 'blend',
          expression: 'price extra +',
          score_mapping: { price: 'price', extra: 'extra' },
          output_column: 'score',
          data_type: 'FP64',
        },
      ],
    });
    await put(withShadow('brave', { model_config_id: 'picky', percentage: 100 }));
    const answer = await predictBytes('brave', 'brave-1');
    await put(withShadow('brave', undefined));
    assert.ok(answer.equals(await predictBytes('brave', 'brave-1')), 'the same answer as without the shadow');
    await eventually(() => running.shadows.get('brave', 'picky')?.failed === 1, 10_000, 'failed counted');
    assert.equal(running.shadows.get('brave', 'picky')?.compared, 0);
  });

  test('percentage 0 mirrors nothing', async () => {
    await put(withShadow('quiet', { model_config_id: 'twin', percentage: 0 }));
    await predictBytes('quiet', 'quiet-1');
    assert.equal(running.shadows.get('quiet', 'twin'), undefined);
  });

  test('an invalid shadow block is rejected with its JSON path; the previous revision keeps serving', async () => {
    await put(withShadow('guarded', { model_config_id: 'twin', percentage: 50 }));
    const serving = running.registry.get('guarded')!.version;
    for (const [shadow, path] of [
      [{ model_config_id: 'guarded', percentage: 10 }, 'shadow.model_config_id'],
      [{ model_config_id: 'twin', percentage: 101 }, 'shadow.percentage'],
      [{ model_config_id: 'twin', percentage: -1 }, 'shadow.percentage'],
      [{ model_config_id: 'twin', percentage: 10, k: 0 }, 'shadow.k'],
      [{ model_config_id: '', percentage: 10 }, 'shadow.model_config_id'],
      [{ model_config_id: 'twin', percentage: 10, every: 2 }, 'shadow'],
    ] as const) {
      await put(withShadow('guarded', shadow));
      const status = running.registry.status().find((s) => s.id === 'guarded')!;
      assert.ok(status.rejected, `${JSON.stringify(shadow)} was not rejected`);
      assert.deepEqual(
        status.problems?.map((p) => p.path),
        [path],
        `${JSON.stringify(shadow)}: ${JSON.stringify(status.problems)}`,
      );
      assert.equal(running.registry.get('guarded')!.version, serving, 'the previous revision serves');
      assert.equal(running.registry.get('guarded')!.model.config.shadow?.percentage, 50);
    }
  });

  test('validation names the path without a store too', () => {
    assert.throws(
      () =>
        validateModelConfig(withShadow('self', { model_config_id: 'self', percentage: 5 }), {
          topologies: new TopologyCache(),
        }),
      (err) => isLatticeError(err) && err.field === 'shadow.model_config_id',
    );
  });

  test('lattice models compare prints the figures from the ops server', async () => {
    const result = await runCaptured(['models', 'compare', 'same', 'twin', '--address', opsBase]);
    assert.equal(result.exitCode, 0, result.err);
    assert.match(result.out, /^same -> shadow twin: mirroring 100% of requests, k=3$/m);
    assert.match(result.out, /compared 5, failed 0, dropped 0 \(queue full\) \+ 0 \(shadow not loaded\)/);
    assert.match(result.out, /^overlap@k\s+1\s+1\s*$/m);
    assert.match(result.out, /^kendall_tau\s+1\s+1\s*$/m);
    assert.match(result.out, /^mean_abs_diff\s+0\s+0\s*$/m);
    assert.match(result.out, /^latency_diff_ms blend\s+\S+\s+\S+\s*$/m);
    const json = await runCaptured([
      'models',
      'compare',
      'upside',
      'reversed',
      '--json',
      '--address',
      opsBase,
    ]);
    assert.equal(json.exitCode, 0, json.err);
    assert.equal(JSON.parse(json.out).kendall_tau, -1);
    // The route is documented with its JSON schema.
    const openapi = (await (await fetch(`${opsBase}/openapi.json`)).json()) as {
      paths: Record<string, { get?: { responses: Record<string, { content?: unknown }> } }>;
    };
    const route = openapi.paths['/api/v1/models/{id}/shadows/{shadow}']?.get;
    assert.ok(route?.responses['200']?.content, JSON.stringify(Object.keys(openapi.paths)));
    // The primary names another shadow: NOT_FOUND, saying which it names (the CLI exits 1 with it).
    await assert.rejects(
      runCaptured(['models', 'compare', 'same', 'reversed', '--address', opsBase]),
      (err) => isLatticeError(err) && err.code === 'NOT_FOUND' && /HTTP 404.*names "twin"/.test(err.message),
    );
  });
});

describe('the bounded shadow queue', () => {
  /**
   * An engine serving `fast`, mirrored 100 % to `shadowId` (the same DAG), over snapshots built, not
   * loaded from a store (served by id); the mirror is the caller's to set.
   */
  function mirroredEngine(shadowId: string) {
    const registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-shadow-q-')) }),
    );
    const snapshots = new Map([
      [
        'fast',
        registry.build('fast', '1', withShadow('fast', { model_config_id: shadowId, percentage: 100 })),
      ],
      [shadowId, registry.build(shadowId, '1', withShadow(shadowId, undefined))],
    ]);
    const engine = new InferenceEngine({
      require: (id: string) => snapshots.get(id)!,
    } as unknown as ConstructorParameters<typeof InferenceEngine>[0]);
    return { engine, shadowEngine: new InferenceEngine(registry), lookup: (id: string) => snapshots.get(id) };
  }

  test('a slow shadow: callers are answered at once, the queue fills, the rest are dropped and counted', async () => {
    const { engine, shadowEngine, lookup } = mirroredEngine('slow');
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let started = 0;
    const figures = new ShadowFigures();
    engine.mirror = new ShadowMirror({
      lookup,
      run: async (snapshot, input, trackingId, options) => {
        started++;
        await gate; // the shadow is slow: it finishes only when the test says so
        return shadowEngine.executeOn(snapshot, input, trackingId, options);
      },
      figures,
      queueSize: 2,
      concurrency: 1,
      deadlineMs: 60_000,
    });
    for (let i = 0; i < 8; i++) {
      // Each caller is answered while the shadow is still blocked.
      const { context } = await engine.execute(
        'fast',
        {
          pattern: 'point',
          request: blendOnlyRequest(PRICES, { modelConfigId: 'fast', trackingId: `q${i}` }),
        },
        `q${i}`,
      );
      assert.equal(context.matrix.byteColumn('score').float64()![0], SCORES[0]);
    }
    await eventually(() => started === 1, 5000, 'the first shadow run started');
    // One running, two waiting, five dropped.
    assert.deepEqual(figures.get('fast', 'slow')?.dropped, { queue_full: 5, unknown_shadow: 0 });
    assert.equal(figures.get('fast', 'slow')?.sampled, 8);
    open();
    await eventually(() => figures.get('fast', 'slow')?.compared === 3, 5000, 'the queued three compared');
    assert.equal(started, 3);
    assert.equal(figures.get('fast', 'slow')?.kendall_tau, 1);
  });

  test('mirrored requests run in idle time only: not while a caller’s request is in flight', async () => {
    const { engine, shadowEngine, lookup } = mirroredEngine('twin');
    let started = 0;
    const figures = new ShadowFigures();
    engine.mirror = new ShadowMirror({
      lookup,
      run: (snapshot, input, trackingId, options) => {
        started++;
        return shadowEngine.executeOn(snapshot, input, trackingId, options);
      },
      figures,
      queueSize: 10,
      concurrency: 2,
      deadlineMs: 60_000,
      idle: () => engine.callers.idle(),
    });
    const request = (i: number) => ({
      pattern: 'point' as const,
      request: blendOnlyRequest(PRICES, { modelConfigId: 'fast', trackingId: `idle${i}` }),
    });
    // Another caller's request stays in flight (as a slow one would) while three are answered.
    engine.callers.enter();
    for (let i = 0; i < 3; i++) await engine.execute('fast', request(i), `idle${i}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(started, 0, 'no shadow starts while a caller’s request runs');
    assert.equal(figures.get('fast', 'twin')?.sampled, 3);
    engine.callers.leave();
    await eventually(() => figures.get('fast', 'twin')?.compared === 3, 5000, 'the three compared once idle');
    assert.equal(started, 3);
    assert.equal(figures.get('fast', 'twin')?.overlap_at_k, 1);
  });
});
