/**
 * GET /models/{entity}/{model} shows, for each READY variant, the index of the collection it serves:
 * points, indexed points and `degraded` once fewer than 95 % are indexed (the variant's state says
 * it, beside the serving metric, readiness and alert). Real admin engine, PGlite, embedded vector DB.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../../src/platform/logging/index.js';
import { Metrics } from '../../../../src/platform/metrics/index.js';
import { createQueue } from '../../../../src/platform/queue/index.js';
import { createSqlClient } from '../../../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../../../src/platform/vectordb/index.js';
import { buildAdminApi } from '../../../../src/vss/admin/api/index.js';
import { FileJobRunner } from '../../../../src/vss/admin/jobs/index.js';
import { startAdminEngine } from '../../../../src/vss/admin/operations/index.js';
import { collectionName } from '../../../../src/vss/model/index.js';
import { openVssStore } from '../../../../src/vss/store/index.js';
import { clusteredFixture } from '../../../support/vector-fixtures.js';
import * as world from '../../serving/harness.js';

const { ENTITY, MODEL } = world;

test('GET /models shows a READY variant degraded while its served collection is indexed below 95 %', async (t) => {
  const logger = createLogger('served-index-test', { level: 'silent' });
  const sql = await createSqlClient({ kind: 'pglite' });
  t.after(() => sql.close());
  const store = await openVssStore(sql);
  await world.registerCatalog(store, 'COSINE', 8);
  const fixture = clusteredFixture({ count: 200, dimension: 8, clusters: 4, seed: 3 });
  const db = await EmbeddedVectorDb.open();
  t.after(() => db.close());
  await world.writeVersion(store, db, fixture, 1, 'COSINE');
  await world.readyVariant(store, 'organic', 1);
  const queue = await createQueue({ kind: 'memory' });
  t.after(() => queue.close());
  const jobRunner = new FileJobRunner({ queue, batchRows: 100, checkpointEveryMs: 100 });
  t.after(() => jobRunner.close());
  const metrics = new Metrics();
  const engine = await startAdminEngine({
    store,
    queue,
    vectorDb: db,
    vectorDbType: 'EMBEDDED',
    jobRunner,
    embeddingsTopic: 'served-index-embeddings',
    partitions: 1,
    operationsTopic: 'served-index-ops',
    group: 'served-index-admin',
    pollIntervalMs: 60_000,
    scheduleIntervalMs: 0,
    metrics,
    logger,
  });
  t.after(() => engine.stop());
  const app = await buildAdminApi({
    store,
    lifecycle: engine.lifecycle,
    servedIndex: engine.servedIndex,
    sql,
    metrics,
    logger,
  });
  t.after(() => app.close());

  const variants = async () => {
    const answer = await app.inject({ method: 'GET', url: `/models/${ENTITY}/${MODEL}` });
    assert.equal(answer.statusCode, 200, answer.body);
    const body = answer.json() as { variants: { variant: string; state: string; served_index?: unknown }[] };
    return Object.fromEntries(body.variants.map((v) => [v.variant, v]));
  };

  let listed = await variants();
  assert.equal(listed.organic?.state, 'READY');
  assert.deepEqual(listed.organic?.served_index, { points: 200, indexed_points: 200, degraded: false });
  assert.equal(listed.ad?.served_index, undefined, 'a variant not READY has no served index');

  const collection = collectionName(ENTITY, MODEL, 1);
  db.pauseIndexing(collection);
  await db.upsert(
    collection,
    Array.from({ length: 50 }, (_, i) => ({
      id: `late-${i}`,
      vector: fixture.vector(i),
      payload: world.payloadOf(i),
    })),
  );
  listed = await variants();
  assert.deepEqual(listed.organic?.served_index, { points: 250, indexed_points: 200, degraded: true });
  const all = (await app.inject({ method: 'GET', url: '/models' })).json() as {
    models: { variants: { variant: string; served_index?: { degraded: boolean } }[] }[];
  };
  assert.equal(all.models[0]?.variants.find((v) => v.variant === 'organic')?.served_index?.degraded, true);

  db.resumeIndexing(collection);
  await db.waitForIndexing(collection);
  listed = await variants();
  assert.deepEqual(listed.organic?.served_index, { points: 250, indexed_points: 250, degraded: false });
});
