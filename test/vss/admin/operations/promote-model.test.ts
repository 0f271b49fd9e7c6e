/**
 * PROMOTE_MODEL on PGlite + memory queue + two embedded vector DBs: every variant and the model move
 * to production, the experiment collection is dropped and searches answer from production. Crash
 * safety of the copy: the production vector DB fails mid-copy (the step is retried, the operation
 * stays RUNNING at `copy` with its page cursor recorded), the engine is stopped and a new one started
 * on the same adapters: it resumes at the cursor and finishes with exact counts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { VectorDb } from '../../../../src/platform/vectordb/index.js';
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

/** `db` whose upserts fail once `allowed` of them went through (a production DB going down mid-copy). */
function failingAfter(db: VectorDb, allowed: number): { db: VectorDb; failures: () => number } {
  let upserts = 0;
  let failures = 0;
  const proxy = new Proxy(db, {
    get(target, prop) {
      if (prop === 'upsert') {
        return async (...args: Parameters<VectorDb['upsert']>) => {
          if (++upserts > allowed) {
            failures++;
            throw new Error('production vector DB went away');
          }
          return target.upsert(...args);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: proxy, failures: () => failures };
}

describe('vss admin PROMOTE_MODEL (PGlite + memory queue + two embedded vector DBs)', () => {
  let world: PromoteWorld;
  let dir: string;

  before(async () => {
    world = await openPromoteWorld();
    dir = mkdtempSync(join(tmpdir(), 'lattice-promote-model-'));
  });
  after(async () => {
    await world?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const searchIds = async (catalog: Catalog, variant: string): Promise<string[]> => {
    const response = await world.client.search({
      entity: catalog.entity,
      modelName: catalog.modelName,
      variant,
      pageSize: 15,
      queries: [{ embedding: { values: vectorOf(99) }, pageToken: '', filters: [] }],
    });
    assert.equal(response.results[0]!.error, '');
    return response.results[0]!.candidates.map((c) => c.id);
  };

  const liveMembers = async (db: VectorDb, catalog: Catalog, version: number) => {
    const [hits] = await db.search({
      collection: collectionName(catalog.entity, catalog.modelName, version),
      queries: [{ vector: vectorOf(3) }],
      filters: [{ field: 'to_be_indexed_live', op: 'IN', values: ['true'] }],
      limit: 10_000,
    });
    return hits!.length;
  };

  it('promotes every variant and the model; the experiment collection is dropped and searches answer from production', async () => {
    const data = join(dir, 'main');
    writeTrainingData(data, 800);
    const catalog = await registerCatalog(world.store, data);
    await waitForOperation(
      world.store,
      (await world.engine.lifecycle.resetModel(catalog)).operation.operationId,
    );
    const before = { all: await searchIds(catalog, 'all'), live: await searchIds(catalog, 'live') };
    const promoted = await world.engine.lifecycle.promoteModel(catalog);
    const done = await waitForOperation(world.store, promoted.operation.operationId);
    assert.equal(done.kind, 'PROMOTE_MODEL');
    assert.deepEqual(done.result?.promoted_variants, ['all', 'live']);
    assert.deepEqual(done.result?.dropped_experiment, ['EMBEDDED']);
    assert.equal((await world.store.models.get(catalog)).cluster, 'production');
    for (const name of ['all', 'live']) {
      assert.equal((await world.store.variants.get({ ...catalog, variant: name })).cluster, 'production');
    }
    assert.equal(await world.points(world.experiment, catalog, 1), undefined);
    assert.equal(await world.points(world.production, catalog, 1), 800);
    // even ids with the index flag (every fifth row has none): 400 - 80
    assert.equal(await liveMembers(world.production, catalog, 1), 320);
    await eventually(
      async () => (await searchIds(catalog, 'all')).join() === before.all.join(),
      10_000,
      'search of all from production',
    );
    assert.deepEqual(await searchIds(catalog, 'live'), before.live);
  });

  it('resumes an interrupted copy after a restart and finishes with exact counts', async () => {
    const rows = 3000;
    const data = join(dir, 'crash');
    writeTrainingData(data, rows);
    const catalog = await registerCatalog(world.store, data);
    await waitForOperation(
      world.store,
      (await world.engine.lifecycle.resetModel(catalog)).operation.operationId,
    );
    // The running engine's production DB fails after two pages.
    const flaky = failingAfter(world.production, 2);
    await world.restartEngine(flaky.db);
    const promoted = await world.engine.lifecycle.promoteModel(catalog);
    const id = promoted.operation.operationId;
    await eventually(async () => flaky.failures() >= 2, 20_000, 'the copy to fail mid-way');
    const interrupted = await world.store.operations.get(id);
    assert.equal(interrupted.status, 'RUNNING');
    assert.equal(interrupted.step, 'copy');
    const cursor = interrupted.result?.copy_after;
    assert.equal(typeof cursor, 'string');
    assert.ok((interrupted.result?.copied as number) >= 500, JSON.stringify(interrupted.result));
    assert.ok((interrupted.result?.copied as number) < rows);

    // A restart on the same adapters, production healthy again.
    await world.restartEngine();
    const done = await waitForOperation(world.store, id);
    assert.equal(done.attempts, 1);
    assert.equal(done.result?.copied, rows);
    assert.equal(await world.points(world.production, catalog, 1), rows);
    assert.equal(await world.store.embeddings.count(catalog.embeddingsTable, 'm', 1), rows);
    assert.equal(await liveMembers(world.production, catalog, 1), 1200);
    assert.equal(await world.points(world.experiment, catalog, 1), undefined);
    assert.equal((await world.store.models.get(catalog)).cluster, 'production');
    await eventually(async () => (await searchIds(catalog, 'live')).length === 15, 10_000, 'search');
  });
});
