import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VariantKey, VssRepositories } from '../../../src/vss/store/index.js';
import { type Context, newVariant, registerModel, rejectsWith } from './fixtures.js';

/** Takes a variant through a reset up to INDEXING on `version` (which it must be allowed to enter). */
async function indexVersion(repos: VssRepositories, key: VariantKey, version: number): Promise<void> {
  const from = (await repos.variants.get(key)).state;
  assert.equal(await repos.variants.transition(key, from, 'INGESTING', { writeVersion: version }), true);
  assert.equal(await repos.variants.transition(key, 'INGESTING', 'INGESTED'), true);
  assert.equal(await repos.variants.transition(key, 'INGESTED', 'INDEXING'), true);
}

async function ingestedVersion(repos: VssRepositories, entity: string): Promise<number> {
  const created = await repos.versions.createNext({ entity, modelName: 'm1' });
  assert.equal(await repos.versions.transition(created, 'INGESTING', 'INGESTED'), true);
  return created.version;
}

export function readVersionTests(context: Context): void {
  describe('read-version flip', () => {
    test('flips a variant to its indexed version; the last reader of the old version retires it', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const organic = { entity, modelName: 'm1', variant: 'organic' };
      const ad = { entity, modelName: 'm1', variant: 'ad' };
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      await store.variants.create(newVariant(entity, 'm1', 'ad'));

      const v1 = await ingestedVersion(store, entity);
      await indexVersion(store, organic, v1);
      await indexVersion(store, ad, v1);
      assert.deepEqual(await store.flipReadVersion(organic, v1), {
        applied: true,
        previousReadVersion: null,
        retiredVersions: [],
      });
      const served = await store.versions.get({ entity, modelName: 'm1', version: v1 });
      assert.equal(served.status, 'SERVING');
      assert.ok(served.indexedAt instanceof Date);
      assert.deepEqual(await store.flipReadVersion(organic, v1), {
        applied: false,
        previousReadVersion: v1,
        retiredVersions: [],
      });
      assert.equal((await store.flipReadVersion(ad, v1)).applied, true);

      const v2 = await ingestedVersion(store, entity);
      await indexVersion(store, organic, v2);
      await indexVersion(store, ad, v2);
      const midway = await store.variants.get(organic);
      assert.deepEqual([midway.readVersion, midway.writeVersion, midway.state], [v1, v2, 'INDEXING']);
      assert.deepEqual(await store.flipReadVersion(organic, v2), {
        applied: true,
        previousReadVersion: v1,
        retiredVersions: [],
      });
      assert.equal(
        (await store.versions.get({ entity, modelName: 'm1', version: v1 })).status,
        'SERVING',
        'ad reads it',
      );
      assert.deepEqual(await store.flipReadVersion(ad, v2), {
        applied: true,
        previousReadVersion: v1,
        retiredVersions: [v1],
      });
      const retired = await store.versions.get({ entity, modelName: 'm1', version: v1 });
      assert.equal(retired.status, 'RETIRED');
      assert.ok(retired.retiredAt instanceof Date);
      const after = await store.variants.get(organic);
      assert.deepEqual([after.readVersion, after.writeVersion, after.state], [v2, v2, 'READY']);
    });

    test('sibling variants flipping at once retire the old version exactly once', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const names = ['a', 'b', 'c'];
      const keys = names.map((variant) => ({ entity, modelName: 'm1', variant }));
      for (const name of names) await store.variants.create(newVariant(entity, 'm1', name));
      const v1 = await ingestedVersion(store, entity);
      for (const key of keys) {
        await indexVersion(store, key, v1);
        await store.flipReadVersion(key, v1);
      }
      const v2 = await ingestedVersion(store, entity);
      for (const key of keys) await indexVersion(store, key, v2);
      const flips = await Promise.all([...keys, ...keys].map((key) => store.flipReadVersion(key, v2)));
      assert.equal(flips.filter((f) => f.applied).length, keys.length, 'each variant flips once');
      assert.deepEqual(
        flips.flatMap((f) => f.retiredVersions),
        [v1],
      );
      assert.equal((await store.versions.get({ entity, modelName: 'm1', version: v1 })).status, 'RETIRED');
    });

    test('refuses a version that is not ingested or not being indexed, and unknown variants', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1', variant: 'organic' };
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const v1 = (await store.versions.createNext({ entity, modelName: 'm1' })).version;
      await indexVersion(store, key, v1);
      await rejectsWith(store.flipReadVersion(key, v1), 'FAILED_PRECONDITION', 'version');
      assert.deepEqual((await store.flipReadVersion(key, v1 + 1)).applied, false, 'not its write version');
      await rejectsWith(store.flipReadVersion({ ...key, variant: 'absent' }, v1), 'NOT_FOUND', 'variant');
      const unchanged = await store.variants.get(key);
      assert.deepEqual([unchanged.state, unchanged.readVersion], ['INDEXING', null]);
    });

    test('the flip is one transaction: rolled back, neither variant nor version changed', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const key = { entity, modelName: 'm1', variant: 'organic' };
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const v1 = await ingestedVersion(store, entity);
      await indexVersion(store, key, v1);
      await assert.rejects(
        store.transaction(async (repos) => {
          assert.equal((await repos.flipReadVersion(key, v1)).applied, true);
          assert.equal((await repos.variants.get(key)).readVersion, v1, 'visible inside');
          throw new Error('crash before commit');
        }),
        /crash before commit/,
      );
      const variant = await store.variants.get(key);
      assert.deepEqual([variant.state, variant.readVersion], ['INDEXING', null]);
      assert.equal((await store.versions.get({ entity, modelName: 'm1', version: v1 })).status, 'INGESTED');
      assert.equal((await store.flipReadVersion(key, v1)).applied, true, 'and it can be done again');
    });
  });
}
