/**
 * The vss admin operations engine with everything it orchestrates, on real adapters, for the
 * engine's tests and its crash-test child: the vss consumers (startVssConsumers), the built-in job
 * runner over training files, and `startAdminEngine`, on the SQL store, queue and vector DB given.
 * Plus what the tests need around them: an entity of its own with a model and variants, JSON Lines
 * training data, and waiting for an operation's status.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, type Logger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import type { Queue } from '../../src/platform/queue/index.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import type { SqlClient } from '../../src/platform/sql/index.js';
import type { VectorDb } from '../../src/platform/vectordb/index.js';
import { FileJobRunner, type FileJobRunnerOptions } from '../../src/vss/admin/jobs/index.js';
import {
  type AdminEngine,
  type AdminEngineOptions,
  type StepEvent,
  startAdminEngine,
} from '../../src/vss/admin/operations/index.js';
import {
  type ConsumerSettings,
  startVssConsumers,
  type VssConsumers,
} from '../../src/vss/consumers/index.js';
import { type JobFrequency, type Operation, openVssStore, type VssStore } from '../../src/vss/store/index.js';
import { vectorOf as seededVector } from '../vss/consumers/ingestion-world.js';
import { eventually } from './servers.js';

export const DIMENSION = 16;
export const PARTITIONS = 3;

export interface AdminWorldOptions {
  sql: SqlClient;
  queue: Queue;
  vectorDb: VectorDb;
  /** Prefix of the topics and groups (unique per test file on a shared server). */
  name: string;
  pollIntervalMs?: number;
  scheduleIntervalMs?: number;
  now?: () => number;
  onStep?: (event: StepEvent) => void | Promise<void>;
  /** Options of the built-in job runner (state store, lease). */
  jobRunner?: Partial<FileJobRunnerOptions>;
  logger?: Logger;
  /** Start no consumers (a second engine sharing the first one's). */
  withoutConsumers?: boolean;
  /** Further engine options (recall gate, rollback grace period, live recall source). */
  engine?: Partial<AdminEngineOptions>;
}

export interface AdminWorld {
  store: VssStore;
  engine: AdminEngine;
  consumers: VssConsumers | undefined;
  settings: ConsumerSettings;
  metrics: Metrics;
  jobRunner: FileJobRunner;
  options: AdminEngineOptions;
  close(): Promise<void>;
}

export function consumerSettings(name: string): ConsumerSettings {
  return loadSettings({
    env: {},
    overrides: {
      vss: {
        consumers: {
          embeddingsTopic: `${name}-emb`,
          realtimeTopic: `${name}-rt`,
          group: `${name}-consumers`,
          partitions: PARTITIONS,
          lingerMs: 5,
          retryBaseMs: 50,
          retryMaxMs: 500,
          ackWaitMs: 5000,
        },
      },
    },
  }).vss.consumers;
}

export async function openAdminWorld(o: AdminWorldOptions): Promise<AdminWorld> {
  const logger = o.logger ?? createLogger('admin-world', { level: 'silent' });
  const metrics = new Metrics();
  const settings = consumerSettings(o.name);
  const store = await openVssStore(o.sql);
  const consumers = o.withoutConsumers
    ? undefined
    : await startVssConsumers({
        sql: o.sql,
        vectorDb: o.vectorDb,
        vectorDbType: 'EMBEDDED',
        queue: o.queue,
        settings,
        metrics,
        logger,
      });
  if (o.withoutConsumers) await o.queue.ensureTopic(settings.embeddingsTopic, { partitions: PARTITIONS });
  const jobRunner = new FileJobRunner({
    queue: o.queue,
    batchRows: 200,
    checkpointEveryMs: 100,
    ...o.jobRunner,
  });
  const options: AdminEngineOptions = {
    store,
    queue: o.queue,
    vectorDb: o.vectorDb,
    vectorDbType: 'EMBEDDED',
    jobRunner,
    embeddingsTopic: settings.embeddingsTopic,
    partitions: PARTITIONS,
    operationsTopic: `${o.name}-ops`,
    group: `${o.name}-admin`,
    pollIntervalMs: o.pollIntervalMs ?? 50,
    scheduleIntervalMs: o.scheduleIntervalMs ?? 0,
    metrics,
    logger,
    ...(o.now === undefined ? {} : { now: o.now }),
    ...(o.onStep === undefined ? {} : { onStep: o.onStep }),
    ...o.engine,
  };
  const engine = await startAdminEngine(options);
  return {
    store,
    engine,
    consumers,
    settings,
    metrics,
    jobRunner,
    options,
    close: async () => {
      await engine.stop();
      await jobRunner.close();
      await consumers?.stop();
    },
  };
}

let entities = 0;

export interface Catalog {
  entity: string;
  modelName: string;
  embeddingsTable: string;
  aggregatorTable: string;
}

/** Filters of the test variants: `all` admits every flagged candidate, `live` those with is_live "true". */
export const FILTERS = {
  all: {},
  live: { criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }] },
  brand_a: { criteria: [{ column_name: 'brand', filter_value: 'a' }] },
} as const;

/** Registers an entity of its own: store, model `m` (16-d COSINE) on `trainingDataPath`, the variants. */
export async function registerCatalog(
  store: VssStore,
  trainingDataPath: string,
  variants: readonly (keyof typeof FILTERS)[] = ['all', 'live'],
  jobFrequency: JobFrequency = 'FREQ_1D',
): Promise<Catalog> {
  entities += 1;
  const n = entities + Math.floor(Math.random() * 1e6) * 100;
  const entity = `adm${n}`;
  const catalog = { entity, modelName: 'm', embeddingsTable: `emb_adm${n}`, aggregatorTable: `agg_adm${n}` };
  const storeId = 100_000 + (n % 1_000_000_000);
  await store.stores.create({
    storeId,
    entity,
    dbConfId: 'main',
    embeddingsTable: catalog.embeddingsTable,
    aggregatorTable: catalog.aggregatorTable,
  });
  await store.models.create({
    entity,
    modelName: 'm',
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: 0,
    mqId: 1,
    modelConfig: { distanceFunction: 'COSINE', vectorDimension: DIMENSION },
    storeId,
    trainingDataPath,
  });
  for (const variant of variants) await registerVariant(store, catalog, variant, jobFrequency);
  return catalog;
}

export async function registerVariant(
  store: VssStore,
  catalog: Catalog,
  variant: keyof typeof FILTERS,
  jobFrequency: JobFrequency = 'FREQ_1D',
): Promise<void> {
  await store.variants.create({
    entity: catalog.entity,
    modelName: catalog.modelName,
    variant,
    vssFilter: FILTERS[variant] as never,
    vectorDbType: 'EMBEDDED',
    vectorDbConfig: { hnsw: { m: 12, ef_construction: 64 } },
    jobFrequency,
  });
}

/** Deterministic vectors of this world's dimension (the consumers' tests' generator). */
export function vectorOf(seed: number, dimension = DIMENSION): number[] {
  return seededVector(seed, dimension);
}

/**
 * Writes `count` training rows as JSON Lines files (`files` of them) into `dir`: ids `c<n>`, every
 * fifth not indexed, is_live alternating, brand cycling a/b/c. `seed` changes the vectors.
 */
export function writeTrainingData(
  dir: string,
  count: number,
  options: { files?: number; seed?: number } = {},
): void {
  mkdirSync(dir, { recursive: true });
  const files = options.files ?? 4;
  const seed = options.seed ?? 0;
  const lines: string[][] = Array.from({ length: files }, () => []);
  for (let n = 0; n < count; n++) {
    lines[n % files]!.push(
      JSON.stringify({
        id: `c${n}`,
        emb: vectorOf(n + 1 + seed * 1_000_003),
        flag: n % 5 !== 0,
        is_live: n % 2 === 0 ? 'true' : 'false',
        brand: ['a', 'b', 'c'][n % 3],
      }),
    );
  }
  lines.forEach((file, i) => {
    writeFileSync(join(dir, `part-${i}.jsonl`), `${file.join('\n')}\n`);
  });
}

/** Waits until the operation's status is one of `statuses`; its row then. */
export async function waitForOperation(
  store: VssStore,
  operationId: string,
  statuses: readonly Operation['status'][] = ['SUCCEEDED'],
  timeoutMs = 60_000,
): Promise<Operation> {
  let last: Operation | undefined;
  try {
    await eventually(
      async () => {
        last = await store.operations.get(operationId);
        if (last.status === 'FAILED' && !statuses.includes('FAILED')) {
          throw new Error(`operation ${operationId} FAILED at ${last.step}: ${last.lastError}`);
        }
        return statuses.includes(last.status);
      },
      timeoutMs,
      `operation ${operationId} to be ${statuses.join(' or ')}`,
    );
  } catch (err) {
    throw new Error(
      `${(err as Error).message} (last: ${last?.status} at ${last?.step}, ${JSON.stringify(last?.result)})`,
    );
  }
  return last!;
}
