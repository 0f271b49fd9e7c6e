/**
 * The adapters bench/vss-ingest runs on, built the way the product builds them: a `Platform` from
 * settings (embedded defaults in a temporary data directory: the journaled memory queue, PGlite, the
 * embedded vector DB with its write-ahead log; or JetStream + PostgreSQL, with the same embedded
 * vector DB), and the vss consumers started as `lattice vss consumers` starts them
 * (`startConsumers`).
 *
 * On PostgreSQL each stack works in a schema of its own (`search_path` through the URL's `options`),
 * dropped on close; on JetStream its topics have names of their own, deleted on close.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Histogram } from 'prom-client';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { Platform } from '../../src/platform/platform.js';
import type { Queue } from '../../src/platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../src/platform/settings/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import type { VectorDb } from '../../src/platform/vectordb/index.js';
import { EmbeddingProcessor } from '../../src/vss/consumers/embedding-processor.js';
import { EofProcessor } from '../../src/vss/consumers/eof-processor.js';
import { IngestionHandler } from '../../src/vss/consumers/ingestion-handler.js';
import { ModelCatalog } from '../../src/vss/consumers/model-catalog.js';
import { ensureVssTopics } from '../../src/vss/consumers/vss-topics.js';
import { type RunningVss, startVss } from '../../src/vss/index.js';
import { openVssStore, type VssStore } from '../../src/vss/store/index.js';

export type Mode = 'embedded' | 'distributed';

export interface StackOptions {
  mode: Mode;
  partitions: number;
  /** Consumer batch size; default the settings' default. */
  batchSize?: number;
  natsUrl: string;
  postgresUrl: string;
}

export interface Stack {
  mode: Mode;
  settings: LoadedSettings;
  platform: Platform;
  queue: Queue;
  sql: SqlClient;
  store: VssStore;
  vectorDb: VectorDb;
  /** The ingestion topic (created with the settings' partitions, as the consumers create it). */
  topic: string;
  group: string;
  close(): Promise<void>;
}

let stacks = 0;

export async function openStack(options: StackOptions): Promise<Stack> {
  stacks++;
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-bench-ingest-'));
  const unique = `bench_ingest_${process.pid}_${stacks}_${Date.now().toString(36)}`;
  let schemaAdmin: SqlClient | undefined;
  const overrides: Record<string, unknown> = {
    dataDir,
    logLevel: 'silent',
    vss: {
      consumers: {
        embeddingsTopic: `${unique}-embeddings`,
        realtimeTopic: `${unique}-realtime`,
        partitions: options.partitions,
        ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
      },
    },
  };
  if (options.mode === 'distributed') {
    schemaAdmin = await createSqlClient({ kind: 'postgres', url: options.postgresUrl, poolSize: 1 });
    await schemaAdmin.query(`CREATE SCHEMA ${unique}`);
    const url = new URL(options.postgresUrl);
    url.searchParams.set('options', `-c search_path=${unique}`);
    overrides.queue = { kind: 'jetstream', servers: [options.natsUrl] };
    overrides.sql = { kind: 'postgres', url: url.toString() };
  }
  // The environment's LATTICE_* variables are left out: the bench says what it runs on.
  const settings = loadSettings({ env: {}, overrides });
  const platform = new Platform(settings, {
    logger: createLogger('bench', { level: 'silent' }),
    metrics: new Metrics(),
  });
  const [queue, sql, vectorDb] = await Promise.all([
    platform.queue(),
    platform.sqlClient(),
    platform.vectorDb(),
  ]);
  const store = await openVssStore(sql);
  const consumers = settings.vss.consumers;
  await ensureVssTopics(queue, consumers);
  return {
    mode: options.mode,
    settings,
    platform,
    queue,
    sql,
    store,
    vectorDb,
    topic: consumers.embeddingsTopic,
    group: consumers.group,
    close: async () => {
      if (options.mode === 'distributed') {
        for (const topic of [consumers.embeddingsTopic, consumers.realtimeTopic]) {
          await queue.deleteTopic(topic).catch(() => false);
          await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
        }
      }
      await platform.close();
      if (schemaAdmin) {
        await schemaAdmin.query(`DROP SCHEMA IF EXISTS ${unique} CASCADE`);
        await schemaAdmin.close();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The ingestion handler (embedding events and EOF markers) on the stack's adapters. */
export function ingestionHandler(stack: Stack): IngestionHandler {
  const vectorDbType = stack.settings.vss.vectorDb.kind === 'qdrant' ? 'QDRANT' : 'EMBEDDED';
  const catalog = new ModelCatalog(stack.store);
  const embeddings = new EmbeddingProcessor({
    store: stack.store,
    vectorDb: stack.vectorDb,
    vectorDbType,
    catalog,
    logger: stack.platform.logger,
  });
  const markers = new EofProcessor({
    store: stack.store,
    partitions: stack.settings.vss.consumers.partitions,
    catalog,
    logger: stack.platform.logger,
  });
  return new IngestionHandler(embeddings, markers);
}

/**
 * The vss consumers as `lattice vss consumers` starts them (src/vss/start-vss.ts): both topics'
 * runners in the settings' group, batch size, linger and retries, the expiry sweep, on the
 * platform's SQL client, vector DBs, queue, metrics and logger.
 */
export function startConsumers(stack: Stack): Promise<RunningVss> {
  return startVss(stack.platform, { consumers: {} });
}

/**
 * p50 and p99 of the ingestion runner's batches (`vss_consumer_batch_seconds`: parse to last
 * settle), interpolated linearly within the histogram's buckets as Prometheus' histogram_quantile does.
 */
export async function batchLatency(stack: Stack): Promise<{ p50: number; p99: number; count: number }> {
  const histogram = stack.platform.metrics.registry.getSingleMetric('vss_consumer_batch_seconds') as
    | Histogram<string>
    | undefined;
  const values = ((await histogram?.get())?.values ?? []).filter(
    (v) => v.metricName === 'vss_consumer_batch_seconds_bucket' && v.labels.topic === stack.topic,
  );
  const buckets = values
    .map((v) => ({ le: Number(v.labels.le), count: v.value }))
    .sort((a, b) => a.le - b.le);
  const count = buckets.at(-1)?.count ?? 0;
  const quantile = (q: number) => {
    const rank = q * count;
    let lower = 0;
    let below = 0;
    for (const { le, count: atOrBelow } of buckets) {
      if (atOrBelow >= rank) {
        if (!Number.isFinite(le)) return lower * 1000;
        const share = atOrBelow === below ? 0 : (rank - below) / (atOrBelow - below);
        return Number(((lower + (le - lower) * share) * 1000).toFixed(1));
      }
      lower = le;
      below = atOrBelow;
    }
    return Number.NaN;
  };
  return { p50: quantile(0.5), p99: quantile(0.99), count };
}

/** Whether something accepts TCP connections at the URL's host and port. */
export function reachable(url: string, timeoutMs = 1000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(Number(port), hostname.replace(/^\[|\]$/g, ''), () => done(true));
  });
}
