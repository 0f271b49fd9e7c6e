/**
 * Issue 4's feature-fetch benchmark: three FeatureComponents (catalog, user, category; 100 keys
 * each, one batch each) fetching from the reference feature store over loopback, run by the engine
 * through the real pooled client (breaker, metrics, decoding into typed matrix columns), against a
 * bare grpc-js client making the same three RetrieveFeatures calls concurrently, in one run.
 * Goal: ≥ 80% of the bare client's throughput. `ratio` is the median over rounds (default 5) of each
 * round's product/bare throughput; throughputs and latencies reported are each side's median round.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import { MemoryFeatureStore, seedDemoData, startFeatureStore } from '../../src/featurestore/index.js';
import type { PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../src/gen/orchestrator/v1/types.js';
import { FeatureServiceClient, type Query, type Result } from '../../src/gen/retrieve/retrieve.js';
import { createOrchestratorClients } from '../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../src/orchestrator/components/index.js';
import { ModelRegistry } from '../../src/orchestrator/config/index.js';
import type { ExecutionContext } from '../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';

const KEYS = 100;
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const logger = createLogger('bench', { level: 'silent' });
const store = new MemoryFeatureStore();
const data = await seedDemoData(store, { users: KEYS, catalogs: KEYS, categories: KEYS });
const server = await startFeatureStore({ registry: data.registry, store, port: 0, logger });
const target = `127.0.0.1:${server.port}`;

const groups = {
  catalog: [
    { label: 'stats', features: ['price', 'ctr_7d'], type: 'FP32' },
    { label: 'attributes', features: ['category_id'], type: 'INT32' },
  ],
  user: [{ label: 'profile', features: ['age'], type: 'FP32' }],
  category: [{ label: 'stats', features: ['popularity'], type: 'FP32' }],
} as const;
const keyColumn = { catalog: 'catalog_id', user: 'user_id', category: 'category_id' } as const;
const entities = Object.keys(groups) as (keyof typeof groups)[];

const config = {
  model_config_id: 'fetch',
  target_id_column: 'catalog_id',
  component_dependency: Object.fromEntries(entities.map((e) => [e, []])),
  feature_components: entities.map((entity) => ({
    name: entity,
    entity,
    fs_keys: [{ schema: [keyColumn[entity]], col: keyColumn[entity] }],
    feature_groups: groups[entity].map((g) => ({
      label: g.label,
      data_type: g.type,
      features: [...g.features],
    })),
    batch_size: KEYS,
    deadline_ms: 1000,
  })),
  request_features: ['user_id', 'category_id'],
  response: { columns: ['catalog:stats:price', 'user:profile:age', 'category:stats:popularity'] },
};

const ids = (prefix: string, from = 1) => Array.from({ length: KEYS }, (_, i) => `${prefix}${i + from}`);
const keys = { catalog: ids('c'), user: ids('u'), category: ids('', 0) };
const request: PredictRequest = {
  modelConfigId: 'fetch',
  trackingId: 'bench',
  contextFeatures: [],
  targetInputSchema: [
    { name: 'user_id', dataType: WireType.DATA_TYPE_STRING, vectorDim: 0 },
    { name: 'category_id', dataType: WireType.DATA_TYPE_STRING, vectorDim: 0 },
  ],
  targets: keys.catalog.map((id, i) => ({
    id,
    featureValues: [Buffer.from(keys.user[i]!), Buffer.from(keys.category[i]!)],
  })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
};

// The product: the engine running the three feature components through the pooled client.
const metrics = new Metrics();
const clients = createOrchestratorClients({ metrics, featureStoreTarget: target });
const registry = new ModelRegistry<ExecutionContext>({
  store: new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-bench-')) }),
  buildComponent: createComponentBuilder(clients),
  logger,
  metrics,
});
const snapshot = registry.build('fetch', '1', config);
const engine = new InferenceEngine(registry);
async function product(): Promise<void> {
  const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 'bench', {
    deadline: Date.now() + 5000,
  });
  if (context.matrix.rowError(0) !== '') throw new Error(context.matrix.rowError(0));
}

// The baseline: the generated grpc-js client, the same three queries, concurrently.
const bare = new FeatureServiceClient(target, credentials.createInsecure());
const queries: Query[] = entities.map((entity) => ({
  entityLabel: entity,
  featureGroups: groups[entity].map((g) => ({ label: g.label, featureLabels: [...g.features] })),
  keysSchema: [keyColumn[entity]],
  keys: keys[entity].map((k) => ({ cols: [k] })),
}));
const retrieve = (query: Query) =>
  new Promise<Result>((resolve, reject) =>
    bare.retrieveFeatures(query, new Metadata(), { deadline: Date.now() + 5000 }, (err, res) =>
      err ? reject(err) : resolve(res),
    ),
  );
async function baseline(): Promise<void> {
  const results = await Promise.all(queries.map(retrieve));
  if (results[0]!.rows.length !== KEYS) throw new Error('short result');
}

await measure(300, CONCURRENCY, product);
await measure(300, CONCURRENCY, baseline);
const productRuns: RunStats[] = [];
const baselineRuns: RunStats[] = [];
for (let r = 0; r < ROUNDS; r++) {
  // Alternate which side goes first, so that neither always inherits the other's garbage.
  if (r % 2 === 0) baselineRuns.push(await measure(CALLS, CONCURRENCY, baseline));
  productRuns.push(await measure(CALLS, CONCURRENCY, product));
  if (r % 2 === 1) baselineRuns.push(await measure(CALLS, CONCURRENCY, baseline));
}
const p = medianRun(productRuns);
const b = medianRun(baselineRuns);
// The ratio of each round's pair (run back to back, so under the same machine load), then their
// median: on a shared machine the load drifts between rounds more than the two sides differ.
const roundRatios = productRuns.map((run, r) => run.throughput / baselineRuns[r]!.throughput);
const ratio = [...roundRatios].sort((x, y) => x - y)[Math.floor(roundRatios.length / 2)]!;
console.log(`ratio per round: ${roundRatios.map((x) => x.toFixed(3)).join(', ')}`);
console.log(
  `bare grpc-js: ${Math.round(b.throughput)} fetches/s (3 × ${KEYS} keys), p50 ${b.p50_ms.toFixed(3)} ms, p99 ${b.p99_ms.toFixed(3)} ms`,
);
console.log(
  `components:   ${Math.round(p.throughput)} fetches/s (3 × ${KEYS} keys), p50 ${p.p50_ms.toFixed(3)} ms, p99 ${p.p99_ms.toFixed(3)} ms`,
);
bare.close();
clients.close();
await server.stop();
printResult({
  bench: 'feature-fetch',
  ratio: round(ratio),
  throughput: round(p.throughput, 1),
  baseline_throughput: round(b.throughput, 1),
  p50_ms: round(p.p50_ms),
  p99_ms: round(p.p99_ms),
  baseline_p50_ms: round(b.p50_ms),
  baseline_p99_ms: round(b.p99_ms),
  keys_per_entity: KEYS,
  entities: entities.length,
  concurrency: CONCURRENCY,
});
