/**
 * Rollback (docs/vss.md "Recall gate and rollback") on the real engine and real serving (PGlite, the
 * memory queue, the embedded vector DB, the consumers, the file job runner, vss serving over gRPC):
 *
 * - POST /rollback-model within the grace period flips the model back to its previous version
 *   atomically while a search loop walks pages: no call fails, every first page is one version's
 *   and every second page is the same version's as its first (page tokens stay pinned);
 * - a second rollback (nothing to go back to) and one after the grace period are 409 with a clear
 *   message, and the sweep then drops the expired version;
 * - the live recall watch rolls a model back by itself when the live recall of the version it serves
 *   (samples recorded in SQL, as serving records them) is below min_recall over its window, and leaves
 *   it alone when the recall is good;
 * - a real-time update made while the later version serves reaches the kept previous version too.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../../../src/platform/logging/index.js';
import type { Queue } from '../../../../src/platform/queue/index.js';
import type { SqlClient } from '../../../../src/platform/sql/index.js';
import type { EmbeddedVectorDb } from '../../../../src/platform/vectordb/index.js';
import { storeLiveRecall } from '../../../../src/vss/admin/operations/index.js';
import { collectionName } from '../../../../src/vss/model/index.js';
import { startVssServing, type VssServing } from '../../../../src/vss/serving/index.js';
import { openVssStore } from '../../../../src/vss/store/index.js';
import { type AdminApiWorld, openAdminApiWorld } from '../../../support/admin-api-world.js';
import {
  type AdminWorld,
  type Catalog,
  registerCatalog,
  vectorOf,
  waitForOperation,
  writeTrainingData,
} from '../../../support/admin-engine-world.js';
import { eventually } from '../../../support/servers.js';
import { Client } from '../../serving/harness.js';
import { assertError, type Harness } from '../api/api-harness.js';

const ROWS = 200;

describe('vss admin: rollback-model and the live recall watch', () => {
  let dir: string;
  let sql: SqlClient;
  let queue: Queue;
  let vectorDb: EmbeddedVectorDb;
  let world: AdminWorld;
  let api: Harness;
  let serving: VssServing;
  let client: Client;

  let opened: AdminApiWorld | undefined;
  before(async () => {
    opened = await openAdminApiWorld('rollback', async (db) => ({
      rollbackGraceMs: 3_600_000,
      // The live recall serving records in SQL (the test records samples there itself).
      liveRecall: storeLiveRecall(await openVssStore(db)),
      autoRollback: { windowMs: 1_000, minSamples: 5 },
      sweepIntervalMs: 3_600_000,
    }));
    ({ dir, sql, queue, vectorDb, world, api } = opened);
    serving = await startVssServing({
      sql,
      vectorDb,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('rollback-serving', { level: 'silent' }),
      refreshIntervalMs: 50,
      pageTokenSecret: 'rollback-test',
    });
    client = new Client(`127.0.0.1:${serving.port}`);
  });
  after(async () => {
    client?.close();
    await serving?.stop();
    await opened?.close();
  });

  /** Writes the training data of the next version (`seed` changes every vector), resets, waits. */
  const resetWith = async (catalog: Catalog, data: string, seed: number) => {
    writeTrainingData(data, ROWS, { files: 2, seed });
    const answer = await api.call({
      url: '/reset-model',
      body: { entity: catalog.entity, model_name: catalog.modelName },
    });
    assert.equal(answer.status, 202, answer.body);
    await waitForOperation(world.store, String(answer.json.operation_id));
  };
  const rollback = (catalog: Catalog) =>
    api.call({ url: '/rollback-model', body: { entity: catalog.entity, model_name: catalog.modelName } });
  const detail = async (catalog: Catalog) => {
    const answer = await api.call({ url: `/models/${catalog.entity}/${catalog.modelName}` });
    assert.equal(answer.status, 200, answer.body);
    return answer.json as {
      variants: {
        variant: string;
        read_version: number;
        write_version: number;
        previous_read_version: number | null;
        rollback: { available: boolean; until: string | null };
      }[];
      versions: { version: number; status: string; rolled_back_at: string | null }[];
    };
  };
  const newCatalog = async () => {
    const data = join(dir, `data-${Math.random().toString(36).slice(2)}`);
    return { data, catalog: await registerCatalog(world.store, data, ['all']) };
  };

  it('rolls back atomically under a search loop within the grace period; refuses outside it; the sweep then drops', async () => {
    const { data, catalog } = await newCatalog();
    await resetWith(catalog, data, 1);
    await resetWith(catalog, data, 2);
    let state = await detail(catalog);
    assert.equal(state.variants[0]!.read_version, 2);
    assert.equal(state.variants[0]!.previous_read_version, 1);
    assert.equal(state.variants[0]!.rollback.available, true);
    assert.ok(Date.parse(state.variants[0]!.rollback.until!) > Date.now() + 3_000_000);

    // Each version's two pages of one query, straight from its collection.
    const vector = vectorOf(424_242);
    const pagesOf = async (version: number) => {
      const [hits] = await vectorDb.search({
        collection: collectionName(catalog.entity, catalog.modelName, version),
        queries: [{ vector }],
        filters: [{ field: 'to_be_indexed_all', op: 'IN', values: ['true'] }],
        limit: 10,
        indexedOnly: true,
      });
      const ids = hits!.map((h) => h.id).join(',');
      return [ids.split(',').slice(0, 5).join(','), ids.split(',').slice(5).join(',')];
    };
    const pages = new Map([
      [1, await pagesOf(1)],
      [2, await pagesOf(2)],
    ]);
    assert.notEqual(pages.get(1)![0], pages.get(2)![0], 'the versions answer differently');
    const request = {
      entity: catalog.entity,
      modelName: catalog.modelName,
      variant: 'all',
      pageSize: 5,
    };
    const walk = async () => {
      const first = await client.search({
        ...request,
        queries: [{ embedding: { values: vector }, filters: [], pageToken: '' }],
      });
      const one = first.results[0]!;
      assert.equal(one.error, '');
      const ids = one.candidates.map((c) => c.id).join(',');
      const version = [...pages].find(([, p]) => p[0] === ids)?.[0];
      assert.ok(version !== undefined, `a first page of neither version: ${ids}`);
      const second = await client.search({
        ...request,
        queries: [{ embedding: { values: vector }, filters: [], pageToken: one.nextPageToken }],
      });
      assert.equal(second.results[0]!.error, '');
      const next = second.results[0]!.candidates.map((c) => c.id).join(',');
      assert.equal(next, pages.get(version)![1], `page 2 of a walk that began on version ${version}`);
      return version;
    };
    await eventually(async () => (await walk()) === 2, 20_000, 'serving to read version 2');

    const seen: number[] = [];
    let stop = false;
    let failure: unknown;
    const loop = (async () => {
      try {
        while (!stop) seen.push(await walk());
      } catch (err) {
        failure = err;
      }
    })();
    await eventually(
      async () => seen.length >= 3 || failure !== undefined,
      20_000,
      'walks before the rollback',
    );
    const answer = await rollback(catalog);
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(answer.json, {
      entity: catalog.entity,
      model_name: catalog.modelName,
      variants: [{ variant: 'all', from_version: 2, to_version: 1 }],
      retired_versions: [2],
    });
    await eventually(
      async () => failure !== undefined || seen.slice(-3).join() === '1,1,1',
      20_000,
      'serving to read version 1 again',
    );
    stop = true;
    await loop;
    assert.equal(failure, undefined, String(failure));
    // Version 2 until serving saw the rollback, version 1 from then on: never back and forth.
    assert.match(seen.join(), /^(2,)+1(,1)*$/);

    state = await detail(catalog);
    assert.deepEqual(
      [
        state.variants[0]!.read_version,
        state.variants[0]!.write_version,
        state.variants[0]!.previous_read_version,
      ],
      [1, 1, null],
    );
    const byVersion = new Map(state.versions.map((v) => [v.version, v]));
    assert.equal(byVersion.get(1)!.status, 'SERVING');
    assert.equal(byVersion.get(2)!.status, 'RETIRED');
    assert.ok(byVersion.get(2)!.rolled_back_at !== null);

    // Nothing to go back to.
    const twice = await rollback(catalog);
    assertError(twice, 409, 'FAILED_PRECONDITION', 'model_name');
    assert.match(twice.error.message, /no previous version to roll back to/);

    // A third version; its previous one (1) past the grace period is refused, then swept away.
    await resetWith(catalog, data, 3);
    await sql.query(
      `UPDATE vss_versions SET retired_at = now() - interval '2 hours'
        WHERE entity = $1 AND model_name = $2 AND version = 1`,
      [catalog.entity, catalog.modelName],
    );
    const late = await rollback(catalog);
    assertError(late, 409, 'FAILED_PRECONDITION', 'model_name');
    assert.match(
      late.error.message,
      /cannot be rolled back to version 1: version 1 was retired at .* its grace period of 3600 s/,
    );
    assert.equal((await detail(catalog)).variants[0]!.read_version, 3, 'the refusal changed nothing');
    const dropped = await world.engine.sweepNow();
    assert.deepEqual(dropped, [`${catalog.entity}/${catalog.modelName}@1`]);
    state = await detail(catalog);
    assert.equal(state.versions.find((v) => v.version === 1)!.status, 'DROPPED');
    assert.equal(
      state.versions.find((v) => v.version === 2)!.status,
      'RETIRED',
      'version 2 is within its grace period',
    );
    const collections = await vectorDb.listCollections();
    assert.ok(!collections.includes(collectionName(catalog.entity, catalog.modelName, 1)));
    assert.ok(collections.includes(collectionName(catalog.entity, catalog.modelName, 2)));
  });

  it('rolls back by itself when the live recall of the served version stays below min_recall', async () => {
    const { data, catalog } = await newCatalog();
    await resetWith(catalog, data, 1);
    await resetWith(catalog, data, 2);

    // A real-time update while version 2 serves reaches version 1 too, kept for a rollback.
    await queue.publish(
      world.settings.realtimeTopic,
      Buffer.from(
        JSON.stringify({
          timestamp: Date.now(),
          entity_label: catalog.entity,
          data: [{ id: 'c3', label: 'brand', value: 'zz' }],
        }),
      ),
      { key: 'c3' },
    );
    const brandIn = async (version: number) =>
      (
        await vectorDb.getPoints(collectionName(catalog.entity, catalog.modelName, version), ['c3'], {
          withVector: false,
        })
      )[0]?.payload?.brand;
    await eventually(async () => (await brandIn(2)) === 'zz', 20_000, 'the update on the served version');
    await eventually(async () => (await brandIn(1)) === 'zz', 20_000, 'the update on the kept version');

    // Serving's samples of version 2 (recorded as serving records them).
    const key = { entity: catalog.entity, modelName: catalog.modelName, variant: 'all' };
    const samples = async (version: number, recall: number) => {
      for (let i = 0; i < 6; i++) await world.store.liveRecall.record(key, version, recall);
    };
    // Version 2 has served for a whole window (1 s): good live recall leaves it serving.
    const flipped = (await world.store.versions.get({ ...catalog, version: 2 })).indexedAt!.getTime();
    await eventually(async () => Date.now() - flipped > 1_500, 5_000, 'a whole window of version 2');
    await samples(2, 0.99);
    assert.deepEqual(await world.engine.watchNow(), []);
    assert.equal((await detail(catalog)).variants[0]!.read_version, 2, 'good live recall: no rollback');

    // Low live recall over the window: rolled back.
    let rolled: string[] = [];
    await eventually(
      async () => {
        await samples(2, 0.3);
        rolled = await world.engine.watchNow();
        return rolled.length > 0;
      },
      20_000,
      'the watch to roll the model back',
    );
    assert.deepEqual(rolled, [`${catalog.entity}/${catalog.modelName}`]);
    const state = await detail(catalog);
    assert.equal(state.variants[0]!.read_version, 1);
    assert.ok(state.versions.find((v) => v.version === 2)!.rolled_back_at !== null);
    const { body } = await world.metrics.scrape();
    assert.match(
      body,
      new RegExp(`vss_rollbacks_total\\{entity="${catalog.entity}",model="m",reason="live_recall"\\} 1\\b`),
    );
    // Back on version 1 there is nothing further to roll back to: the watch leaves it.
    await samples(1, 0.1);
    assert.deepEqual(await world.engine.watchNow(), []);
  });
});
