import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ModelState } from '../../../src/vss/store/index.js';
import {
  type Context,
  columnsOf,
  newModel,
  registerModel,
  rejectsWith,
  tablesOf,
  unique,
} from './fixtures.js';

export function storeAndModelTests(context: Context): void {
  describe('stores', () => {
    test('registering a store records it and creates its embeddings and aggregator tables', async () => {
      const { sql, store } = context();
      const n = unique();
      const created = await store.stores.create({
        storeId: n,
        entity: `catalog${n}`,
        dbConfId: 'main',
        embeddingsTable: `emb_${n}`,
        aggregatorTable: `agg_${n}`,
      });
      assert.equal(created.storeId, n);
      assert.ok(created.createdAt instanceof Date);
      assert.deepEqual(await store.stores.get(n), created);
      assert.deepEqual(await store.stores.getByEntity(`catalog${n}`), created);
      assert.ok((await store.stores.list()).some((s) => s.storeId === n));
      assert.deepEqual(await columnsOf(sql, `emb_${n}`), [
        'embedding',
        'expires_at',
        'id',
        'model_name',
        'search_embedding',
        'version',
      ]);
      assert.deepEqual(await columnsOf(sql, `agg_${n}`), ['id']);
    });

    test('taken ids, entities and table names are ALREADY_EXISTS naming the field; nothing is written', async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      const m = unique();
      const fresh = {
        storeId: m,
        entity: `other${m}`,
        dbConfId: 'main',
        embeddingsTable: `emb_${m}`,
        aggregatorTable: `agg_${m}`,
      };
      await rejectsWith(store.stores.create({ ...fresh, storeId: n }), 'ALREADY_EXISTS', 'store_id');
      await rejectsWith(store.stores.create({ ...fresh, entity }), 'ALREADY_EXISTS', 'entity');
      await rejectsWith(
        store.stores.create({ ...fresh, embeddingsTable: `emb_${n}` }),
        'ALREADY_EXISTS',
        'embeddings_table',
      );
      // a table already used as the other kind is taken too
      await rejectsWith(
        store.stores.create({ ...fresh, embeddingsTable: `agg_${n}` }),
        'ALREADY_EXISTS',
        'embeddings_table',
      );
      await rejectsWith(
        store.stores.create({ ...fresh, aggregatorTable: `emb_${n}` }),
        'ALREADY_EXISTS',
        'aggregator_table',
      );
      assert.equal(await store.stores.find(m), undefined);
      assert.ok(!(await tablesOf(sql)).includes(`emb_${m}`));
    });

    test('invalid fields are INVALID_ARGUMENT naming the field; a missing store is NOT_FOUND', async () => {
      const { store } = context();
      const m = unique();
      const fresh = {
        storeId: m,
        entity: `other${m}`,
        dbConfId: 'main',
        embeddingsTable: `emb_${m}`,
        aggregatorTable: `agg_${m}`,
      };
      await rejectsWith(store.stores.create({ ...fresh, storeId: 0 }), 'INVALID_ARGUMENT', 'store_id');
      await rejectsWith(store.stores.create({ ...fresh, entity: 'a/b' }), 'INVALID_ARGUMENT', 'entity');
      await rejectsWith(store.stores.create({ ...fresh, dbConfId: '' }), 'INVALID_ARGUMENT', 'db_conf_id');
      await rejectsWith(
        store.stores.create({ ...fresh, embeddingsTable: 'vss_models' }),
        'INVALID_ARGUMENT',
        'embeddings_table',
      );
      await rejectsWith(
        store.stores.create({ ...fresh, aggregatorTable: 'Agg' }),
        'INVALID_ARGUMENT',
        'aggregator_table',
      );
      await rejectsWith(
        store.stores.create({ ...fresh, aggregatorTable: fresh.embeddingsTable }),
        'INVALID_ARGUMENT',
        'aggregator_table',
      );
      await rejectsWith(store.stores.get(m), 'NOT_FOUND', 'store_id');
      await rejectsWith(store.stores.getByEntity(`nobody${m}`), 'NOT_FOUND', 'entity');
    });

    test('an existing table of another shape is not adopted as an embeddings table', async () => {
      const { sql, store } = context();
      const m = unique();
      await sql.query(`CREATE TABLE foreign_${m} (x int)`);
      await rejectsWith(
        store.stores.create({
          storeId: m,
          entity: `other${m}`,
          dbConfId: 'main',
          embeddingsTable: `foreign_${m}`,
          aggregatorTable: `agg_${m}`,
        }),
        'FAILED_PRECONDITION',
        'embeddings_table',
      );
      assert.equal(await store.stores.find(m), undefined, 'the store row rolled back with it');
    });
  });

  describe('models', () => {
    test('a registered model reads back as written, REGISTERED in experiment', async () => {
      const { store } = context();
      const { n, entity, model } = await registerModel(store);
      const expected = newModel(entity, n);
      assert.deepEqual(
        { ...model, createdAt: undefined, updatedAt: undefined },
        {
          ...expected,
          state: 'REGISTERED',
          failedState: null,
          failureReason: null,
          cluster: 'experiment',
          createdAt: undefined,
          updatedAt: undefined,
        },
      );
      assert.deepEqual(await store.models.get({ entity, modelName: 'm1' }), model);
      const withSearch = await store.models.create({
        ...newModel(entity, n, 'm2'),
        ingestionColumnMapping: { ...expected.ingestionColumnMapping, searchEmbeddingColumn: 'search' },
        modelConfig: { distanceFunction: 'EUCLIDEAN', vectorDimension: 65536 },
      });
      assert.equal(withSearch.ingestionColumnMapping.searchEmbeddingColumn, 'search');
      assert.deepEqual(withSearch.modelConfig, { distanceFunction: 'EUCLIDEAN', vectorDimension: 65536 });
      assert.deepEqual(
        (await store.models.list({ entity })).map((m) => m.modelName),
        ['m1', 'm2'],
      );
      assert.ok((await store.models.list()).length >= 2);
    });

    test('duplicates, missing stores and refused values', async () => {
      const { store } = context();
      const { n, entity } = await registerModel(store);
      await rejectsWith(store.models.create(newModel(entity, n)), 'ALREADY_EXISTS');
      await rejectsWith(store.models.create(newModel(entity, 999_999, 'm9')), 'NOT_FOUND', 'store_id');
      const other = await registerModel(store);
      // a store of another entity is not this entity's store
      await rejectsWith(store.models.create(newModel(entity, other.n, 'm9')), 'NOT_FOUND', 'store_id');
      const base = newModel(entity, n, 'm9');
      await rejectsWith(
        store.models.create({ ...base, modelConfig: { distanceFunction: 'DOT', vectorDimension: 0 } }),
        'INVALID_ARGUMENT',
        'model_config.vector_dimension',
      );
      await rejectsWith(
        store.models.create({
          ...base,
          modelConfig: { distanceFunction: 'MANHATTAN' as 'DOT', vectorDimension: 8 },
        }),
        'INVALID_ARGUMENT',
        'model_config',
      );
      await rejectsWith(
        store.models.create({ ...base, embeddingStoreTtlSeconds: -1 }),
        'INVALID_ARGUMENT',
        'embedding_store_ttl',
      );
      await rejectsWith(
        store.models.create({ ...base, trainingDataPath: '' }),
        'INVALID_ARGUMENT',
        'training_data_path',
      );
      await rejectsWith(
        store.models.create({ ...base, modelName: 'bad name' }),
        'INVALID_ARGUMENT',
        'model_name',
      );
      await rejectsWith(store.models.get({ entity, modelName: 'absent' }), 'NOT_FOUND', 'model_name');
      assert.equal(await store.models.find({ entity, modelName: 'm9' }), undefined);
    });

    test('state changes are compare-and-set; FAILED keeps where it failed and retry resumes there', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1' };
      assert.equal(await store.models.transition(key, 'REGISTERED', 'INGESTING'), true);
      assert.equal(
        await store.models.transition(key, 'REGISTERED', 'INGESTING'),
        false,
        'no longer REGISTERED',
      );
      assert.equal(await store.models.fail(key, 'INGESTING', 'job failed: no files'), true);
      const failed = await store.models.get(key);
      assert.deepEqual(
        [failed.state, failed.failedState, failed.failureReason],
        ['FAILED', 'INGESTING', 'job failed: no files'],
      );
      assert.equal(await store.models.retry(key), 'INGESTING');
      assert.equal(await store.models.retry(key), undefined, 'not FAILED any more');
      const resumed = await store.models.get(key);
      assert.deepEqual(
        [resumed.state, resumed.failedState, resumed.failureReason],
        ['INGESTING', null, null],
      );
      assert.ok(resumed.updatedAt >= failed.updatedAt);
      assert.equal(await store.models.promote(key), true);
      assert.equal(await store.models.promote(key), false);
      assert.equal((await store.models.get(key)).cluster, 'production');
      await rejectsWith(
        store.models.transition({ entity, modelName: 'absent' }, 'REGISTERED', 'INGESTING'),
        'NOT_FOUND',
      );
    });

    test('the database refuses an illegal state, and a FAILED model without a reason', async () => {
      const { sql, store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1' };
      await rejectsWith(
        sql.query(`UPDATE vss_models SET state = 'DONE' WHERE entity = $1`, [entity]),
        'FAILED_PRECONDITION',
      );
      await rejectsWith(
        sql.query(`UPDATE vss_models SET state = 'FAILED', failed_state = 'REGISTERED' WHERE entity = $1`, [
          entity,
        ]),
        'FAILED_PRECONDITION',
      );
      await rejectsWith(
        store.models.transition(key, 'REGISTERED', 'DONE' as ModelState as 'INGESTED'),
        'INVALID_ARGUMENT',
        'state',
      );
      assert.equal((await store.models.get(key)).state, 'REGISTERED');
    });
  });
}
