/**
 * What vss serving answers after a restart of its process equals what it answered before: the
 * embedded vector DB (on disk) had a snapshot forced in the middle of the served version's graph
 * build, the build then finished and the variant was READY; serving and the vector DB restart (the
 * SQL store stays) and the first searches give the same candidates, page for page.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../../src/platform/logging/index.js';
import { createSqlClient } from '../../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/index.js';
import { collectionName } from '../../../src/vss/model/index.js';
import { startVssServing, type VssServing } from '../../../src/vss/serving/index.js';
import { openVssStore } from '../../../src/vss/store/index.js';
import { clusteredFixture } from '../../support/vector-fixtures.js';
import { Client, ENTITY, MODEL, payloadOf, readyVariant, registerCatalog } from './harness.js';

const DIMENSION = 8;
const COUNT = 6_000;
const QUERIES = 30;

test('vss serving answers after a restart exactly as before it (snapshot forced mid-build)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-serving-restart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const sql = await createSqlClient({ kind: 'pglite' });
  t.after(() => sql.close());
  const store = await openVssStore(sql);
  await registerCatalog(store, 'EUCLIDEAN', DIMENSION);
  const fixture = clusteredFixture({ count: COUNT, dimension: DIMENSION, clusters: 8, seed: 11 });
  const name = collectionName(ENTITY, MODEL, 1);
  const openDb = () => EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 3_600_000, workerBuildRows: 0 });
  const points = (from: number, to: number) =>
    fixture.ids.slice(from, to).map((id, i) => ({
      id,
      vector: fixture.vector(from + i),
      payload: payloadOf(from + i),
    }));

  const db = await openDb();
  await store.versions.create({ entity: ENTITY, modelName: MODEL, version: 1 });
  await db.createCollection({ name, dimension: DIMENSION, distance: 'EUCLIDEAN' });
  await db.upsert(name, points(0, COUNT / 2));
  await db.waitForIndexing(name);
  db.pauseIndexing(name);
  await db.upsert(name, points(COUNT / 2, COUNT));
  await db.snapshot(name); // half the graph on disk
  db.resumeIndexing(name);
  await db.waitForIndexing(name);
  await store.versions.transition({ entity: ENTITY, modelName: MODEL, version: 1 }, 'INGESTING', 'INGESTED');
  await readyVariant(store, 'organic', 1);

  const serve = (vectorDb: EmbeddedVectorDb) =>
    startVssServing({
      sql,
      vectorDb,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('vss-serving-restart', { level: 'silent' }),
      refreshIntervalMs: 0,
      pageTokenSecret: 'restart-secret',
      indexHealthIntervalMs: 0,
    });
  const answers = async (server: VssServing) => {
    const client = new Client(`127.0.0.1:${server.port}`);
    try {
      const response = await client.search({
        queries: Array.from({ length: QUERIES }, (_, i) => ({
          embedding: { values: [...fixture.vector((i * 197) % COUNT)].map((v) => v + 0.01) },
          pageToken: '',
          filters: [],
        })),
        pageSize: 10,
      });
      return response.results.map((r) => r.candidates.map((c) => c.id));
    } finally {
      client.close();
    }
  };

  const before = await serve(db);
  const served = await answers(before);
  assert.ok(served.every((ids) => ids.length === 10));
  await before.stop();
  await db.close();

  const reopened = await openDb();
  t.after(() => reopened.close());
  reopened.pauseIndexing(name); // the first searches, before any rebuild could catch up
  const after = await serve(reopened);
  t.after(() => after.stop());
  assert.deepEqual(await answers(after), served);
  await after.indexHealth.check(); // not degraded: the whole graph came back
});
