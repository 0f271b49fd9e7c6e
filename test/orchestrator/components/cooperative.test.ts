/**
 * Issue 13, item 4: a request over a large matrix gives the event loop its turns (timers and other
 * requests run while it computes), and once it is cancelled or past its deadline no further
 * component starts and no further downstream call is made.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import type {
  FeatureCallOptions,
  FeatureFetcher,
  FeatureQuery,
  FeatureRows,
  InferCallOptions,
  InferRequest,
  ModelInferer,
  Tensor,
} from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import type { ComponentBuilder } from '../../../src/orchestrator/config/index.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError, LatticeError } from '../../../src/platform/errors.js';
import { testRegistry } from '../../support/orchestrator.js';

const TARGETS = 100_000;

/** Everything that happened, in order: component starts, downstream calls, the request's abort. */
type Event = `start:${string}` | 'feature call' | 'model call' | 'aborted';

class Recorder {
  readonly events: Event[] = [];
  readonly runs: Promise<unknown>[] = [];
  private watched = new WeakSet<AbortSignal>();
  /** Called on each downstream call with its kind and running count. */
  onCall: (kind: 'feature' | 'model', count: number) => void = () => {};
  private counts = { feature: 0, model: 0 };

  watch(signal: AbortSignal): void {
    if (this.watched.has(signal)) return;
    this.watched.add(signal);
    signal.addEventListener('abort', () => this.events.push('aborted'), { once: true });
  }

  call(kind: 'feature' | 'model', signal: AbortSignal): void {
    this.watch(signal);
    this.events.push(`${kind} call`);
    this.onCall(kind, ++this.counts[kind]);
  }

  /** Events after the request was aborted. */
  afterAbort(): Event[] {
    const at = this.events.indexOf('aborted');
    return at < 0 ? [] : this.events.slice(at + 1);
  }
}

/** An in-process feature store over a Map: every catalog has a price and a ctr. */
class MapFeatureStore implements FeatureFetcher {
  constructor(private readonly recorder: Recorder) {}
  async retrieve(query: FeatureQuery, options: FeatureCallOptions): Promise<FeatureRows> {
    this.recorder.call('feature', options.signal);
    return query.keys.map(([id]) => {
      const n = Number(id!.slice(1));
      return [encodeValue(DataType.FP32, n % 100), encodeValue(DataType.FP32, 0.5)];
    });
  }
}

/** score = price + ctr per row. */
class SumModel implements ModelInferer {
  constructor(private readonly recorder: Recorder) {}
  async infer(_target: string, request: InferRequest, options: InferCallOptions): Promise<readonly Tensor[]> {
    this.recorder.call('model', options.signal);
    const input = request.inputs[0]!;
    const rows = input.shape[0]!;
    const x = new Float32Array(input.data.slice().buffer);
    const out = new Float32Array(rows);
    for (let r = 0; r < rows; r++) out[r] = x[2 * r]! + x[2 * r + 1]!;
    return [{ name: 'score', dataType: DataType.FP32, shape: [rows, 1], data: new Uint8Array(out.buffer) }];
  }
}

const config = {
  model_config_id: 'big',
  target_id_column: 'catalog_id',
  component_dependency: { catalog: ['ranker'], ranker: ['blend'], blend: [] },
  cache: { version: 1, ttl_seconds: 60 },
  feature_components: [
    {
      name: 'catalog',
      entity: 'catalog',
      fs_keys: [{ schema: ['catalog_id'], col: 'catalog_id' }],
      feature_groups: [{ label: 'stats', data_type: 'FP32', features: ['price', 'ctr'] }],
      batch_size: 100,
      deadline_ms: 10_000,
    },
  ],
  model_serving_components: [
    {
      name: 'ranker',
      model_name: 'sum',
      batch_size: 256,
      deadline_ms: 10_000,
      endpoints: [{ target: 'model:8001', percentage: 100 }],
      inputs: [
        { name: 'x', data_type: 'FP32', shape: [2], features: ['catalog:stats:price', 'catalog:stats:ctr'] },
      ],
      outputs: [{ name: 'score', data_type: 'FP32', columns: ['score'] }],
    },
  ],
  compute_components: [
    {
      name: 'blend',
      expression: 's 2 *',
      score_mapping: { s: 'score' },
      output_column: 'final',
      data_type: 'FP32',
    },
  ],
  response: { columns: ['final'] },
};

function request(targets: number): PredictRequest {
  return {
    modelConfigId: 'big',
    trackingId: 't',
    contextFeatures: [],
    targetInputSchema: [],
    targets: Array.from({ length: targets }, (_, i) => ({ id: `c${i}`, featureValues: [] })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

function setup() {
  const recorder = new Recorder();
  const base = createComponentBuilder({
    featureFetcher: new MapFeatureStore(recorder),
    modelInferer: new SumModel(recorder),
  });
  // Every component start is recorded, and every run kept, to wait for them all to settle.
  const builder: ComponentBuilder<ExecutionContext> = (plan, model) => {
    const component = base(plan, model);
    return {
      name: component.name,
      required: component.required,
      run: (context, signal) => {
        recorder.watch(signal);
        recorder.events.push(`start:${component.name}`);
        const result = component.run(context, signal);
        if (result) recorder.runs.push(result.catch(() => undefined));
        return result;
      },
    };
  };
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-coop-')) }),
    builder,
  );
  const snapshot = registry.build('big', '1', config);
  return { recorder, engine: new InferenceEngine(registry), snapshot };
}

/** Scores as the fakes compute them: (price + ctr) × 2. */
const expectedFinal = (row: number) => Math.fround((Math.fround(row % 100) + 0.5) * 2);

describe('a large request and the event loop', () => {
  for (const stopAt of [
    { kind: 'feature', call: 200 },
    { kind: 'model', call: 20 },
  ] as const) {
    test(`cancelled from a timer (as the gRPC deadline is) during the ${stopAt.kind} calls: nothing further starts or is called`, async () => {
      const { recorder, engine, snapshot } = setup();
      const caller = new AbortController();
      // The gRPC server aborts the call's signal from a timer at the deadline: it fires only if the
      // request gives the event loop a turn.
      recorder.onCall = (kind, count) => {
        if (kind === stopAt.kind && count === stopAt.call) {
          setTimeout(() => caller.abort(new LatticeError('DEADLINE_EXCEEDED', 'deadline exceeded')), 0);
        }
      };
      await assert.rejects(
        engine.executeOn(snapshot, { pattern: 'point', request: request(TARGETS) }, 't', {
          signal: caller.signal,
        }),
        (err) => isLatticeError(err, 'DEADLINE_EXCEEDED'),
      );
      await Promise.all(recorder.runs);
      assert.ok(recorder.events.includes('aborted'));
      assert.deepEqual(recorder.afterAbort(), [], 'no component started and no call made after the abort');
      assert.ok(!recorder.events.includes('start:blend'));
    });
  }

  test('a timer and a small request are served while a request of 100,000 targets computes, which completes', async () => {
    const { engine, snapshot } = setup();
    const order: string[] = [];
    const big = engine
      .executeOn(snapshot, { pattern: 'point', request: request(TARGETS) }, 't')
      .then((result) => {
        order.push('big answered');
        return result;
      });
    let small: Promise<unknown> | undefined;
    setTimeout(() => {
      order.push('timer');
      small = engine
        .executeOn(snapshot, { pattern: 'point', request: request(3) }, 't')
        .then(() => order.push('small answered'));
    }, 0);
    const { context } = await big;
    await small;
    assert.deepEqual(order, ['timer', 'small answered', 'big answered']);
    const final = context.matrix.byteColumn('final').float32()!;
    for (const row of [0, 1, 4095, 4096, 50_001, TARGETS - 1]) {
      assert.equal(final[row], expectedFinal(row), `row ${row}`);
      assert.equal(context.matrix.rowError(row), '');
    }
  });
});
