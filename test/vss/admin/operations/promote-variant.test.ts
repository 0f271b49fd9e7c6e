/**
 * PROMOTE_VARIANT end to end on PGlite + memory queue + two embedded vector DBs (experiment and
 * production): a READY variant is copied to production and served from there; once no variant reads
 * the experiment collection it is dropped and searches still answer the same candidates (so they
 * come from production); a later reset writes and flips its version on production. A variant with
 * no data, or a production cluster the admin lacks, is refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isLatticeError } from '../../../../src/platform/errors.js';
import { collectionName } from '../../../../src/vss/model/index.js';
import {
  type Catalog,
  registerCatalog,
  vectorOf,
  waitForOperation,
  writeTrainingData,
} from '../../../support/admin-engine-world.js';
import { eventually } from '../../../support/servers.js';
import { openPromoteWorld, type PromoteWorld } from './promote-world.js';

const ROWS = 1200;

describe('vss admin PROMOTE_VARIANT (PGlite + memory queue + two embedded vector DBs)', () => {
  let world: PromoteWorld;
  let dir: string;

  before(async () => {
    world = await openPromoteWorld();
    dir = mkdtempSync(join(tmpdir(), 'lattice-promote-data-'));
  });
  after(async () => {
    await world?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The ids a search of `variant` answers (first page of 20, by a fixed vector). */
  const searchIds = async (catalog: Catalog, variant: string): Promise<string[]> => {
    const response = await world.client.search({
      entity: catalog.entity,
      modelName: catalog.modelName,
      variant,
      pageSize: 20,
      queries: [{ embedding: { values: vectorOf(4242) }, pageToken: '', filters: [] }],
    });
    assert.equal(response.results[0]!.error, '');
    return response.results[0]!.candidates.map((c) => c.id);
  };

  it('promotes a variant: copied from the embedding store, served from production, experiment dropped once unread', async () => {
    const data = join(dir, 'main');
    writeTrainingData(data, ROWS);
    const catalog = await registerCatalog(world.store, data);
    const reset = await world.engine.lifecycle.resetModel(catalog);
    await waitForOperation(world.store, reset.operation.operationId);
    const live = await searchIds(catalog, 'live');
    const all = await searchIds(catalog, 'all');
    assert.equal(live.length, 20);
    assert.equal(await world.points(world.experiment, catalog, 1), ROWS);
    assert.equal(await world.points(world.production, catalog, 1), undefined);

    const promoted = await world.engine.lifecycle.promoteVariant({ ...catalog, variant: 'live' });
    const done = await waitForOperation(world.store, promoted.operation.operationId);
    assert.equal(done.kind, 'PROMOTE_VARIANT');
    assert.equal(done.result?.copied, ROWS);
    assert.equal(done.result?.promoting, undefined);
    // `all` still reads the experiment collection: it stays.
    assert.deepEqual(done.result?.dropped_experiment, []);
    const variant = await world.store.variants.get({ ...catalog, variant: 'live' });
    assert.equal(variant.cluster, 'production');
    assert.equal(variant.state, 'READY');
    assert.equal((await world.store.variants.get({ ...catalog, variant: 'all' })).cluster, 'experiment');
    assert.equal((await world.store.models.get(catalog)).cluster, 'experiment');
    assert.equal(await world.points(world.production, catalog, 1), ROWS);
    // The production points carry `live`'s membership exactly as the experiment ones.
    const members = async (db: typeof world.experiment) => {
      const [hits] = await db.search({
        collection: collectionName(catalog.entity, catalog.modelName, 1),
        queries: [{ vector: vectorOf(7) }],
        filters: [{ field: 'to_be_indexed_live', op: 'IN', values: ['true'] }],
        limit: 10_000,
      });
      return hits!.map((h) => h.id).sort();
    };
    assert.deepEqual(await members(world.production), await members(world.experiment));
    await eventually(
      async () => (await searchIds(catalog, 'live')).join() === live.join(),
      10_000,
      'live search',
    );

    // A second variant of the same model, promoted on its own, empties the experiment collection.
    const second = await world.engine.lifecycle.promoteVariant({ ...catalog, variant: 'all' });
    const secondDone = await waitForOperation(world.store, second.operation.operationId);
    assert.deepEqual(secondDone.result?.dropped_experiment, ['EMBEDDED']);
    assert.equal(await world.points(world.experiment, catalog, 1), undefined);
    // Searches answer the same candidates with the experiment collection gone: from production.
    await eventually(
      async () => (await searchIds(catalog, 'all')).join() === all.join(),
      10_000,
      'all search',
    );
    assert.deepEqual(await searchIds(catalog, 'live'), live);

    // Promoting again is accepted and moves nothing.
    const again = await world.engine.lifecycle.promoteVariant({ ...catalog, variant: 'live' });
    const againDone = await waitForOperation(world.store, again.operation.operationId);
    assert.deepEqual(againDone.result?.promoted_variants, []);

    // A later reset writes its version to production and flips there; the old one is dropped.
    writeTrainingData(data, ROWS, { seed: 1 });
    const next = await world.engine.lifecycle.resetModel(catalog);
    await waitForOperation(world.store, next.operation.operationId);
    for (const name of ['all', 'live']) {
      const v = await world.store.variants.get({ ...catalog, variant: name });
      assert.equal(v.readVersion, 2);
      assert.equal(v.cluster, 'production');
    }
    assert.equal(await world.points(world.production, catalog, 2), ROWS);
    assert.equal(await world.points(world.production, catalog, 1), undefined);
    assert.equal(await world.points(world.experiment, catalog, 2), undefined);
    const fresh = await searchIds(catalog, 'live');
    assert.equal(fresh.length, 20);
    assert.notDeepEqual(fresh, live);
  });

  it('refuses a variant with no data, and a reset while a promotion runs', async () => {
    const data = join(dir, 'empty');
    const catalog = await registerCatalog(world.store, data);
    await assert.rejects(
      () => world.engine.lifecycle.promoteVariant({ ...catalog, variant: 'live' }),
      (err: unknown) => isLatticeError(err, 'FAILED_PRECONDITION') && /serves no version/.test(String(err)),
    );
    // Nothing was recorded by the refusal.
    assert.equal((await world.store.operations.list({ ...catalog })).length, 0);
    await assert.rejects(
      () => world.engine.lifecycle.promoteVariant({ ...catalog, variant: 'nope' }),
      (err: unknown) => isLatticeError(err, 'NOT_FOUND'),
    );

    writeTrainingData(data, 300);
    await waitForOperation(
      world.store,
      (await world.engine.lifecycle.resetModel(catalog)).operation.operationId,
    );
    const promotion = await world.engine.lifecycle.promoteModel(catalog);
    await assert.rejects(
      () => world.engine.lifecycle.resetModel(catalog),
      (err: unknown) => isLatticeError(err, 'FAILED_PRECONDITION') && /being promoted/.test(String(err)),
    );
    const done = await waitForOperation(world.store, promotion.operation.operationId);
    assert.equal(done.result?.copied, 300);
    assert.equal((await world.store.models.get(catalog)).cluster, 'production');
  });
});
