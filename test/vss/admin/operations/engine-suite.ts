/**
 * The operations engine's behaviour on one set of adapters (PGlite + memory queue, or PostgreSQL +
 * JetStream), with the embedded vector DB, the real consumers and the built-in job runner: the
 * full reset flow twice (the second flips and drops the first), retry after a failed job, a reset
 * while one runs, TRIGGER_MODEL_MACHINE, DELTA_MODEL, FILL_VARIANT and the scheduler.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isLatticeError } from '../../../../src/platform/errors.js';
import type { Queue } from '../../../../src/platform/queue/index.js';
import type { SqlClient } from '../../../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../../../src/platform/vectordb/index.js';
import { ADMIN_METRIC_NAMES } from '../../../../src/vss/admin/operations/index.js';
import { collectionName } from '../../../../src/vss/model/index.js';
import type { VssStore } from '../../../../src/vss/store/index.js';
import {
  type AdminWorld,
  type Catalog,
  openAdminWorld,
  registerCatalog,
  registerVariant,
  waitForOperation,
  writeTrainingData,
} from '../../../support/admin-engine-world.js';
import { uniqueName } from '../../../support/servers.js';

export interface EngineSuiteOptions {
  name: string;
  openSql: () => Promise<SqlClient>;
  openQueue: () => Promise<Queue>;
  /** Rows of the main flow's training data. */
  rows?: number;
  /** Deletes the suite's topics at the end (a shared server). */
  cleanup?: (queue: Queue, prefix: string) => Promise<void>;
}

export function engineSuite(o: EngineSuiteOptions): void {
  describe(`vss admin operations engine (${o.name})`, () => {
    const rows = o.rows ?? 2000;
    const prefix = uniqueName('adm').replace(/[^A-Za-z0-9_-]/g, '_');
    let sql: SqlClient;
    let queue: Queue;
    let vectorDb: EmbeddedVectorDb;
    let world: AdminWorld;
    let store: VssStore;
    let dir: string;
    const now = { value: Date.now() };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lattice-admin-ops-'));
      sql = await o.openSql();
      queue = await o.openQueue();
      vectorDb = await EmbeddedVectorDb.open();
      world = await openAdminWorld({ sql, queue, vectorDb, name: prefix, now: () => now.value });
      store = world.store;
    });
    after(async () => {
      await world?.close();
      await o.cleanup?.(queue, prefix);
      await queue?.close();
      await vectorDb?.close();
      await sql?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const points = async (catalog: Catalog, version: number) =>
      (await vectorDb.collectionInfo(collectionName(catalog.entity, catalog.modelName, version))).points;
    const hasCollection = async (catalog: Catalog, version: number) =>
      (await vectorDb.listCollections()).includes(collectionName(catalog.entity, catalog.modelName, version));

    it('resets a model: both variants READY on the new version; a second reset flips and drops the first', async () => {
      const data = join(dir, 'main');
      writeTrainingData(data, rows);
      const catalog = await registerCatalog(store, data);
      const first = await world.engine.lifecycle.resetModel(catalog, { idempotencyKey: `${prefix}-r1` });
      assert.equal(first.created, true);
      assert.equal(first.version, 1);
      assert.deepEqual(first.variantVersionMap, { all: 1, live: 1 });
      assert.equal(first.trainingDataPath, data);
      // The same key answers the same reset.
      const again = await world.engine.lifecycle.resetModel(catalog, { idempotencyKey: `${prefix}-r1` });
      assert.equal(again.created, false);
      assert.equal(again.operation.operationId, first.operation.operationId);
      assert.equal(again.version, 1);

      const done = await waitForOperation(store, first.operation.operationId);
      assert.equal(done.progress, 1);
      assert.equal(done.attempts, 1);
      const indexed = Math.round(rows * 0.8); // every fifth row is not indexed, but still a point
      for (const name of ['all', 'live']) {
        const variant = await store.variants.get({ ...catalog, variant: name });
        assert.equal(variant.state, 'READY', name);
        assert.equal(variant.readVersion, 1);
        assert.equal(variant.writeVersion, 1);
      }
      const v1 = await store.versions.get({ ...catalog, version: 1 });
      assert.equal(v1.status, 'SERVING');
      assert.equal(v1.ingestedCount, rows);
      assert.equal(await points(catalog, 1), rows);
      assert.equal(await store.embeddings.count(catalog.embeddingsTable, 'm', 1), rows);
      assert.equal((await store.models.get(catalog)).state, 'READY');
      const job = done.result?.job as Record<string, unknown>;
      assert.equal(job.rows_published, rows);
      assert.deepEqual(done.result?.ingestion, {
        events: rows,
        applied: rows,
        rejected: 0,
        points_written: rows,
      });
      // membership: `live` holds the indexed rows with is_live "true"
      const [hits] = await vectorDb.search({
        collection: collectionName(catalog.entity, 'm', 1),
        queries: [{ vector: new Array(16).fill(0.1) }],
        filters: [{ field: 'to_be_indexed_live', op: 'IN', values: ['true'] }],
        limit: 10_000,
      });
      assert.equal(hits!.length, rows / 2 - Math.ceil(rows / 10));
      assert.ok(indexed > 0);

      writeTrainingData(data, rows, { seed: 1 });
      const second = await world.engine.lifecycle.resetModel(catalog);
      assert.equal(second.version, 2);
      await waitForOperation(store, second.operation.operationId);
      for (const name of ['all', 'live']) {
        const variant = await store.variants.get({ ...catalog, variant: name });
        assert.equal(variant.state, 'READY');
        assert.equal(variant.readVersion, 2);
      }
      assert.equal((await store.versions.get({ ...catalog, version: 1 })).status, 'DROPPED');
      assert.equal((await store.versions.get({ ...catalog, version: 2 })).status, 'SERVING');
      assert.equal(await hasCollection(catalog, 1), false);
      assert.equal(await points(catalog, 2), rows);
      assert.equal(await store.embeddings.count(catalog.embeddingsTable, 'm', 1), 0);
      assert.equal(await store.embeddings.count(catalog.embeddingsTable, 'm', 2), rows);
      const ended = await store.operations.get(second.operation.operationId);
      assert.deepEqual(ended.result?.dropped_versions, [1]);
      assert.deepEqual(ended.result?.previous_read_versions, { all: 1, live: 1 });

      const scrape = await world.metrics.registry.getSingleMetricAsString(ADMIN_METRIC_NAMES.succeeded);
      assert.match(scrape, /kind="RESET_MODEL"} [2-9]/);
      const ratio = await world.metrics.registry.getSingleMetricAsString(ADMIN_METRIC_NAMES.indexedRatio);
      const live = new RegExp(`entity="${catalog.entity}",model="m",variant="live"} ([0-9.]+)`).exec(ratio);
      assert.ok(Number(live?.[1]) >= 0.95, ratio);
    });

    it('a reset while one runs is FAILED_PRECONDITION; a failed job fails the reset, and retry resumes it', async () => {
      const data = join(dir, 'late');
      const catalog = await registerCatalog(store, data);
      const first = await world.engine.lifecycle.resetModel(catalog);
      await assert.rejects(
        () => world.engine.lifecycle.resetModel(catalog),
        (err: unknown) => isLatticeError(err, 'FAILED_PRECONDITION'),
      );
      // Nothing was allocated by the refused reset.
      assert.equal((await store.versions.list(catalog)).length, 1);
      const failed = await waitForOperation(store, first.operation.operationId, ['FAILED']);
      assert.equal(failed.step, 'start_job');
      assert.match(failed.lastError ?? '', /ingestion job/);
      const variant = await store.variants.get({ ...catalog, variant: 'live' });
      assert.equal(variant.state, 'FAILED');
      assert.equal(variant.failedState, 'INGESTING');
      await assert.rejects(
        () => world.engine.lifecycle.retryOperation(first.operation.operationId.replace(/.$/, 'x')),
        (err: unknown) => isLatticeError(err, 'NOT_FOUND'),
      );

      writeTrainingData(data, 300);
      const retried = await world.engine.lifecycle.retryOperation(first.operation.operationId);
      assert.equal(retried.operation.status, 'RUNNING');
      assert.equal((await store.variants.get({ ...catalog, variant: 'live' })).state, 'INGESTING');
      const done = await waitForOperation(store, first.operation.operationId);
      assert.equal(done.attempts, 2);
      assert.equal((await store.variants.get({ ...catalog, variant: 'live' })).state, 'READY');
      assert.equal(await points(catalog, 1), 300);
      await assert.rejects(
        () => world.engine.lifecycle.retryOperation(first.operation.operationId),
        (err: unknown) => isLatticeError(err, 'FAILED_PRECONDITION'),
      );
    });

    it('DELTA_MODEL loads into the current version without a flip; FILL_VARIANT adds a variant without re-ingesting', async () => {
      const data = join(dir, 'delta');
      writeTrainingData(data, 400);
      const catalog = await registerCatalog(store, data, ['all']);
      await waitForOperation(store, (await world.engine.lifecycle.resetModel(catalog)).operation.operationId);
      assert.equal((await store.versions.get({ ...catalog, version: 1 })).ingestedCount, 400);

      writeTrainingData(data, 500, { seed: 2 });
      const delta = await world.engine.lifecycle.deltaModel(catalog);
      const done = await waitForOperation(store, delta.operation.operationId);
      assert.equal(done.result?.version, 1);
      assert.equal(await points(catalog, 1), 500);
      // c0..c399 replaced, c400..c499 added: the version holds 500.
      assert.equal((await store.versions.get({ ...catalog, version: 1 })).ingestedCount, 500);
      assert.equal((await store.variants.get({ ...catalog, variant: 'all' })).readVersion, 1);
      assert.equal((await store.versions.list(catalog)).length, 1);

      // A variant registered now joins version 1 from the embedding store.
      await registerVariant(store, catalog, 'brand_a');
      const fill = await world.engine.lifecycle.variantRegistered({ ...catalog, variant: 'brand_a' });
      assert.ok(fill !== undefined);
      assert.equal(fill.operation.kind, 'FILL_VARIANT');
      await waitForOperation(store, fill.operation.operationId);
      const variant = await store.variants.get({ ...catalog, variant: 'brand_a' });
      assert.equal(variant.state, 'READY');
      assert.equal(variant.readVersion, 1);
      const [hits] = await vectorDb.search({
        collection: collectionName(catalog.entity, 'm', 1),
        queries: [{ vector: new Array(16).fill(0.1) }],
        filters: [{ field: 'to_be_indexed_brand_a', op: 'IN', values: ['true'] }],
        limit: 10_000,
        withPayload: ['brand'],
      });
      // ids c0..c499, brand a when n % 3 == 0, indexed unless n % 5 == 0
      let expected = 0;
      for (let n = 0; n < 500; n++) if (n % 3 === 0 && n % 5 !== 0) expected++;
      assert.equal(hits!.length, expected);
      assert.ok(hits!.every((h) => h.payload?.brand === 'a'));
      const flags = await store.embeddings.indexFlags(catalog.embeddingsTable, {
        modelName: 'm',
        version: 1,
        ids: ['c0', 'c1'],
        variants: ['brand_a'],
      });
      assert.deepEqual(Object.fromEntries(flags), { c0: { brand_a: false }, c1: { brand_a: true } });
      assert.equal(
        await world.engine.lifecycle.variantRegistered({ ...catalog, variant: 'all' }).catch((e) => e.code),
        'FAILED_PRECONDITION',
      );
      // A model without data: nothing to fill.
      const empty = await registerCatalog(store, join(dir, 'none'), ['all']);
      assert.equal(await world.engine.lifecycle.variantRegistered({ ...empty, variant: 'all' }), undefined);
    });

    it('TRIGGER_MODEL_MACHINE indexes and flips an ingested variant; refused before ingestion', async () => {
      const data = join(dir, 'trigger');
      writeTrainingData(data, 200);
      const catalog = await registerCatalog(store, data, ['all']);
      const key = { ...catalog, variant: 'all' };
      await assert.rejects(
        () => world.engine.lifecycle.triggerModelMachine(key),
        (err: unknown) => isLatticeError(err, 'FAILED_PRECONDITION'),
      );
      await waitForOperation(store, (await world.engine.lifecycle.resetModel(catalog)).operation.operationId);
      // Version 2 ingested by hand (as a pipeline outside the reset would leave it).
      await store.versions.create({ ...catalog, version: 2 });
      await store.variants.transition(key, 'READY', 'INGESTING', { writeVersion: 2 });
      await vectorDb.createCollection({
        name: collectionName(catalog.entity, 'm', 2),
        dimension: 16,
        distance: 'COSINE',
      });
      await vectorDb.upsert(collectionName(catalog.entity, 'm', 2), [
        { id: 'x', vector: new Array(16).fill(0.5) },
      ]);
      await store.versions.transition({ ...catalog, version: 2 }, 'INGESTING', 'INGESTED');
      await store.variants.transition(key, 'INGESTING', 'INGESTED');
      const trigger = await world.engine.lifecycle.triggerModelMachine(key);
      const done = await waitForOperation(store, trigger.operation.operationId);
      assert.deepEqual(done.result?.dropped_versions, [1]);
      const variant = await store.variants.get(key);
      assert.equal(variant.state, 'READY');
      assert.equal(variant.readVersion, 2);
      assert.equal(await hasCollection(catalog, 1), false);
    });

    it('the scheduler resets a due model once, with two engines ticking together (advisory lock)', async () => {
      const data = join(dir, 'sched');
      writeTrainingData(data, 100);
      const catalog = await registerCatalog(store, data, ['all'], 'FREQ_1H');
      // Never reset: not due.
      assert.deepEqual(await world.engine.scheduleNow(), []);
      await waitForOperation(store, (await world.engine.lifecycle.resetModel(catalog)).operation.operationId);
      assert.deepEqual(await world.engine.scheduleNow(), []);
      const second = await openAdminWorld({
        sql,
        queue,
        vectorDb,
        name: prefix,
        withoutConsumers: true,
        now: () => now.value,
      });
      try {
        now.value += 2 * 3_600_000;
        const fired = (await Promise.all([world.engine.scheduleNow(), second.engine.scheduleNow()])).flat();
        const mine = [];
        for (const id of fired) if ((await store.operations.get(id)).entity === catalog.entity) mine.push(id);
        assert.equal(mine.length, 1);
        const op = await waitForOperation(store, mine[0]!);
        assert.equal(op.payload.scheduled, true);
        assert.equal(op.result?.version, 2);
        // Reset just now (by the database's clock): not due again for an hour.
        now.value = Date.now();
        assert.deepEqual(
          (await Promise.all([world.engine.scheduleNow(), second.engine.scheduleNow()])).flat(),
          [],
        );
      } finally {
        await second.close();
      }
    });
  });
}
