import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tableName, type VariantState, type VectorDbType } from '../../../src/vss/store/index.js';
import {
  type Context,
  columnsOf,
  newModel,
  newVariant,
  registerModel,
  rejectsWith,
  tablesOf,
} from './fixtures.js';

export function variantAndVersionTests(context: Context): void {
  describe('variants', () => {
    test("registering a variant adds its flag column to the entity's embeddings table", async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      const variant = await store.variants.create(newVariant(entity, 'm1', 'organic'));
      assert.equal(variant.state, 'REGISTERED');
      assert.equal(variant.cluster, 'experiment');
      assert.equal(variant.readVersion, null);
      assert.equal(variant.writeVersion, null);
      assert.deepEqual(variant.cache, { memoryTtlSeconds: 60, distributedTtlSeconds: 300, ttlJitter: 0.1 });
      assert.deepEqual(variant.vssFilter, newVariant(entity, 'm1', 'organic').vssFilter);
      assert.deepEqual(await store.variants.get({ entity, modelName: 'm1', variant: 'organic' }), variant);
      assert.ok((await columnsOf(sql, `emb_${n}`)).includes('to_be_indexed_organic'));
    });

    test('the same variant name on a second model of the entity reuses the column, harmlessly', async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      await store.models.create(newModel(entity, n, 'm2'));
      await store.variants.create(newVariant(entity, 'm1', 'ad'));
      const before = await columnsOf(sql, `emb_${n}`);
      await store.variants.create({ ...newVariant(entity, 'm2', 'ad'), cache: { memoryTtlSeconds: 0 } });
      assert.deepEqual(await columnsOf(sql, `emb_${n}`), before);
      await store.entityTables.addVariantColumn(`emb_${n}`, 'ad');
      assert.deepEqual(await columnsOf(sql, `emb_${n}`), before);
      assert.equal(before.filter((c) => c === 'to_be_indexed_ad').length, 1);
      const second = await store.variants.get({ entity, modelName: 'm2', variant: 'ad' });
      assert.equal(second.cache.memoryTtlSeconds, 0);
      assert.deepEqual(
        (await store.variants.list({ entity, modelName: 'm1' })).map((v) => v.variant),
        ['ad'],
      );
    });

    test('duplicates are ALREADY_EXISTS, unknown models NOT_FOUND, bad values INVALID_ARGUMENT', async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const before = await columnsOf(sql, `emb_${n}`);
      await rejectsWith(store.variants.create(newVariant(entity, 'm1', 'organic')), 'ALREADY_EXISTS');
      await rejectsWith(
        store.variants.create(newVariant(entity, 'absent', 'organic')),
        'NOT_FOUND',
        'model_name',
      );
      await rejectsWith(
        store.variants.create({ ...newVariant(entity, 'm1', 'x'), vectorDbType: 'MILVUS' as VectorDbType }),
        'INVALID_ARGUMENT',
        'vectordb_type',
      );
      await rejectsWith(
        store.variants.create({ ...newVariant(entity, 'm1', 'y'), cache: { ttlJitter: 2 } }),
        'INVALID_ARGUMENT',
        'cache_ttl_jitter',
      );
      await rejectsWith(
        store.variants.create(newVariant(entity, 'm1', 'Organic')),
        'INVALID_ARGUMENT',
        'variant',
      );
      await rejectsWith(
        store.variants.create(newVariant(entity, 'm1', 'v'.repeat(50))),
        'INVALID_ARGUMENT',
        'variant',
      );
      await rejectsWith(
        store.variants.get({ entity, modelName: 'm1', variant: 'absent' }),
        'NOT_FOUND',
        'variant',
      );
      assert.deepEqual(await columnsOf(sql, `emb_${n}`), before, 'failed registrations add no column');
      assert.equal((await store.variants.list({ entity, modelName: 'm1' })).length, 1);
    });

    test('a variant name carrying SQL is refused before any SQL runs; the database is unchanged', async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      const tables = await tablesOf(sql);
      const columns = await columnsOf(sql, `emb_${n}`);
      for (const attack of [
        'x boolean; DROP TABLE vss_models; --',
        'x" boolean; DROP TABLE vss_models; --',
        "x'; DELETE FROM vss_variants; --",
        'organic;',
        'ad\u0000',
      ]) {
        await rejectsWith(
          store.variants.create(newVariant(entity, 'm1', attack)),
          'INVALID_ARGUMENT',
          'variant',
        );
        await rejectsWith(
          store.entityTables.addVariantColumn(`emb_${n}`, attack),
          'INVALID_ARGUMENT',
          'variant',
        );
      }
      assert.deepEqual(await tablesOf(sql), tables);
      assert.deepEqual(await columnsOf(sql, `emb_${n}`), columns);
      assert.deepEqual(await store.variants.list({ entity, modelName: 'm1' }), []);
    });

    test('two concurrent advances of the same step: exactly one applies', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1', variant: 'organic' };
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      await store.versions.create({ entity, modelName: 'm1', version: 1 });
      for (let round = 0; round < 5; round++) {
        const from: VariantState = round % 2 === 0 ? 'REGISTERED' : 'INGESTING';
        const to = round % 2 === 0 ? 'INGESTING' : 'REGISTERED';
        const results = await Promise.all([
          store.variants.transition(key, from, to, { writeVersion: 1 }),
          store.variants.transition(key, from, to, { writeVersion: 1 }),
        ]);
        assert.deepEqual(results.filter(Boolean).length, 1, `round ${round}: ${results}`);
        assert.equal((await store.variants.get(key)).state, to);
      }
    });

    test('transitions carry the write version; FAILED remembers its step; the database guards READY', async () => {
      const { sql, store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1', variant: 'organic' };
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      await rejectsWith(
        store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: 3 }),
        'NOT_FOUND',
        'write_version',
      );
      await store.versions.create({ entity, modelName: 'm1', version: 1 });
      assert.equal(
        await store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: 1 }),
        true,
      );
      assert.equal((await store.variants.get(key)).writeVersion, 1);
      // READY needs a read version: only the flip gives one
      await rejectsWith(
        store.variants.transition(key, 'INGESTING', 'READY'),
        'INVALID_ARGUMENT',
        'read_version',
      );
      assert.equal(await store.variants.fail(key, 'INGESTING', 'vector db unreachable'), true);
      assert.equal(await store.variants.fail(key, 'INGESTING', 'again'), false);
      const failed = await store.variants.get(key);
      assert.deepEqual(
        [failed.state, failed.failedState, failed.failureReason],
        ['FAILED', 'INGESTING', 'vector db unreachable'],
      );
      assert.equal(await store.variants.retry(key), 'INGESTING');
      assert.equal((await store.variants.get(key)).failureReason, null);
      assert.equal(await store.variants.promote(key), true);
      assert.equal((await store.variants.get(key)).cluster, 'production');
      await rejectsWith(
        sql.query(`UPDATE vss_variants SET state = 'ONLINE' WHERE entity = $1`, [entity]),
        'FAILED_PRECONDITION',
      );
      await rejectsWith(
        sql.query(`UPDATE vss_variants SET read_version = 2 WHERE entity = $1`, [entity]),
        'FAILED_PRECONDITION',
      );
      await rejectsWith(
        store.variants.transition({ ...key, variant: 'absent' }, 'INGESTING', 'INGESTED'),
        'NOT_FOUND',
        'variant',
      );
    });

    test('a registration rolled back with its transaction leaves neither row nor column', async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      await assert.rejects(
        store.transaction(async (repos) => {
          await repos.variants.create(newVariant(entity, 'm1', 'commerce'));
          assert.ok(
            (await repos.entityTables.columns(tableName(`emb_${n}`, 'embeddings_table'))).has(
              'to_be_indexed_commerce',
            ),
          );
          throw new Error('abandon');
        }),
        /abandon/,
      );
      assert.ok(!(await columnsOf(sql, `emb_${n}`)).includes('to_be_indexed_commerce'));
      assert.equal(await store.variants.find({ entity, modelName: 'm1', variant: 'commerce' }), undefined);
      // the store's own column knowledge was not fooled by the rolled-back column
      await store.variants.create(newVariant(entity, 'm1', 'commerce'));
      const written = await store.embeddings.upsert(`emb_${n}`, {
        modelName: 'm1',
        version: 1,
        rows: [{ id: 'a', embedding: new Float32Array([1, 2, 3, 4]), toBeIndexed: { commerce: true } }],
      });
      assert.equal(written, 1);
    });
  });

  describe('versions', () => {
    test('versions number 1, 2, 3 per model; duplicates and unknown models are refused', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const model = { entity, modelName: 'm1' };
      const first = await store.versions.createNext(model);
      assert.deepEqual(
        [first.version, first.status, first.ingestedCount, first.indexedCount],
        [1, 'INGESTING', 0, null],
      );
      assert.equal((await store.versions.createNext(model)).version, 2);
      assert.equal((await store.versions.create({ ...model, version: 5 })).version, 5);
      assert.equal((await store.versions.createNext(model)).version, 6);
      await rejectsWith(store.versions.create({ ...model, version: 2 }), 'ALREADY_EXISTS');
      await rejectsWith(store.versions.create({ ...model, version: 0 }), 'INVALID_ARGUMENT', 'version');
      await rejectsWith(
        store.versions.create({ entity, modelName: 'absent', version: 1 }),
        'NOT_FOUND',
        'model_name',
      );
      await rejectsWith(
        store.versions.createNext({ entity, modelName: 'absent' }),
        'NOT_FOUND',
        'model_name',
      );
      await rejectsWith(store.versions.get({ ...model, version: 3 }), 'NOT_FOUND', 'version');
      assert.deepEqual(
        (await store.versions.list(model)).map((v) => v.version),
        [6, 5, 2, 1],
      );
      assert.equal((await store.versions.latest(model))?.version, 6);
    });

    test('status changes are compare-and-set and stamp their times; counts accumulate', async () => {
      const { sql, store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1', version: 1 };
      await store.versions.create(key);
      await Promise.all([
        store.versions.addCounts(key, { ingested: 100 }),
        store.versions.addCounts(key, { ingested: 50, failed: 2 }),
        store.versions.addCounts(key, { failed: 1 }),
      ]);
      const results = await Promise.all([
        store.versions.transition(key, 'INGESTING', 'INGESTED'),
        store.versions.transition(key, 'INGESTING', 'INGESTED'),
      ]);
      assert.deepEqual(results.sort(), [false, true]);
      await store.versions.setIndexedCount(key, 149);
      const ingested = await store.versions.get(key);
      assert.deepEqual(
        [ingested.status, ingested.ingestedCount, ingested.failedCount, ingested.indexedCount],
        ['INGESTED', 150, 3, 149],
      );
      assert.ok(ingested.ingestedAt instanceof Date);
      assert.equal(ingested.indexedAt, null);
      assert.equal(await store.versions.fail(key, 'INGESTED', 'index build failed'), true);
      assert.equal((await store.versions.get(key)).failureReason, 'index build failed');
      assert.equal(await store.versions.transition(key, 'FAILED', 'DROPPED'), true);
      const dropped = await store.versions.get(key);
      assert.deepEqual([dropped.status, dropped.failureReason], ['DROPPED', null]);
      assert.ok(dropped.retiredAt instanceof Date);
      await rejectsWith(
        store.versions.addCounts({ ...key, version: 9 }, { ingested: 1 }),
        'NOT_FOUND',
        'version',
      );
      await rejectsWith(store.versions.addCounts(key, { ingested: -1 }), 'INVALID_ARGUMENT', 'ingested');
      await rejectsWith(
        sql.query(`UPDATE vss_versions SET status = 'LIVE' WHERE entity = $1`, [entity]),
        'FAILED_PRECONDITION',
      );
      await rejectsWith(
        sql.query(`UPDATE vss_versions SET status = 'SERVING', indexed_at = NULL WHERE entity = $1`, [
          entity,
        ]),
        'FAILED_PRECONDITION',
      );
    });
  });
}
