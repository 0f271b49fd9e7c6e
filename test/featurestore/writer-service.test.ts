/**
 * featurestore.v1.FeatureWriterService through RemoteFeatureStore: what `lattice featurestore load`
 * does against the store `lattice up` serves. Entities are registered live (and kept by `keep`),
 * rows are checked against the served registry, and what was written is served by RetrieveFeatures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  demoRegistry,
  encodeFeatureValue,
  encodeGroupValues,
  FeatureRegistry,
  MemoryFeatureStore,
  RemoteFeatureStore,
  type RunningFeatureStore,
  ServedRegistry,
  startFeatureStore,
} from '../../src/featurestore/index.js';
import type { EntityDocument } from '../../src/featurestore/registry-schema.js';
import { type ErrorCode, isLatticeError } from '../../src/platform/errors.js';
import { connect, query, retrieveDecoded } from './support.js';

const shopDocument = {
  entities: [
    {
      name: 'shop',
      keys: ['shop_id'],
      feature_groups: [
        {
          name: 'stats',
          features: [
            { name: 'rating', data_type: 'FP32' },
            { name: 'city', data_type: 'STRING' },
          ],
        },
      ],
    },
  ],
};
const shops = FeatureRegistry.fromDocument(shopDocument);
const stats = shops.requireEntity('shop').groupsByName.get('stats')!;
/** The stored form of the stats group. */
const statsValue = (rating: number, city: string) =>
  encodeGroupValues(stats, [
    encodeFeatureValue(stats.features[0]!, rating, 'rating'),
    encodeFeatureValue(stats.features[1]!, city, 'city'),
  ]);

async function rejectsWith(work: Promise<unknown>, code: ErrorCode, message: RegExp): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(isLatticeError(err, code), `expected ${code}, got ${String(err)}`);
    assert.match((err as Error).message, message);
    return true;
  });
}

describe('FeatureWriterService', () => {
  let running: RunningFeatureStore;
  let remote: RemoteFeatureStore;
  const kept: [string, EntityDocument][] = [];
  before(async () => {
    const served = new ServedRegistry(demoRegistry(), async (name, definition) => {
      kept.push([name, definition]);
    });
    running = await startFeatureStore({ registry: served, store: new MemoryFeatureStore() });
    remote = new RemoteFeatureStore({ address: running.address });
  });
  after(async () => {
    await remote?.close();
    await running?.stop();
  });

  test('registering adds an entity once and keeps it; the same definition again changes nothing', async () => {
    assert.deepEqual(await remote.registerEntities(shops.toDocument()), { added: ['shop'], unchanged: [] });
    assert.deepEqual(await remote.registerEntities(shops.toDocument()), { added: [], unchanged: ['shop'] });
    assert.deepEqual(
      kept.map(([name]) => name),
      ['shop'],
    );
  });

  test('another definition of a registered entity is FAILED_PRECONDITION naming it', async () => {
    const other = structuredClone(shopDocument);
    other.entities[0]!.feature_groups[0]!.features[0]!.data_type = 'FP64';
    await rejectsWith(
      remote.registerEntities(other),
      'FAILED_PRECONDITION',
      /entity "shop" is already registered/,
    );
    await rejectsWith(
      remote.registerEntities({ entities: [{ name: 'x' }] } as never),
      'INVALID_ARGUMENT',
      /keys/,
    );
  });

  test('written rows are served by RetrieveFeatures, read back and deleted through the port', async () => {
    await remote.registerEntities(shops.toDocument());
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      key: [`s${i}`],
      groups: new Map([['stats', statsValue(i / 2, `c${i % 7}`)]]),
    }));
    await remote.write('shop', rows);
    const client = connect(running.address);
    try {
      const answer = await retrieveDecoded(
        client,
        query('shop', ['shop_id'], [['s3'], ['nope']], { stats: ['city', 'rating'] }),
      );
      assert.deepEqual(answer.rows[0]!.columns, ['c3', '1.5']);
      assert.deepEqual(answer.rows[1]!.columns, []);
    } finally {
      client.close();
    }
    const read = await remote.read('shop', [['s1'], ['nope']], ['stats']);
    assert.ok(read[0]![0] instanceof Uint8Array);
    assert.equal(read[1]![0], undefined);
    await remote.delete('shop', [['s1']]);
    assert.equal((await remote.read('shop', [['s1']], ['stats']))[0]![0], undefined);
  });

  test('rows that do not fit the registry are INVALID_ARGUMENT naming the field; nothing is stored', async () => {
    await remote.registerEntities(shops.toDocument());
    const good = statsValue(1, 'x');
    await rejectsWith(
      remote.write('nowhere', [{ key: ['a'], groups: new Map([['stats', good]]) }]),
      'INVALID_ARGUMENT',
      /unknown entity "nowhere"/,
    );
    await rejectsWith(
      remote.write('shop', [{ key: ['a', 'b'], groups: new Map([['stats', good]]) }]),
      'INVALID_ARGUMENT',
      /rows\[0\]\.key: 2 key parts, but entity "shop" is keyed by 1/,
    );
    await rejectsWith(
      remote.write('shop', [{ key: ['a'], groups: new Map([['other', good]]) }]),
      'INVALID_ARGUMENT',
      /no feature group "other"/,
    );
    await rejectsWith(
      remote.write('shop', [
        { key: ['ok'], groups: new Map([['stats', good]]) },
        { key: ['bad'], groups: new Map([['stats', Uint8Array.of(1, 2, 0, 0)]]) },
      ]),
      'INVALID_ARGUMENT',
      /rows\[1\]\.groups\["stats"\]/,
    );
    assert.equal(
      (await remote.read('shop', [['ok']], ['stats']))[0]![0],
      undefined,
      'a bad batch stores nothing',
    );
  });

  test('a server that is not there is UNAVAILABLE saying what to start', async () => {
    const down = new RemoteFeatureStore({ address: '127.0.0.1:1', deadlineMs: 2000 });
    try {
      await rejectsWith(down.registerEntities(shops.toDocument()), 'UNAVAILABLE', /lattice up/);
    } finally {
      await down.close();
    }
  });
});
