/**
 * The orchestrator's downstream for the predict benchmark, in its own process (as in production, so
 * their CPU never runs on the orchestrator's event loop): the reference feature store with seeded
 * demo data, the model server with the catalog ranker ONNX model, and the compute server with the
 * blend expression, on loopback. Prints one JSON line (targets and seeded ids), then serves until
 * stdin closes or SIGTERM. Wiring as in test/support/stack.ts.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BLEND_COMPUTE_ID,
  BLEND_EXPRESSION,
  writeCatalogRankerModel,
} from '../../examples/catalog-ranker.js';
import { startComputeServer } from '../../src/compute/server/index.js';
import { MemoryFeatureStore, seedDemoData, startFeatureStore } from '../../src/featurestore/index.js';
import { startModelServer } from '../../src/modelserver/index.js';
import { createConfigStore } from '../../src/platform/config-store/index.js';
import { createLogger } from '../../src/platform/logging/index.js';

export interface DownstreamInfo {
  featureStore: string;
  modelServer: string;
  computeServer: string;
  users: string[];
  catalogs: string[];
}

const logger = createLogger('bench-downstream', { level: 'silent' });
const store = new MemoryFeatureStore();
const data = await seedDemoData(store, {
  users: Number(process.env.BENCH_USERS ?? 20),
  catalogs: Number(process.env.BENCH_CATALOGS ?? 200),
  categories: 6,
});
const fs = await startFeatureStore({ registry: data.registry, store, port: 0, logger });
const repository = mkdtempSync(join(tmpdir(), 'lattice-bench-models-'));
writeCatalogRankerModel(repository);
const ms = await startModelServer({ repository, port: 0, logger });
const config = await createConfigStore({
  kind: 'file',
  dir: mkdtempSync(join(tmpdir(), 'lattice-bench-compute-')),
});
await config.put(`compute/${BLEND_COMPUTE_ID}`, { expression: BLEND_EXPRESSION });
const cs = await startComputeServer({ store: config, host: '127.0.0.1', port: 0, logger });

const info: DownstreamInfo = {
  featureStore: `127.0.0.1:${fs.port}`,
  modelServer: `127.0.0.1:${ms.port}`,
  computeServer: `127.0.0.1:${cs.port}`,
  users: data.rows.user.map((r) => r.key[0]!),
  catalogs: data.rows.catalog.map((r) => r.key[0]!),
};
process.stdout.write(`${JSON.stringify(info)}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await cs.stop();
  await ms.stop();
  await fs.stop();
  await config.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
