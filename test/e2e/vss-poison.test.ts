/**
 * Poison events end to end, with `lattice vss` as its own process: fourteen kinds of events that can
 * never be applied, published to the vss topics between good ones, each land in its topic's
 * dead-letter topic with the reason (and the field, where one is at fault) in its headers, while the
 * good events are applied. Once the cause of two of them is fixed (the unknown model is registered,
 * the unknown entity gets a store), `lattice vss replay` re-drives every dead letter: those two are
 * applied, the others come back to the dead-letter topic.
 *
 * On embedded defaults the queue journal, PGlite and the vector DB belong to the running process, so
 * the test publishes, reads and fixes while it is stopped and replays with `lattice vss replay` in
 * between, as an operator would; on JetStream + PostgreSQL everything happens while it runs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  createQueue,
  DeadLetterHeaders,
  MemoryQueue,
  type Queue,
  type QueueMessage,
} from '../../src/platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../src/platform/settings/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { ensureVssTopics } from '../../src/vss/consumers/index.js';
import { openVssStore, type VssStore } from '../../src/vss/store/index.js';
import { type LatticeVssProcess, runLattice, startLatticeVss } from '../support/lattice-vss-process.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import {
  embeddingEventJson,
  eofMarkerJson,
  type IngestModel,
  realtimeEventJson,
  registerIngestModel,
  seededVector,
} from '../support/vss-ingest-catalog.js';
import { deleteTopics, distributedSettings } from '../support/vss-stack.js';

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];
const DIMENSION = 8;
const GOOD = 30;
const encoder = new TextEncoder();

/** `lattice vss` and the adapters it shares with the test (or owns, on embedded: then it is stopped around their use). */
class VssProcessTarget {
  child: LatticeVssProcess | undefined;
  #sql: SqlClient | undefined;
  #queue: Queue | undefined;

  private constructor(
    readonly settings: LoadedSettings,
    readonly env: Record<string, string>,
    readonly settingsFile: string | undefined,
    readonly dir: string,
    readonly live: boolean,
  ) {}

  static embedded(): VssProcessTarget {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-vss-poison-'));
    const env = { LATTICE_DATA_DIR: dir };
    return new VssProcessTarget(loadSettings({ env }), env, undefined, dir, false);
  }

  static distributed(servers: { nats: string; postgres: string }): VssProcessTarget {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-vss-poison-js-'));
    const { settings, settingsFile, env } = distributedSettings(dir, servers);
    return new VssProcessTarget(settings, env, settingsFile, dir, true);
  }

  get consumers() {
    return this.settings.vss.consumers;
  }

  async start(): Promise<LatticeVssProcess> {
    this.child ??= await startLatticeVss({ command: 'vss', env: this.env, settingsFile: this.settingsFile });
    return this.child;
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child !== undefined) assert.equal(await child.stop(), 0, child.output());
  }

  /** Runs `fn` with the store and the queue; on embedded the process is stopped first (and left stopped). */
  async withAdapters<T>(fn: (store: VssStore, queue: Queue) => Promise<T>): Promise<T> {
    if (!this.live) await this.stop();
    const sql = await this.#openSql();
    const queue = await this.#openQueue();
    try {
      return await fn(await openVssStore(sql), queue);
    } finally {
      if (!this.live) {
        await queue.close();
        await sql.close();
        this.#queue = undefined;
        this.#sql = undefined;
      }
    }
  }

  /** `lattice vss replay`, as an operator runs it (on embedded, while the process is stopped). */
  async replay(): Promise<{ code: number | null; stdout: string; stderr: string }> {
    if (!this.live) await this.stop();
    return runLattice(['vss', 'replay'], this.env, this.settingsFile);
  }

  async close(): Promise<void> {
    await this.child?.kill();
    if (this.live && this.#queue) await deleteTopics(this.#queue, this.consumers);
    await this.#queue?.close();
    await this.#sql?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  async #openSql(): Promise<SqlClient> {
    this.#sql ??=
      this.settings.sql.kind === 'pglite'
        ? await createSqlClient({ kind: 'pglite', dataDir: this.settings.sql.dataDir })
        : await createSqlClient({ kind: 'postgres', url: this.settings.sql.url });
    return this.#sql;
  }

  async #openQueue(): Promise<Queue> {
    this.#queue ??=
      this.settings.queue.kind === 'memory'
        ? await MemoryQueue.open({ journalDir: this.settings.queue.journalDir })
        : await createQueue({ kind: 'jetstream', servers: [...this.settings.queue.servers] });
    return this.#queue;
  }
}

interface Poison {
  /** Its message id, which its dead letter carries as Lattice-Origin-Message-Id. */
  id: string;
  topic: 'embeddings' | 'realtime';
  payload: Uint8Array | string;
  reason: RegExp;
  field?: string;
  /** Applied once the cause is fixed and it is replayed. */
  fixable?: boolean;
  partition?: number;
}

function poisons(model: IngestModel, ghostEntity: string): Poison[] {
  const vector = seededVector(1, DIMENSION);
  const event = (spec: Record<string, unknown>, space: Record<string, unknown> = {}) =>
    JSON.stringify({
      entity: model.entity,
      model_name: model.modelName,
      candidate_id: 'p1',
      version: 1,
      ...spec,
      index_space: {
        variants_version_map: '{"organic":1}',
        variants_index_map: '{"organic":true}',
        embedding: vector,
        operation: 'A',
        ...space,
      },
    });
  return [
    { id: 'not-json', topic: 'embeddings', payload: '{"entity": ', reason: /not JSON/ },
    { id: 'not-object', topic: 'embeddings', payload: '[1, 2, 3]', reason: /must be a JSON object/ },
    { id: 'not-utf8', topic: 'embeddings', payload: new Uint8Array([0xff, 0xfe, 0x7b]), reason: /UTF-8/ },
    {
      id: 'no-candidate-id',
      topic: 'embeddings',
      payload: event({ candidate_id: undefined }),
      reason: /candidate_id/,
      field: 'candidate_id',
    },
    {
      id: 'bad-operation',
      topic: 'embeddings',
      payload: event({}, { operation: 'X' }),
      reason: /operation/,
      field: 'index_space.operation',
    },
    {
      id: 'add-without-embedding',
      topic: 'embeddings',
      payload: event({}, { embedding: [] }),
      reason: /embedding/,
      field: 'index_space.embedding',
    },
    {
      id: 'out-of-float32-range',
      topic: 'embeddings',
      payload: event({}, { embedding: vector.map((x, i) => (i === 0 ? 1e39 : x)) }),
      reason: /float32|finite/,
      field: 'index_space.embedding[0]',
    },
    {
      id: 'wrong-dimension',
      topic: 'embeddings',
      payload: event({}, { embedding: vector.slice(0, 5) }),
      reason: /has 5 values, but model .* has dimension 8/,
    },
    {
      id: 'unknown-model',
      topic: 'embeddings',
      payload: event({ model_name: 'ghost', candidate_id: 'g1' }),
      reason: /model .*\/ghost is not registered/,
      fixable: true,
    },
    {
      id: 'unknown-variant',
      topic: 'embeddings',
      payload: event({}, { variants_version_map: '{"nope":1}', variants_index_map: '{"nope":true}' }),
      reason: /no variant nope/,
    },
    {
      id: 'version-not-written',
      topic: 'embeddings',
      payload: event({ version: 9 }, { variants_version_map: '{"organic":9}' }),
      reason: /writes version 1 .*not 9/,
    },
    {
      id: 'eof-partition-out-of-range',
      topic: 'embeddings',
      payload: eofMarkerJson(model, 'poison-job', 99),
      reason: /partition/,
      partition: 0,
    },
    {
      id: 'realtime-no-timestamp',
      topic: 'realtime',
      payload: JSON.stringify({ entity_label: model.entity, data: [{ id: 'c1', label: 'x', value: '1' }] }),
      reason: /timestamp/,
      field: 'timestamp',
    },
    {
      id: 'realtime-unknown-entity',
      topic: 'realtime',
      payload: JSON.stringify({
        timestamp: 1000,
        entity_label: ghostEntity,
        data: [{ id: 'r1', label: 'brand', value: 'acme' }],
      }),
      reason: /unknown entity/,
      fixable: true,
    },
  ];
}

/** The dead letters of a topic, read by a group of the test's own that settles none (the replay still finds them). */
async function deadLetters(queue: Queue, topic: string, count: number): Promise<QueueMessage[]> {
  const seen = new Map<string, QueueMessage>();
  const consumer = await queue.subscribe(
    `${topic}-dlq`,
    uniqueName('inspect'),
    (message) => {
      seen.set(`${message.sequence}`, message);
    },
    { autoAck: false, inFlightPerPartition: 1000, concurrency: 1000 },
  );
  try {
    await eventually(() => seen.size >= count, 30_000, `${count} dead letters on ${topic}-dlq`);
  } finally {
    await consumer.close();
  }
  return [...seen.values()];
}

async function poisonScenario(target: VssProcessTarget): Promise<void> {
  const entity = uniqueName('poison').replace(/[^a-z0-9_]/g, '_');
  const ghostEntity = `${entity}_ghost`;
  let model: IngestModel | undefined;
  let all: Poison[] = [];
  const topicOf = (p: Poison) =>
    p.topic === 'embeddings' ? target.consumers.embeddingsTopic : target.consumers.realtimeTopic;

  // Registered, then the poison between good events (in publish order on each partition).
  await target.withAdapters(async (store, queue) => {
    model = await registerIngestModel(store, { entity, dimension: DIMENSION, variants: { organic: {} } });
    await ensureVssTopics(queue, target.consumers);
    all = poisons(model, ghostEntity);
    for (let i = 0; i < GOOD; i++) {
      const poison = all[i % all.length];
      if (i < all.length && poison !== undefined) {
        await queue.publish(
          topicOf(poison),
          typeof poison.payload === 'string' ? encoder.encode(poison.payload) : poison.payload,
          {
            messageId: poison.id,
            key: poison.id,
            ...(poison.partition === undefined ? {} : { partition: poison.partition }),
          },
        );
      }
      await queue.publish(
        target.consumers.embeddingsTopic,
        encoder.encode(
          embeddingEventJson(model, { id: `good${i}`, vector: seededVector(100 + i, DIMENSION) }),
        ),
        { key: `good${i}` },
      );
    }
    await queue.publish(
      target.consumers.realtimeTopic,
      encoder.encode(realtimeEventJson(model, 1000, [['good0', 'brand', 'acme']])),
      { key: 'good0' },
    );
  });
  const m = model!;

  let child = await target.start();
  await eventually(
    async () =>
      (await child.metric('vss_consumer_dead_letters_total')) >= all.length &&
      (await child.metric('vss_ingestion_events_total', { entity })) >= GOOD &&
      (await child.metric('vss_consumer_events_total', {
        topic: target.consumers.realtimeTopic,
        outcome: 'applied',
      })) >= 1,
    60_000,
    'the poison dead-lettered and the good events applied',
  );
  assert.equal(await child.metric('vss_consumer_dead_letters_total'), all.length, 'only the poison');
  // Each dead letter names why; then the causes of two are fixed.
  await target.withAdapters(async (store, queue) => {
    assert.equal(await store.embeddings.count(m.embeddingsTable, m.modelName, 1), GOOD, 'every good event');
    const letters = [
      ...(await deadLetters(
        queue,
        target.consumers.embeddingsTopic,
        all.filter((p) => p.topic === 'embeddings').length,
      )),
      ...(await deadLetters(
        queue,
        target.consumers.realtimeTopic,
        all.filter((p) => p.topic === 'realtime').length,
      )),
    ];
    const byId = new Map(letters.map((l) => [l.headers[DeadLetterHeaders.originMessageId], l]));
    for (const poison of all) {
      const letter = byId.get(poison.id);
      assert.ok(letter, `${poison.id} is dead-lettered`);
      assert.equal(letter.headers[DeadLetterHeaders.originTopic], topicOf(poison));
      assert.match(letter.headers[DeadLetterHeaders.lastError] ?? '', poison.reason, poison.id);
      if (poison.field !== undefined) {
        assert.equal(letter.headers[DeadLetterHeaders.lastErrorField], poison.field, poison.id);
      }
    }
    assert.equal(letters.length, all.length, 'nothing else was dead-lettered');

    await store.models.create({
      entity,
      modelName: 'ghost',
      ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
      embeddingStoreEnabled: true,
      embeddingStoreTtlSeconds: 0,
      mqId: 1,
      modelConfig: { distanceFunction: 'COSINE', vectorDimension: DIMENSION },
      storeId: (await store.stores.findByEntity(entity))!.storeId,
      trainingDataPath: 'file:///tmp/none',
    });
    await store.variants.create({
      entity,
      modelName: 'ghost',
      variant: 'organic',
      vssFilter: {},
      vectorDbType: 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
    });
    await store.versions.create({ entity, modelName: 'ghost', version: 1 });
    await store.variants.transition(
      { entity, modelName: 'ghost', variant: 'organic' },
      'REGISTERED',
      'INGESTING',
      {
        writeVersion: 1,
      },
    );
    await registerIngestModel(store, {
      entity: ghostEntity,
      dimension: DIMENSION,
      variants: { organic: {} },
    });
  });

  const replay = await target.replay();
  assert.equal(replay.code, 0, replay.stderr);
  const embeddingPoison = all.filter((p) => p.topic === 'embeddings').length;
  assert.match(
    replay.stdout,
    new RegExp(`${target.consumers.embeddingsTopic}: replayed ${embeddingPoison} dead letter\\(s\\)`),
  );
  assert.match(
    replay.stdout,
    new RegExp(
      `${target.consumers.realtimeTopic}: replayed ${all.length - embeddingPoison} dead letter\\(s\\)`,
    ),
  );

  child = await target.start();
  const deadBefore = target.live ? all.length : 0;
  const unfixable = all.filter((p) => !p.fixable).length;
  await eventually(
    async () =>
      (await child.metric('vss_ingestion_events_total', { entity, model: 'ghost' })) >= 1 &&
      (await child.metric('vss_consumer_dead_letters_total')) >= deadBefore + unfixable,
    60_000,
    'the replayed events applied or dead-lettered again',
  );
  await target.withAdapters(async (store) => {
    await eventually(
      async () => (await store.aggregator.read(`agg_${ghostEntity}`, ['r1'])).get('r1')?.brand === 'acme',
      30_000,
      'the real-time event of the entity given a store since',
    );
    assert.equal((await store.aggregator.read(m.aggregatorTable, ['good0'])).get('good0')?.brand, 'acme');
    assert.equal(
      await store.embeddings.count(m.embeddingsTable, 'ghost', 1),
      1,
      'the event of the model registered since is applied',
    );
  });
  await target.stop();
}

describe('vss poison events end to end', () => {
  test('lattice vss on embedded defaults, stopped around publishing, fixing and replaying', async () => {
    const target = VssProcessTarget.embedded();
    try {
      await poisonScenario(target);
    } finally {
      await target.close();
    }
  });

  test('lattice vss on JetStream + PostgreSQL, live', {
    skip: natsUrl === undefined || postgresUrl === undefined,
  }, async () => {
    const target = VssProcessTarget.distributed({ nats: natsUrl!, postgres: postgresUrl! });
    try {
      await poisonScenario(target);
    } finally {
      await target.close();
    }
  });
});
