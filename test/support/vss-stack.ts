/**
 * vss serving and consumers running together, as `lattice vss` runs them, for end-to-end tests of
 * the write path, with what a test needs beside them: the SQL store (to register models, as the
 * admin will), the queue (to publish, as producers do) and a SimilaritySearch client.
 *
 * - `inProcessVssStack`: the same parts `lattice vss` starts (src/vss/start-vss.ts), on one Platform in
 *   this process, on embedded defaults: the only way to publish into the in-process queue while the
 *   consumers run.
 * - `childVssStack`: `lattice vss` as a process of its own on JetStream + PostgreSQL (with its
 *   embedded vector DB), the test sharing the queue and the SQL store with it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/platform/logging/index.js';
import { Platform } from '../../src/platform/platform.js';
import { createQueue, type Queue } from '../../src/platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../src/platform/settings/index.js';
import { createSqlClient } from '../../src/platform/sql/index.js';
import type { VectorDb } from '../../src/platform/vectordb/index.js';
import { type ConsumerSettings, ensureVssTopics } from '../../src/vss/consumers/index.js';
import { startVss } from '../../src/vss/index.js';
import { openVssStore, type VssStore } from '../../src/vss/store/index.js';
import { Client } from '../vss/serving/harness.js';
import { type LatticeVssProcess, metricSum, startLatticeVss } from './lattice-vss-process.js';
import { eventually, uniqueName } from './servers.js';
import { type EmbeddingEventSpec, embeddingEventJson, type IngestModel } from './vss-ingest-catalog.js';

export interface VssStack {
  store: VssStore;
  queue: Queue;
  consumers: ConsumerSettings;
  client: Client;
  /** The serving gRPC address (`host:port`) the client calls. */
  address: string;
  /** The vector DB the stack's consumers and serving share (in-process stacks only). */
  vectorDb?: VectorDb;
  /** The sum of a metric's samples whose labels include `labels`, from the stack's /metrics. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

/** Fast consumer batching, so a test's few events are not held by linger. */
const CONSUMERS = { lingerMs: 5, retryBaseMs: 50, retryMaxMs: 500 };

/** `env`: further settings variables, e.g. `LATTICE_VSS_VECTOR_DB: 'pgvector'`. */
export async function inProcessVssStack(options: { env?: Record<string, string> } = {}): Promise<VssStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-vss-stack-'));
  const settings = loadSettings({
    env: { LATTICE_DATA_DIR: dataDir, ...options.env },
    overrides: { queue: { journalDir: '' }, vss: { consumers: CONSUMERS } },
  });
  const platform = new Platform(settings, { logger: createLogger('vss-stack', { level: 'silent' }) });
  try {
    const vss = await startVss(platform, { serving: { port: 0 }, consumers: {} });
    const serving = vss.serving!;
    // Serving starts closed (UNAVAILABLE) until every part of a process has started, as in lattice vss.
    vss.open();
    const store = await openVssStore(await platform.sqlClient());
    const client = new Client(`127.0.0.1:${serving.port}`);
    return {
      address: `127.0.0.1:${serving.port}`,
      store,
      queue: await platform.queue(),
      consumers: settings.vss.consumers,
      client,
      vectorDb: await platform.vectorDb(),
      metric: async (name, labels = {}) => {
        const { body } = await platform.metrics.scrape();
        return metricSum(body, name, labels);
      },
      close: async () => {
        client.close();
        await vss.stop();
        await platform.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

/** A settings file for a child on JetStream + PostgreSQL, with topics and a group of its own. */
export function distributedSettings(
  dir: string,
  servers: { nats: string; postgres: string },
): { settingsFile: string; settings: LoadedSettings; env: Record<string, string> } {
  const name = uniqueName('vstack');
  const settingsFile = join(dir, 'settings.json');
  writeFileSync(
    settingsFile,
    JSON.stringify({
      queue: { kind: 'jetstream', servers: [servers.nats] },
      sql: { kind: 'postgres', url: servers.postgres },
      vss: {
        consumers: {
          embeddingsTopic: `${name}-emb`,
          realtimeTopic: `${name}-rt`,
          group: name,
          ackWaitMs: 2000,
          ...CONSUMERS,
        },
      },
    }),
  );
  const env = { LATTICE_DATA_DIR: dir };
  return { settingsFile, settings: loadSettings({ env, file: settingsFile }), env };
}

export async function childVssStack(servers: { nats: string; postgres: string }): Promise<VssStack> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-vss-child-'));
  const { settingsFile, settings, env } = distributedSettings(dir, servers);
  const sql = await createSqlClient({ kind: 'postgres', url: servers.postgres });
  const queue = await createQueue({ kind: 'jetstream', servers: [servers.nats] });
  let child: LatticeVssProcess | undefined;
  try {
    child = await startLatticeVss({ command: 'vss', env, settingsFile });
    await ensureVssTopics(queue, settings.vss.consumers);
    const client = new Client(child.servingAddress!);
    const running = child;
    return {
      address: child.servingAddress!,
      store: await openVssStore(sql),
      queue,
      consumers: settings.vss.consumers,
      client,
      metric: (name, labels) => running.metric(name, labels),
      close: async () => {
        client.close();
        const code = await running.stop();
        await deleteTopics(queue, settings.vss.consumers);
        await queue.close();
        await sql.close();
        rmSync(dir, { recursive: true, force: true });
        if (code !== 0) throw new Error(`lattice vss exited ${code}:\n${running.output()}`);
      },
    };
  } catch (err) {
    await child?.kill();
    await deleteTopics(queue, settings.vss.consumers);
    await queue.close();
    await sql.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

export async function deleteTopics(queue: Queue, consumers: ConsumerSettings): Promise<void> {
  for (const topic of [consumers.embeddingsTopic, consumers.realtimeTopic]) {
    await queue.deleteTopic(topic).catch(() => false);
    await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
  }
}

/** A child's settings on JetStream + PostgreSQL, all its own, and how to remove what it made. */
export interface IsolatedSettings {
  env: Record<string, string>;
  settingsFile: string;
  /** The PostgreSQL schema its tables live in. */
  schema: string;
  /** Drops the schema and deletes the topics (and their dead-letter topics). */
  cleanup(): Promise<void>;
}

/**
 * A settings file for `lattice vss` on JetStream + PostgreSQL where nothing is shared with other
 * tests: a schema, topics and groups of its own (named from `prefix`); `vss` merges more into the
 * consumers and admin settings. The data directory is `<dir>/data`.
 */
export async function isolatedDistributedSettings(
  dir: string,
  servers: { nats: string; postgres: string },
  prefix: string,
  vss: { consumers?: Record<string, unknown>; admin?: Record<string, unknown> } = {},
): Promise<IsolatedSettings> {
  const name = uniqueName(prefix).toLowerCase();
  const sql = await createSqlClient({ kind: 'postgres', url: servers.postgres });
  await sql.query(`CREATE SCHEMA ${name}`);
  const topics = {
    embeddingsTopic: `${name}-emb`,
    realtimeTopic: `${name}-rt`,
    operationsTopic: `${name}-ops`,
  };
  const settingsFile = join(dir, 'settings.json');
  writeFileSync(
    settingsFile,
    JSON.stringify({
      queue: { kind: 'jetstream', servers: [servers.nats] },
      sql: { kind: 'postgres', url: servers.postgres, schema: name },
      vss: {
        consumers: {
          embeddingsTopic: topics.embeddingsTopic,
          realtimeTopic: topics.realtimeTopic,
          group: name,
          ...vss.consumers,
        },
        admin: { operationsTopic: topics.operationsTopic, group: `${name}-admin`, ...vss.admin },
      },
    }),
  );
  return {
    env: { LATTICE_DATA_DIR: join(dir, 'data') },
    settingsFile,
    schema: name,
    cleanup: async () => {
      await sql.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await sql.close();
      const queue = await createQueue({ kind: 'jetstream', servers: [servers.nats] });
      for (const topic of Object.values(topics)) {
        await queue.deleteTopic(topic).catch(() => false);
        await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
      }
      await queue.close();
    },
  };
}

/**
 * Publishes embedding events as a producer does (keyed by candidate id) and waits until the stack's
 * consumers have ingested them (its `vss_ingestion_events_total` for the entity grew by as many).
 */
export async function ingestEmbeddings(
  stack: VssStack,
  model: IngestModel,
  events: readonly EmbeddingEventSpec[],
): Promise<void> {
  const counted = () => stack.metric('vss_ingestion_events_total', { entity: model.entity });
  const before = await counted();
  const encoder = new TextEncoder();
  await Promise.all(
    events.map((event) =>
      stack.queue.publish(stack.consumers.embeddingsTopic, encoder.encode(embeddingEventJson(model, event)), {
        key: event.id,
      }),
    ),
  );
  await eventually(
    async () => (await counted()) >= before + events.length,
    60_000,
    'the events to be ingested',
  );
}
