/**
 * The orchestrator engine (FeatureInit, DAG executor, feature, model-serving and compute components
 * on a ComponentMatrix) against hand-written sequential code doing the same work without the engine,
 * in one run: 100 targets; 3 feature components whose in-process fetchers return 20 FP32 features
 * each; one in-process linear model reading the 60 features; one compute expression.
 * Goal (issue 3): engine throughput ≥ 60% of the baseline, p99 < 1 ms per execution on one core.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataType } from '../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../src/gen/orchestrator/v1/types.js';
import type {
  FeatureFetcher,
  FeatureQuery,
  FeatureRows,
  InferRequest,
  ModelInferer,
  Tensor,
} from '../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../src/orchestrator/components/index.js';
import { ModelRegistry } from '../../src/orchestrator/config/index.js';
import type { ExecutionContext } from '../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';

const TARGETS = 100;
const FEATURES = 20;
const ENTITIES = ['item', 'item_stats', 'user'] as const;
const EXECUTIONS = Number(process.env.BENCH_EXECUTIONS ?? 5000);
const ROUNDS = 3;

const featureNames = Array.from({ length: FEATURES }, (_, i) => `x${i}`);
const weights = Float32Array.from({ length: 3 * FEATURES }, (_, i) => ((i % 7) - 3) / 10);

/** Feature rows precomputed per key, so both sides spend the same time in the fetcher. */
function makeRows(entity: string, keys: string[]): Map<string, Uint8Array[]> {
  const rows = new Map<string, Uint8Array[]>();
  keys.forEach((key, k) => {
    rows.set(
      key,
      featureNames.map(
        (_, f) => new Uint8Array(Float32Array.of(1 + ((k * 31 + f * 7 + entity.length) % 97) / 10).buffer),
      ),
    );
  });
  return rows;
}
const itemIds = Array.from({ length: TARGETS }, (_, i) => `item${i}`);
const data: Record<string, Map<string, Uint8Array[]>> = {
  item: makeRows('item', itemIds),
  item_stats: makeRows('item_stats', itemIds),
  user: makeRows('user', ['u1']),
};

class InProcessFetcher implements FeatureFetcher {
  async retrieve(query: FeatureQuery): Promise<FeatureRows> {
    const rows = data[query.entity]!;
    return query.keys.map((key) => rows.get(key[0]!));
  }
}

/** score = Σ w·x over the 60 features of each row. */
function linear(x: Float32Array, rows: number, out: Float32Array): void {
  const k = weights.length;
  for (let r = 0; r < rows; r++) {
    let sum = 0;
    for (let j = 0; j < k; j++) sum += weights[j]! * x[r * k + j]!;
    out[r] = sum;
  }
}

class InProcessModel implements ModelInferer {
  async infer(_target: string, request: InferRequest): Promise<readonly Tensor[]> {
    const input = request.inputs[0]!;
    const rows = input.shape[0]!;
    const out = new Float32Array(rows);
    linear(new Float32Array(input.data.buffer, input.data.byteOffset, rows * weights.length), rows, out);
    return [{ name: 'score', dataType: DataType.FP32, shape: [rows, 1], data: new Uint8Array(out.buffer) }];
  }
}

const config = {
  model_config_id: 'bench',
  target_id_column: 'item_id',
  component_dependency: {
    item: ['model'],
    item_stats: ['model'],
    user: ['model'],
    model: ['blend'],
    blend: [],
  },
  feature_components: ENTITIES.map((entity) => ({
    name: entity,
    entity,
    fs_keys: [{ schema: ['id'], col: entity === 'user' ? 'user_id' : 'item_id' }],
    feature_groups: [{ label: 'g', data_type: 'FP32', features: featureNames }],
  })),
  model_serving_components: [
    {
      name: 'model',
      model_name: 'linear',
      endpoints: [{ target: 'in-process', percentage: 100 }],
      inputs: [
        {
          name: 'x',
          data_type: 'FP32',
          shape: [3 * FEATURES],
          features: ENTITIES.flatMap((e) => featureNames.map((f) => `${e}:g:${f}`)),
        },
      ],
      outputs: [{ name: 'score', data_type: 'FP32', columns: ['score'] }],
    },
  ],
  compute_components: [
    {
      name: 'blend',
      expression: 'score 0.8 * x log 0.2 * +',
      score_mapping: { score: 'score', x: 'item:g:x0' },
      output_column: 'final',
      data_type: 'FP32',
    },
  ],
  response: { columns: ['final'] },
};

const request: PredictRequest = {
  modelConfigId: 'bench',
  trackingId: 'bench',
  contextFeatures: [
    { name: 'user_id', dataType: WireType.DATA_TYPE_STRING, vectorDim: 0, value: Buffer.from('u1') },
  ],
  targetInputSchema: [],
  targets: itemIds.map((id) => ({ id, featureValues: [] })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
};

// The engine.
const fetcher = new InProcessFetcher();
const registry = new ModelRegistry<ExecutionContext>({
  store: new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-bench-')) }),
  buildComponent: createComponentBuilder({ featureFetcher: fetcher, modelInferer: new InProcessModel() }),
  logger: createLogger('bench', { level: 'silent' }),
  metrics: new Metrics(),
});
const snapshot = registry.build('bench', '1', config);
const engine = new InferenceEngine(registry);
let engineChecksum = 0;
async function runEngine(): Promise<void> {
  const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 'bench');
  engineChecksum = context.matrix.byteColumn('final').float32()![TARGETS - 1]!;
}

// The baseline: the same fetches, decoding, tensor, model and expression, written by hand.
const model = new InProcessModel();
let baselineChecksum = 0;
async function runBaseline(): Promise<void> {
  const ids = request.targets.map((t) => t.id);
  const userId = request.contextFeatures[0]!.value.toString();
  const unique = [...new Set(ids)];
  const [items, stats, users] = await Promise.all([
    fetcher.retrieve({
      entity: 'item',
      keysSchema: ['id'],
      keys: unique.map((id) => [id]),
      featureGroups: [{ label: 'g', features: featureNames }],
    }),
    fetcher.retrieve({
      entity: 'item_stats',
      keysSchema: ['id'],
      keys: unique.map((id) => [id]),
      featureGroups: [{ label: 'g', features: featureNames }],
    }),
    fetcher.retrieve({
      entity: 'user',
      keysSchema: ['id'],
      keys: [[userId]],
      featureGroups: [{ label: 'g', features: featureNames }],
    }),
  ]);
  const index = new Map(unique.map((id, i) => [id, i]));
  const k = 3 * FEATURES;
  const x = new Float32Array(ids.length * k);
  const view = new DataView(new ArrayBuffer(4));
  const put = (row: number, offset: number, values: readonly Uint8Array[] | undefined) => {
    for (let f = 0; f < FEATURES; f++) {
      const bytes = values?.[f];
      if (!bytes) continue;
      for (let b = 0; b < 4; b++) view.setUint8(b, bytes[b]!);
      x[row * k + offset + f] = view.getFloat32(0, true);
    }
  };
  ids.forEach((id, row) => {
    const i = index.get(id)!;
    put(row, 0, items[i]);
    put(row, FEATURES, stats[i]);
    put(row, 2 * FEATURES, users[0]);
  });
  const [scores] = await model.infer('in-process', {
    modelName: 'linear',
    modelVersion: '',
    inputs: [{ name: 'x', dataType: DataType.FP32, shape: [ids.length, k], data: new Uint8Array(x.buffer) }],
    outputs: ['score'],
  });
  const score = new Float32Array(scores!.data.buffer, scores!.data.byteOffset, ids.length);
  const final = new Float32Array(ids.length);
  for (let r = 0; r < ids.length; r++) {
    const price = x[r * k]!;
    if (price <= 0) throw new Error('log of non-positive value');
    final[r] = score[r]! * 0.8 + Math.log(price) * 0.2;
  }
  baselineChecksum = final[ids.length - 1]!;
}

await measure(500, 1, runEngine);
await measure(500, 1, runBaseline);
if (Math.abs(engineChecksum - baselineChecksum) > 1e-4) {
  throw new Error(`engine and baseline disagree: ${engineChecksum} vs ${baselineChecksum}`);
}
const engineRuns: RunStats[] = [];
const baselineRuns: RunStats[] = [];
for (let r = 0; r < ROUNDS; r++) {
  baselineRuns.push(await measure(EXECUTIONS, 1, runBaseline));
  engineRuns.push(await measure(EXECUTIONS, 1, runEngine));
}
const e = medianRun(engineRuns);
const b = medianRun(baselineRuns);
console.log(
  `hand-written: ${Math.round(b.throughput)} executions/s, p50 ${b.p50_ms.toFixed(3)} ms, p99 ${b.p99_ms.toFixed(3)} ms`,
);
console.log(
  `engine:       ${Math.round(e.throughput)} executions/s, p50 ${e.p50_ms.toFixed(3)} ms, p99 ${e.p99_ms.toFixed(3)} ms`,
);
printResult({
  bench: 'dag-executor',
  ratio: round(e.throughput / b.throughput),
  throughput: round(e.throughput, 1),
  baseline_throughput: round(b.throughput, 1),
  p50_ms: round(e.p50_ms),
  p99_ms: round(e.p99_ms),
  baseline_p50_ms: round(b.p50_ms),
  baseline_p99_ms: round(b.p99_ms),
  targets: TARGETS,
  executions: EXECUTIONS,
});
