import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  demoRegistryDocument,
  FeatureRegistry,
  FeatureRetriever,
  generateDemoData,
  MemoryFeatureStore,
  seedDemoData,
  seededRandom,
  toColumnRecords,
  toStoredRow,
} from '../../src/featurestore/index.js';
import { query } from './support.js';

describe('demo data', () => {
  test('the same seed and sizes give the same rows; another seed gives others', () => {
    const options = { seed: 7, users: 20, catalogs: 50, categories: 5 };
    assert.deepEqual(generateDemoData(options).rows, generateDemoData(options).rows);
    assert.notDeepEqual(
      generateDemoData({ ...options, seed: 8 }).rows.user,
      generateDemoData(options).rows.user,
    );
  });

  test('each entity has its own stream: resizing one leaves the others unchanged', () => {
    const small = generateDemoData({ users: 10, catalogs: 10, categories: 4 });
    const large = generateDemoData({ users: 10, catalogs: 500, categories: 4 });
    assert.deepEqual(small.rows.user, large.rows.user);
    assert.deepEqual(small.rows.catalog, large.rows.catalog.slice(0, 10));
    assert.deepEqual(small.rows.user_category, large.rows.user_category);
  });

  test('sizes, keys and value ranges', () => {
    const { rows } = generateDemoData({ users: 30, catalogs: 40, categories: 6, categoriesPerUser: 4 });
    assert.deepEqual(
      Object.fromEntries(Object.entries(rows).map(([entity, list]) => [entity, list.length])),
      { user: 30, catalog: 40, category: 6, user_category: 120 },
    );
    assert.deepEqual(rows.user[0]?.key, ['u1']);
    assert.deepEqual(rows.catalog[39]?.key, ['c40']);
    assert.deepEqual(
      rows.category.map((row) => row.key[0]),
      ['0', '1', '2', '3', '4', '5'],
    );
    for (const row of rows.catalog) {
      const category = row.values.attributes?.category_id as number;
      assert.ok(Number.isInteger(category) && category >= 0 && category < 6);
    }
    for (const row of rows.user) {
      const embedding = row.values.profile?.embedding as number[];
      assert.equal(embedding.length, 8);
      assert.ok(Math.abs(Math.hypot(...embedding) - 1) < 1e-3);
    }
    // Each user's categories are distinct.
    const pairs = new Set(rows.user_category.map((row) => row.key.join('|')));
    assert.equal(pairs.size, rows.user_category.length);
    // Every row fits the registry.
    const registry = FeatureRegistry.fromDocument(demoRegistryDocument());
    for (const [entity, list] of Object.entries(rows)) {
      for (const row of list) toStoredRow(registry.requireEntity(entity), row);
    }
  });

  test('seeded into a store, the chained keys resolve: catalog → category → user × category', async () => {
    const store = new MemoryFeatureStore();
    const { registry, rows } = await seedDemoData(store, {
      users: 5,
      catalogs: 20,
      categories: 4,
      categoriesPerUser: 4,
    });
    const retriever = new FeatureRetriever(registry, store);
    const catalog = await retriever.retrieveDecoded(
      query('catalog', ['catalog_id'], [['c3']], { attributes: ['category_id'] }),
    );
    const categoryId = catalog.rows[0]!.columns[0]!;
    assert.equal(categoryId, String(rows.catalog[2]?.values.attributes?.category_id));
    const pair = await retriever.retrieveDecoded(
      query('user_category', ['user_id', 'category_id'], [['u2', categoryId]], { agg: ['clicks_30d'] }),
    );
    assert.equal(pair.rows[0]?.columns.length, 1);
    const user = await retriever.retrieveDecoded(
      query('user', ['user_id'], [['u1']], { profile: ['age', 'country'] }),
    );
    assert.deepEqual(user.rows[0]?.columns, [
      String(rows.user[0]?.values.profile?.age),
      rows.user[0]?.values.profile?.country,
    ]);
  });

  test('toColumnRecords names columns the way the loader reads them', () => {
    const { registry, rows } = generateDemoData({ users: 2, catalogs: 1, categories: 1 });
    const { columns, records } = toColumnRecords(registry, 'catalog', rows.catalog);
    assert.deepEqual(columns, ['catalog_id', 'stats:price', 'stats:ctr_7d', 'attributes:category_id']);
    assert.equal(records[0]?.catalog_id, 'c1');
    assert.equal(typeof records[0]?.['stats:price'], 'number');
  });

  test('seededRandom is deterministic and uniform enough', () => {
    const a = seededRandom(1);
    const b = seededRandom(1);
    const values = Array.from({ length: 10_000 }, () => a());
    assert.deepEqual(
      values.slice(0, 5),
      Array.from({ length: 5 }, () => b()),
    );
    assert.ok(values.every((x) => x >= 0 && x < 1));
    const mean = values.reduce((sum, x) => sum + x, 0) / values.length;
    assert.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
  });
});
