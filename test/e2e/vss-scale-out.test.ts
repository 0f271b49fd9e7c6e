/**
 * vss in distributed mode, each component a process of its own and scaled out: two `lattice vss
 * consumers` splitting the partitions (`--partitions 0-3` and `4-7`) and one `lattice vss serving`,
 * on JetStream + PostgreSQL and a vector database server (Qdrant's REST API, served by the in-process
 * stand-in of test/support/qdrant-stand-in.ts, as no Qdrant runs here). A job's events and EOF
 * markers, consumed half by each process, complete the job once with exact counts, every point is
 * in the shared collection, and serving answers from it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FilterOp } from '../../src/gen/vss/v1/vss.js';
import { createQueue, type Queue } from '../../src/platform/queue/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { createVectorDb } from '../../src/platform/vectordb/index.js';
import { ensureVssTopics } from '../../src/vss/consumers/index.js';
import { collectionName } from '../../src/vss/model/index.js';
import { openVssStore } from '../../src/vss/store/index.js';
import { type LatticeVssProcess, startLatticeVss } from '../support/lattice-vss-process.js';
import { type QdrantStandIn, startQdrantStandIn } from '../support/qdrant-stand-in.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';
import {
  embeddingEventJson,
  eofMarkerJson,
  registerIngestModel,
  seededVector,
  serveVersion,
} from '../support/vss-ingest-catalog.js';
import { deleteTopics, distributedSettings } from '../support/vss-stack.js';
import { Client } from '../vss/serving/harness.js';

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];
const EVENTS = 2000;
const DIMENSION = 16;
const JOB = 'scale-out-job';

test('vss consumers split the partitions between processes and serving answers from the shared vector DB', {
  skip: natsUrl === undefined || postgresUrl === undefined,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-vss-scale-'));
  const {
    settingsFile,
    settings,
    env: base,
  } = distributedSettings(dir, {
    nats: natsUrl!,
    postgres: postgresUrl!,
  });
  const consumers = settings.vss.consumers;
  const children: LatticeVssProcess[] = [];
  let qdrant: QdrantStandIn | undefined;
  let queue: Queue | undefined;
  let sql: SqlClient | undefined;
  let client: Client | undefined;
  try {
    qdrant = await startQdrantStandIn();
    const env = { ...base, LATTICE_VSS_VECTOR_DB: 'qdrant', LATTICE_QDRANT_URL: qdrant.url };
    sql = await createSqlClient({ kind: 'postgres', url: postgresUrl! });
    const store = await openVssStore(sql);
    const model = await registerIngestModel(store, {
      entity: uniqueName('scale').replace(/[^a-z0-9_]/g, '_'),
      dimension: DIMENSION,
      // Euclidean: the stand-in keeps vectors as sent (it normalises cosine ones), and a vector's nearest is itself.
      distance: 'EUCLIDEAN',
      variants: { organic: {} },
      vectorDbType: 'QDRANT',
    });
    queue = await createQueue({ kind: 'jetstream', servers: [natsUrl!] });
    await ensureVssTopics(queue, consumers);

    for (const partitions of ['0-3', '4-7']) {
      children.push(
        await startLatticeVss({
          command: 'vss consumers',
          args: ['--partitions', partitions],
          env,
          settingsFile,
        }),
      );
    }
    const serving = await startLatticeVss({ command: 'vss serving', env, settingsFile });
    children.push(serving);

    const encoder = new TextEncoder();
    for (let start = 0; start < EVENTS; start += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, k) => {
          const i = start + k;
          const payload = embeddingEventJson(model, {
            id: `s${i}`,
            vector: seededVector(i, DIMENSION),
            jobId: JOB,
            // Numeric text, as a CSV-born payload sends it: a number in the point.
            payload: { rank: String(i % 100) },
          });
          return queue!.publish(consumers.embeddingsTopic, encoder.encode(payload), { key: `s${i}` });
        }),
      );
    }
    for (let partition = 0; partition < consumers.partitions; partition++) {
      await queue.publish(consumers.embeddingsTopic, encoder.encode(eofMarkerJson(model, JOB, partition)), {
        partition,
      });
    }

    const key = { entity: model.entity, modelName: model.modelName, version: 1, jobId: JOB };
    await eventually(
      async () => (await store.ingestion.find(key))?.status === 'COMPLETE',
      120_000,
      'the job to complete',
    );
    const record = await store.ingestion.find(key);
    assert.deepEqual(record?.counts, { events: EVENTS, applied: EVENTS, rejected: 0, pointsWritten: EVENTS });
    const applied = await Promise.all(
      children
        .slice(0, 2)
        .map((c) =>
          c.metric('vss_consumer_events_total', { topic: consumers.embeddingsTopic, outcome: 'applied' }),
        ),
    );
    assert.ok(
      applied.every((n) => n > 0),
      `both consumer processes applied events: ${applied}`,
    );
    assert.equal(applied[0]! + applied[1]!, EVENTS + consumers.partitions, 'each event and marker once');

    const db = await createVectorDb({ kind: 'qdrant', url: qdrant.url });
    try {
      const name = collectionName(model.entity, model.modelName, 1);
      assert.equal((await db.collectionInfo(name)).points, EVENTS);
      const [point] = await db.getPoints(name, ['s1234'], { withVector: true });
      assert.deepEqual([...point!.vector!], seededVector(1234, DIMENSION));
    } finally {
      await db.close();
    }

    await serveVersion(store, model, ['organic'], 1);
    client = new Client(serving.servingAddress!);
    await eventually(
      async () => {
        const response = await client!
          .search({
            entity: model.entity,
            modelName: model.modelName,
            variant: 'organic',
            queries: [{ embedding: { values: seededVector(77, DIMENSION) }, filters: [], pageToken: '' }],
            pageSize: 1,
          })
          .catch(() => undefined);
        return response?.results[0]?.candidates[0]?.id === 's77';
      },
      30_000,
      'serving to answer from the collection the consumers wrote',
    );
    // Filters on a payload field, through the Qdrant adapter: a range on numeric text, exact page size.
    const filtered = await client.search({
      entity: model.entity,
      modelName: model.modelName,
      variant: 'organic',
      queries: [{ embedding: { values: seededVector(77, DIMENSION) }, filters: [], pageToken: '' }],
      filters: [{ field: 'rank', op: FilterOp.FILTER_OP_LT, values: ['5'] }],
      attributes: ['rank'],
      pageSize: 10,
    });
    const candidates = filtered.results[0]!.candidates;
    assert.equal(candidates.length, 10, filtered.results[0]!.error);
    for (const c of candidates) assert.ok(Number(c.attributes.rank) < 5, JSON.stringify(c.attributes));
    await assert.rejects(
      client.search({
        entity: model.entity,
        modelName: model.modelName,
        variant: 'organic',
        queries: [{ embedding: { values: seededVector(77, DIMENSION) }, filters: [], pageToken: '' }],
        filters: [{ field: 'rnak', op: FilterOp.FILTER_OP_EXISTS, values: [] }],
      }),
      /INVALID_ARGUMENT: filters\[0\]\.field: unknown filter field "rnak"/,
    );
    for (const child of children.splice(0)) assert.equal(await child.stop(), 0, child.output());
  } finally {
    client?.close();
    for (const child of children) await child.kill();
    if (queue) await deleteTopics(queue, consumers);
    await queue?.close();
    await sql?.close();
    await qdrant?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
