import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  demoRegistry,
  FeatureRegistry,
  MirroredFeatureStore,
  SqlFeatureStore,
  seedDemoData,
  writeFeatureRows,
} from '../../src/featurestore/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { realServer, uniqueName } from '../support/servers.js';
import { featureStoreContract } from './contract.js';

const url = await realServer('postgres');
const schema = uniqueName('lattice_fs_sql').toLowerCase();

const pglite: SqlClient[] = [];
after(async () => {
  for (const sql of pglite) await sql.close();
});

featureStoreContract({
  name: 'SQL (PGlite)',
  open: async () => {
    const sql = await createSqlClient({ kind: 'pglite' });
    pglite.push(sql);
    return SqlFeatureStore.open(sql);
  },
});

describe('SQL feature store on PostgreSQL', {
  skip: url === undefined ? 'PostgreSQL is not reachable' : false,
}, () => {
  let admin: SqlClient;
  const clients: SqlClient[] = [];
  before(async () => {
    admin = await createSqlClient({ kind: 'postgres', url: url!, poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
  });
  after(async () => {
    for (const sql of clients) await sql.close();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.close();
  });
  featureStoreContract({
    name: 'SQL (PostgreSQL)',
    open: async () => {
      const sql = await createSqlClient({ kind: 'postgres', url: url!, searchPath: schema, poolSize: 2 });
      clients.push(sql);
      return SqlFeatureStore.open(sql);
    },
  });
});

const registry = FeatureRegistry.fromDocument({
  entities: [
    {
      name: 'shop',
      keys: ['shop_id'],
      feature_groups: [{ name: 'stats', features: [{ name: 'rating', data_type: 'FP32' }] }],
    },
  ],
});

describe('the memory mirror of the SQL store (what lattice up serves)', () => {
  let sql: SqlClient;
  before(async () => {
    sql = await createSqlClient({ kind: 'pglite' });
  });
  after(async () => {
    await sql?.close();
  });

  test('rows written through a mirror are read back by the next mirror over the same database', async () => {
    const first = await MirroredFeatureStore.open(await SqlFeatureStore.open(sql));
    assert.equal(first.rows, 0);
    await writeFeatureRows(first.store, registry, 'shop', [
      { key: ['s1'], values: { stats: { rating: 4.5 } } },
      { key: ['s2'], values: { stats: { rating: 3 } } },
    ]);
    await first.store.write(
      'shop',
      [{ key: ['gone'], groups: new Map([['stats', Uint8Array.of(1, 4, 0, 0, 0, 0)]]) }],
      {
        ttlMs: 1,
      },
    );
    await first.store.close();
    // Lets the 1 ms TTL lapse (the scenario: time passing, not a wait for something to happen).
    await new Promise((resolve) => setTimeout(resolve, 5));

    const second = await MirroredFeatureStore.open(await SqlFeatureStore.open(sql));
    assert.equal(second.rows, 2, 'the expired row is not brought back');
    const [s1, s2, gone] = await second.store.read('shop', [['s1'], ['s2'], ['gone']], ['stats']);
    const rating = (row: (Uint8Array | undefined)[] | undefined) =>
      row?.[0] && Buffer.from(row[0].subarray(2)).readFloatLE(0);
    assert.equal(rating(s1), 4.5);
    assert.equal(rating(s2), 3);
    assert.equal(gone?.[0], undefined);
    assert.equal(await second.store.durable.sweep(), 1, 'the sweep deletes the expired row');
    await second.store.close();
  });

  test('the seed goes to memory only, and loaded rows win over it', async () => {
    const db = await createSqlClient({ kind: 'pglite' });
    try {
      const durable = await SqlFeatureStore.open(db);
      const demo = demoRegistry();
      const entity = demo.entities[0]!;
      const seeded = await MirroredFeatureStore.open(durable, {
        seed: async (memory) => void (await seedDemoData(memory)),
      });
      const { rows: demoRows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM featurestore_rows',
      );
      assert.deepEqual(demoRows, [{ n: 0 }], 'demo rows are not stored');
      const key = (await seededKey(seeded.store, entity.name))!;
      // A row loaded over a demo key is kept and wins at the next start.
      const group = entity.groups[0]!;
      const value = (await seeded.store.read(entity.name, [key], [group.name]))[0]![0]!;
      const changed = Uint8Array.from(value);
      changed[changed.length - 1] = changed[changed.length - 1]! ^ 0xff;
      await seeded.store.write(entity.name, [{ key, groups: new Map([[group.name, changed]]) }]);
      const again = await MirroredFeatureStore.open(await SqlFeatureStore.open(db), {
        seed: async (memory) => void (await seedDemoData(memory)),
      });
      assert.equal(again.rows, 1);
      const read = (await again.store.read(entity.name, [key], [group.name]))[0]![0]!;
      assert.deepEqual([...read], [...changed]);
    } finally {
      await db.close();
    }
  });

  test('registered entity definitions are kept in registration order', async () => {
    const durable = await SqlFeatureStore.open(sql);
    const definition = registry.toDocument().entities[0]!;
    await durable.saveEntity('shop', definition);
    await durable.saveEntity('shop', definition);
    assert.deepEqual(await durable.registeredEntities(), [definition]);
  });
});

/** The first key of the demo entity that the seed wrote. */
async function seededKey(
  store: { read: MirroredFeatureStore['read'] },
  entity: string,
): Promise<string[] | undefined> {
  const demo = demoRegistry().requireEntity(entity);
  for (const candidate of ['u1', 'c1', 'p1', '1']) {
    const key = demo.keys.map(() => candidate);
    const row = await store.read(entity, [key], [demo.groups[0]!.name]);
    if (row[0]![0] !== undefined) return key;
  }
  return undefined;
}
