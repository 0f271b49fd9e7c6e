/**
 * Crash test of the vss write path (issue 14): `lattice vss consumers`, a process of its own,
 * ingests 20,000 keyed 128-d embedding events over 8 partitions and is SIGKILLed three times at
 * random points of its progress, then restarted; the events arrive in four portions, one before each
 * start (the last with the job's EOF markers). At the end the embedding store holds exactly 20,000
 * rows and the collection exactly 20,000 points, each vector equal to its event's (all checked), the
 * job is complete once with exact counts, and nothing was dead-lettered.
 *
 * On embedded defaults (journaled in-process queue, PGlite, embedded vector DB: each owned by the
 * child, so the test publishes and reads while it is down), and on JetStream + PostgreSQL (where the
 * topics have a short ack wait, so what a killed process held comes back quickly).
 *
 * VSS_CRASH_SEED replays a run's kill points (each run prints its seed); VSS_CRASH_EVENTS changes the
 * event count.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { createQueue, MemoryQueue, type Queue, TopicNotFoundError } from '../../src/platform/queue/index.js';
import { seededRandom } from '../../src/platform/random.js';
import { type LoadedSettings, loadSettings } from '../../src/platform/settings/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/index.js';
import { ensureVssTopics } from '../../src/vss/consumers/index.js';
import { collectionName } from '../../src/vss/model/index.js';
import { openVssStore } from '../../src/vss/store/index.js';
import { type LatticeVssProcess, startLatticeVss } from '../support/lattice-vss-process.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import {
  embeddingEventJson,
  eofMarkerJson,
  type IngestModel,
  registerIngestModel,
  seededVector,
  storedRows,
} from '../support/vss-ingest-catalog.js';

const EVENTS = Number(process.env.VSS_CRASH_EVENTS ?? 20_000);
const DIMENSION = 128;
const KILLS = 3;
const JOB = 'crash-job';
const SEED = Number(process.env.VSS_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];

const idOf = (i: number) => `c${i}`;

/** Where the child runs and how the test reaches the same SQL store and queue. */
interface Target {
  env: Record<string, string>;
  settingsFile?: string;
  settings: LoadedSettings;
  /** The SQL store and the queue are owned by the child while it runs (embedded). */
  exclusive: boolean;
  dataDir: string;
  openSql(): Promise<SqlClient>;
  openQueue(): Promise<Queue>;
  /** Removes what the run left (its topics, its data directory) and closes `queue`. */
  cleanup(queue: Queue | undefined): Promise<void>;
}

function embeddedTarget(): Target {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-vss-crash-'));
  const env = { LATTICE_DATA_DIR: dataDir };
  const settings = loadSettings({ env });
  return {
    env,
    settings,
    exclusive: true,
    dataDir,
    openSql: () => createSqlClient({ kind: 'pglite', dataDir: settings.sql.dataDir }),
    openQueue: () => MemoryQueue.open({ journalDir: settings.queue.journalDir }),
    cleanup: async (queue) => {
      await queue?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function distributedTarget(): Target {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-vss-crash-js-'));
  const name = uniqueName('vcrash');
  const settingsFile = join(dataDir, 'settings.json');
  writeFileSync(
    settingsFile,
    JSON.stringify({
      queue: { kind: 'jetstream', servers: [natsUrl] },
      sql: { kind: 'postgres', url: postgresUrl },
      vss: {
        consumers: {
          embeddingsTopic: `${name}-emb`,
          realtimeTopic: `${name}-rt`,
          group: name,
          ackWaitMs: 2000,
        },
      },
    }),
  );
  const env = { LATTICE_DATA_DIR: dataDir };
  const settings = loadSettings({ env, file: settingsFile });
  return {
    env,
    settingsFile,
    settings,
    exclusive: false,
    dataDir,
    openSql: () => createSqlClient({ kind: 'postgres', url: postgresUrl! }),
    openQueue: () => createQueue({ kind: 'jetstream', servers: [natsUrl!] }),
    cleanup: async (queue) => {
      const { embeddingsTopic, realtimeTopic } = settings.vss.consumers;
      for (const topic of [embeddingsTopic, realtimeTopic]) {
        await queue?.deleteTopic(topic).catch(() => false);
        await queue?.deleteTopic(`${topic}-dlq`).catch(() => false);
      }
      await queue?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function publishPortion(
  queue: Queue,
  target: Target,
  model: IngestModel,
  from: number,
  to: number,
  markers: boolean,
): Promise<void> {
  const topic = target.settings.vss.consumers.embeddingsTopic;
  const encoder = new TextEncoder();
  const inFlight = 512;
  for (let start = from; start < to; start += inFlight) {
    const publishes: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(to, start + inFlight); i++) {
      const payload = embeddingEventJson(model, {
        id: idOf(i),
        vector: seededVector(i, DIMENSION),
        payload: { n: String(i) },
        jobId: JOB,
      });
      publishes.push(queue.publish(topic, encoder.encode(payload), { key: idOf(i), messageId: `e-${i}` }));
    }
    await Promise.all(publishes);
  }
  if (!markers) return;
  const { partitions } = await queue.describeTopic(topic);
  for (let partition = 0; partition < partitions; partition++) {
    await queue.publish(topic, encoder.encode(eofMarkerJson(model, JOB, partition)), {
      partition,
      messageId: `eof-${partition}`,
    });
  }
}

async function crashScenario(target: Target, diagnostic: (line: string) => void): Promise<void> {
  const began = performance.now();
  const log = (line: string) => diagnostic(`${((performance.now() - began) / 1000).toFixed(1)}s ${line}`);
  const next = seededRandom(SEED);
  log(`seed ${SEED} (VSS_CRASH_SEED replays the kill points)`);
  const consumers = target.settings.vss.consumers;
  const embeddingsTopic = consumers.embeddingsTopic;
  let queue: Queue | undefined;
  let sql: SqlClient | undefined;
  let child: LatticeVssProcess | undefined;
  const model: { value?: IngestModel } = {};
  try {
    sql = await target.openSql();
    const store = await openVssStore(sql);
    model.value = await registerIngestModel(store, {
      entity: uniqueName('crash').replace(/[^a-z0-9_]/g, '_'),
      dimension: DIMENSION,
      variants: { organic: {} },
    });
    if (target.exclusive) {
      await sql.close();
      sql = undefined;
    }
    queue = await target.openQueue();
    await ensureVssTopics(queue, consumers);

    const portion = Math.ceil(EVENTS / (KILLS + 1));
    for (let run = 0; run <= KILLS; run++) {
      const last = run === KILLS;
      queue ??= await target.openQueue();
      await publishPortion(
        queue,
        target,
        model.value,
        run * portion,
        Math.min(EVENTS, (run + 1) * portion),
        last,
      );
      if (target.exclusive) {
        await queue.close();
        queue = undefined;
      }
      log(`run ${run}: published; starting lattice vss consumers`);
      child = await startLatticeVss({
        command: 'vss consumers',
        env: target.env,
        settingsFile: target.settingsFile,
      });
      const applied = () =>
        child!.metric('vss_consumer_events_total', {
          topic: embeddingsTopic,
          kind: 'embedding',
          outcome: 'applied',
        });
      if (!last) {
        // A random point of this run's progress: mid-batch, some batches applied and not acknowledged.
        const killAt = 1 + Math.floor(next() * Math.max(1, Math.floor(portion / 3)));
        await eventually(async () => (await applied()) >= killAt, 300_000, `${killAt} events applied`);
        const seen = await applied();
        await child.kill();
        log(`run ${run}: SIGKILL after ${seen} events applied in this run (kill point ${killAt})`);
        child = undefined;
        continue;
      }
      await eventually(
        async () =>
          (await child!.metric('vss_ingestion_jobs_completed_total', { entity: model.value!.entity })) >= 1,
        600_000,
        'the ingestion job to complete',
      );
      assert.equal(
        await child.metric('vss_ingestion_jobs_completed_total', { entity: model.value.entity }),
        1,
        'the job completes once',
      );
      assert.equal(await child.metric('vss_consumer_dead_letters_total'), 0, child.output());
      log(`run ${run}: the job completed after ${await applied()} events applied in this run`);
      assert.equal(await child.stop(), 0, `a graceful stop exits 0:\n${child.output()}`);
      child = undefined;
    }

    sql ??= await target.openSql();
    await verifyStore(sql, model.value);
    log('the store holds every row once, as sent');
    await verifyCollection(target, model.value);
    log('the collection holds every point once, as sent');
    queue ??= await target.openQueue();
    await verifyNoDeadLetters(queue, embeddingsTopic);
  } catch (err) {
    if (child !== undefined && child.exited() === undefined) {
      const metrics = await fetch(`${child.opsUrl}/metrics`).then((r) => r.text(), String);
      log(
        `the child's output:\n${child.output()}\nits vss metrics:\n${metrics
          .split('\n')
          .filter((l) => l.startsWith('vss_'))
          .join('\n')}`,
      );
    }
    throw err;
  } finally {
    await child?.kill();
    await sql?.close();
    await target.cleanup(queue);
  }
}

async function verifyStore(sql: SqlClient, model: IngestModel): Promise<void> {
  const store = await openVssStore(sql);
  assert.equal(await store.embeddings.count(model.embeddingsTable, model.modelName, 1), EVENTS, 'store rows');
  const seen = new Set<string>();
  for await (const row of storedRows(store, model.embeddingsTable, model.modelName, 1)) {
    assert.ok(!seen.has(row.id), `row ${row.id} twice`);
    seen.add(row.id);
    const expected = seededVector(Number(row.id.slice(1)), DIMENSION);
    assert.deepEqual([...row.embedding], expected, `the stored embedding of ${row.id}`);
    assert.equal(row.toBeIndexed.organic, true);
  }
  assert.equal(seen.size, EVENTS);
  for (let i = 0; i < EVENTS; i++) assert.ok(seen.has(idOf(i)), `row ${idOf(i)} lost`);

  const record = await store.ingestion.find({
    entity: model.entity,
    modelName: model.modelName,
    version: 1,
    jobId: JOB,
  });
  assert.equal(record?.status, 'COMPLETE');
  assert.deepEqual(record?.markedPartitions, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(record?.counts, { events: EVENTS, applied: EVENTS, rejected: 0, pointsWritten: EVENTS });
}

async function verifyCollection(target: Target, model: IngestModel): Promise<void> {
  const db = await EmbeddedVectorDb.open({ dir: target.settings.vss.vectorDb.dir, snapshotIntervalMs: 0 });
  try {
    const name = collectionName(model.entity, model.modelName, 1);
    assert.equal((await db.collectionInfo(name)).points, EVENTS, 'collection points');
    const chunk = 2000;
    for (let start = 0; start < EVENTS; start += chunk) {
      const ids = Array.from({ length: Math.min(chunk, EVENTS - start) }, (_, k) => idOf(start + k));
      const points = await db.getPoints(name, ids, { withVector: true, withPayload: true });
      points.forEach((point, k) => {
        const i = start + k;
        assert.ok(point, `point ${idOf(i)} lost`);
        assert.deepEqual([...point.vector!], seededVector(i, DIMENSION), `the vector of ${idOf(i)}`);
        // Sent as text; text that reads as a number is stored as one (src/vss/model/attribute-value.ts).
        assert.equal(point.payload?.n, i);
        assert.equal(point.payload?.to_be_indexed_organic, true);
      });
    }
  } finally {
    await db.close();
  }
}

async function verifyNoDeadLetters(queue: Queue, topic: string): Promise<void> {
  try {
    assert.equal((await queue.topicStats(`${topic}-dlq`)).messages, 0, 'dead letters');
  } catch (err) {
    if (!(err instanceof TopicNotFoundError)) throw err;
  }
}

describe('vss ingestion survives SIGKILL of its process', () => {
  test('on embedded defaults (journaled queue, PGlite, embedded vector DB)', async (t) => {
    await crashScenario(embeddedTarget(), (line) => t.diagnostic(line));
  });

  test('on JetStream + PostgreSQL', {
    skip: natsUrl === undefined || postgresUrl === undefined,
  }, async (t) => {
    await crashScenario(distributedTarget(), (line) => t.diagnostic(line));
  });
});
