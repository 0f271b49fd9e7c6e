/**
 * The real-time processor on one SQL adapter with the embedded vector DB: aggregator rows, ordering
 * by timestamp, membership and Search, resets, redelivery, rejections and transient failures.
 * realtime-pglite.test.ts and realtime-postgres.test.ts run it on each adapter.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../../src/platform/logging/index.js';
import type { SqlClient } from '../../../src/platform/sql/index.js';
import { RealtimeProcessor } from '../../../src/vss/consumers/realtime-processor.js';
import { startVssServing } from '../../../src/vss/serving/index.js';
import { openVssStore, tableName, type VssStore } from '../../../src/vss/store/index.js';
import { eventually } from '../../support/servers.js';
import { Client } from '../serving/harness.js';
import { FlakyVectorDb } from './realtime-flaky-vector-db.js';
import {
  ingestedVersion,
  MODEL,
  openRealtimeWorld,
  type RealtimeWorld,
  realtimeEvent,
  type SeedPoint,
  serveVersion,
} from './realtime-world.js';

export interface RealtimeSuiteTarget {
  name: string;
  open(): Promise<SqlClient>;
  skip?: string | false;
}

/** A world whose variants both serve version 1 (every point written). */
async function servingWorld(store: VssStore, seed?: Parameters<RealtimeWorld['writeVersion']>[1]) {
  const world = await openRealtimeWorld(store);
  await ingestedVersion(store, world.entity, 1);
  await world.writeVersion(1, seed);
  await serveVersion(store, world.entity, 'organic', 1);
  await serveVersion(store, world.entity, 'live', 1);
  return world;
}

export function realtimeSuite(target: RealtimeSuiteTarget): void {
  describe(`vss real-time processor on ${target.name}`, { skip: target.skip ?? false }, () => {
    let sql: SqlClient;
    let store: VssStore;
    before(async () => {
      sql = await target.open();
      store = await openVssStore(sql);
    });
    after(async () => {
      await sql?.close();
    });

    test('aggregator rows: a column per new label, values per id, copied into the points that exist', async () => {
      const world = await servingWorld(store);
      try {
        const outcomes = await world.deliver(
          realtimeEvent(world.entity, 100, [
            ['p0', 'is_live', 'true'],
            ['p0', 'brand', 'acme'],
            ['p1', 'brand', 'zen'],
            ['ghost', 'brand', 'none'],
          ]),
        );
        assert.deepEqual(outcomes, [undefined]);
        const table = tableName(world.aggregatorTable, 'aggregator_table');
        assert.deepEqual([...(await store.entityTables.columns(table))].sort(), ['brand', 'id', 'is_live']);
        const rows = await store.aggregator.read(world.aggregatorTable, ['p0', 'p1', 'ghost']);
        assert.deepEqual(Object.fromEntries(rows), {
          p0: { is_live: 'true', brand: 'acme' },
          p1: { brand: 'zen' },
          ghost: { brand: 'none' },
        });
        const payloads = await world.payloads(1, ['p0', 'p1', 'ghost']);
        assert.equal(payloads.has('ghost'), false, 'no point is created for an id without one');
        assert.deepEqual(payloads.get('p0'), {
          is_live: 'true',
          brand: 'acme',
          to_be_indexed_organic: true,
          to_be_indexed_live: true,
        });
        assert.deepEqual(payloads.get('p1'), {
          brand: 'zen',
          to_be_indexed_organic: true,
          to_be_indexed_live: false,
        });

        await world.deliver(realtimeEvent(world.entity, 101, [['p1', 'price_band', 'low']]));
        assert.deepEqual([...(await store.entityTables.columns(table))].sort(), [
          'brand',
          'id',
          'is_live',
          'price_band',
        ]);
        assert.equal((await world.payloads(1, ['p1'])).get('p1')?.price_band, 'low');
      } finally {
        await world.close();
      }
    });

    test('an older timestamp never overwrites a newer value, in one batch or across batches', async () => {
      const world = await servingWorld(store);
      const color = async () => ({
        row: (await store.aggregator.read(world.aggregatorTable, ['p2'])).get('p2')?.color,
        point: (await world.payloads(1, ['p2'])).get('p2')?.color,
      });
      try {
        await world.deliver(
          realtimeEvent(world.entity, 200, [['p2', 'color', 'red']]),
          realtimeEvent(world.entity, 100, [['p2', 'color', 'blue']]),
        );
        assert.deepEqual(await color(), { row: 'red', point: 'red' }, 'newest of the batch, not the last');
        await world.deliver(realtimeEvent(world.entity, 150, [['p2', 'color', 'green']]));
        assert.deepEqual(await color(), { row: 'red', point: 'red' }, 'a later batch with an older event');
        await world.deliver(realtimeEvent(world.entity, 100, [['p2', 'size', 'L']]));
        assert.equal(
          (await store.aggregator.read(world.aggregatorTable, ['p2'])).get('p2')?.size,
          'L',
          'timestamps are per label',
        );
        await world.deliver(realtimeEvent(world.entity, 200, [['p2', 'color', 'black']]));
        assert.deepEqual(await color(), { row: 'black', point: 'black' }, 'an equal timestamp applies');
        await world.deliver(
          realtimeEvent(world.entity, 300, [['p2', 'color', 'white']]),
          realtimeEvent(world.entity, 300, [['p2', 'color', 'grey']]),
        );
        assert.deepEqual(await color(), { row: 'grey', point: 'grey' }, 'equal in one batch: the later');
      } finally {
        await world.close();
      }
    });

    test('a label change moves a candidate into and out of the variant Search results', async () => {
      // Even points start live; p3 (odd) is not.
      const world = await servingWorld(
        store,
        (i): SeedPoint => ({ payload: i % 2 === 0 ? { is_live: 'true' } : {} }),
      );
      const server = await startVssServing({
        sql,
        vectorDb: world.db,
        host: '127.0.0.1',
        port: 0,
        logger: createLogger('vss-realtime-test', { level: 'silent' }),
        refreshIntervalMs: 0,
        pageTokenSecret: 'test-secret',
      });
      const client = new Client(`127.0.0.1:${server.port}`);
      const ids = async (variant: string) => {
        const { results } = await client.search({
          entity: world.entity,
          modelName: MODEL,
          variant,
          queries: [
            { embedding: { values: Array.from(world.fixture.vector(3)) }, pageToken: '', filters: [] },
          ],
          pageSize: 5,
        });
        return results[0]!.candidates.map((c) => c.id);
      };
      try {
        assert.ok(!(await ids('live')).includes('p3'));
        assert.equal((await ids('organic'))[0], 'p3');

        await world.deliver(realtimeEvent(world.entity, 1, [['p3', 'is_live', 'true']]));
        await eventually(async () => (await ids('live'))[0] === 'p3', 10_000, 'p3 to join the live results');

        await world.deliver(realtimeEvent(world.entity, 2, [['p3', 'is_live', 'false']]));
        await eventually(
          async () => !(await ids('live')).includes('p3'),
          10_000,
          'p3 to leave the live results',
        );
        assert.equal(
          (await ids('organic'))[0],
          'p3',
          'a variant whose rule does not read the label is unchanged',
        );
      } finally {
        client.close();
        await server.stop();
        await world.close();
      }
    });

    test('membership is recomputed only when a label the rule reads changes, from the raw index flag', async () => {
      const world = await servingWorld(
        store,
        (i): SeedPoint => ({
          payload: i === 5 ? { is_live: 'true' } : i === 6 ? { price: 12 } : {},
          indexed: i !== 8,
        }),
      );
      try {
        // p5 is live; its raw flag turns false in the store (as a later embedding event would set it).
        await store.embeddings.setMembership(world.embeddingsTable, {
          modelName: MODEL,
          version: 1,
          ids: ['p5'],
          variant: 'live',
          toBeIndexed: false,
        });
        await world.deliver(realtimeEvent(world.entity, 10, [['p5', 'brand', 'acme']]));
        let p5 = (await world.payloads(1, ['p5'])).get('p5');
        assert.equal(
          p5?.to_be_indexed_live,
          true,
          'brand is not read by the rule: the flag is not recomputed',
        );
        assert.equal(p5?.brand, 'acme');
        await world.deliver(realtimeEvent(world.entity, 11, [['p5', 'is_live', 'true']]));
        p5 = (await world.payloads(1, ['p5'])).get('p5');
        assert.equal(p5?.to_be_indexed_live, false, 'is_live is read: the raw flag (false) decides');
        assert.equal(p5?.to_be_indexed_organic, true);

        // p8 was not to be indexed: no attribute makes it a member.
        await world.deliver(realtimeEvent(world.entity, 12, [['p8', 'is_live', 'true']]));
        assert.equal((await world.payloads(1, ['p8'])).get('p8')?.to_be_indexed_live, false);

        // Numeric text is written as a number whatever the point held (range filters match numbers
        // only); other text stays text.
        await world.deliver(
          realtimeEvent(world.entity, 13, [
            ['p6', 'price', '9'],
            ['p7', 'price', '9'],
            ['p5', 'price', '009'],
          ]),
        );
        const prices = await world.payloads(1, ['p5', 'p6', 'p7']);
        assert.equal(prices.get('p6')?.price, 9);
        assert.equal(prices.get('p7')?.price, 9);
        assert.equal(prices.get('p5')?.price, '009');
      } finally {
        await world.close();
      }
    });

    test('during a reset the read version and the newer write version both receive the update', async () => {
      const world = await servingWorld(store);
      try {
        // The reset: version 2 is being ingested (half of its points so far) while version 1 serves.
        await store.versions.create({ entity: world.entity, modelName: MODEL, version: 2 });
        for (const variant of ['organic', 'live']) {
          const key = { entity: world.entity, modelName: MODEL, variant };
          assert.ok(await store.variants.transition(key, 'READY', 'INGESTING', { writeVersion: 2 }));
        }
        const firstHalf = Array.from({ length: 20 }, (_, i) => i);
        await world.writeVersion(2, () => ({}), firstHalf);

        await world.deliver(
          realtimeEvent(world.entity, 5, [
            ['p4', 'is_live', 'true'],
            ['p30', 'is_live', 'true'],
          ]),
        );
        const v1 = await world.payloads(1, ['p4', 'p30']);
        const v2 = await world.payloads(2, ['p4', 'p30']);
        assert.equal(v1.get('p4')?.to_be_indexed_live, true);
        assert.equal(v1.get('p30')?.to_be_indexed_live, true);
        assert.equal(v2.get('p4')?.to_be_indexed_live, true);
        assert.equal(v2.get('p4')?.is_live, 'true');
        assert.equal(v2.has('p30'), false, 'not ingested into version 2 yet: skipped');

        // Ingested and indexing, not flipped yet: still both.
        await store.versions.transition(
          { entity: world.entity, modelName: MODEL, version: 2 },
          'INGESTING',
          'INGESTED',
        );
        const key = { entity: world.entity, modelName: MODEL, variant: 'live' };
        await store.variants.transition(key, 'INGESTING', 'INGESTED');
        await store.variants.transition(key, 'INGESTED', 'INDEXING');
        await world.deliver(realtimeEvent(world.entity, 6, [['p4', 'is_live', 'false']]));
        assert.equal((await world.payloads(1, ['p4'])).get('p4')?.to_be_indexed_live, false);
        assert.equal((await world.payloads(2, ['p4'])).get('p4')?.to_be_indexed_live, false);

        // A failed version its variant still writes receives the update too: its operation may be
        // retried and flip to it.
        await store.versions.create({ entity: world.entity, modelName: MODEL, version: 3 });
        await store.versions.fail(
          { entity: world.entity, modelName: MODEL, version: 3 },
          'INGESTING',
          'test',
        );
        const organic = { entity: world.entity, modelName: MODEL, variant: 'organic' };
        await store.variants.transition(organic, 'INGESTING', 'INGESTING', { writeVersion: 3 });
        await world.writeVersion(3, () => ({}), [4]);
        await world.deliver(realtimeEvent(world.entity, 7, [['p4', 'brand', 'acme']]));
        assert.equal((await world.payloads(3, ['p4'])).get('p4')?.brand, 'acme');
        assert.equal((await world.payloads(1, ['p4'])).get('p4')?.brand, 'acme');
      } finally {
        await world.close();
      }
    });

    test('a batch applied twice has the effect of applying it once', async () => {
      const world = await servingWorld(store);
      const ids = ['p10', 'p11', 'p12'];
      const batch = [
        realtimeEvent(world.entity, 50, [
          ['p10', 'is_live', 'true'],
          ['p11', 'brand', 'acme'],
        ]),
        realtimeEvent(world.entity, 40, [
          ['p10', 'is_live', 'false'],
          ['p12', 'brand', 'zen'],
        ]),
        realtimeEvent(world.entity, 60, [['p12', 'is_live', 'true']]),
      ];
      const snapshot = async () => ({
        rows: (await sql.query(`SELECT * FROM "${world.aggregatorTable}" ORDER BY id`)).rows,
        points: Object.fromEntries(await world.payloads(1, ids)),
      });
      try {
        assert.deepEqual(await world.deliver(...batch), [undefined, undefined, undefined]);
        const once = await snapshot();
        const written = world.processor.totals.pointsUpdated;
        assert.deepEqual(await world.deliver(...batch), [undefined, undefined, undefined]);
        assert.deepEqual(await snapshot(), once);
        assert.equal(world.processor.totals.pointsUpdated, written, 'nothing rewritten the second time');
        assert.equal(once.points.p10?.to_be_indexed_live, true);
        assert.equal(once.points.p12?.to_be_indexed_live, true);
      } finally {
        await world.close();
      }
    });

    test('the original shape applies like the design shape', async () => {
      const world = await servingWorld(store);
      try {
        await world.deliver({
          timestamp: '70',
          type: 'catalog_update',
          entity: world.entity,
          data: [
            {
              id: 'p13',
              data: [
                { label: 'is_live', value: true },
                { label: 'stock', value: 3 },
              ],
            },
          ],
        });
        assert.deepEqual((await store.aggregator.read(world.aggregatorTable, ['p13'])).get('p13'), {
          is_live: 'true',
          stock: '3',
        });
        assert.equal((await world.payloads(1, ['p13'])).get('p13')?.to_be_indexed_live, true);
      } finally {
        await world.close();
      }
    });

    test('an entity without a store is rejected by name; the rest of the batch applies', async () => {
      const world = await servingWorld(store);
      try {
        const outcomes = await world.deliver(
          realtimeEvent('no_such_entity', 1, [['p0', 'brand', 'x']]),
          realtimeEvent(world.entity, 1, [['p14', 'brand', 'kept']]),
        );
        assert.equal(outcomes[1], undefined);
        assert.match(outcomes[0] ?? '', /unknown entity "no_such_entity": it has no store/);
        assert.equal((await world.payloads(1, ['p14'])).get('p14')?.brand, 'kept');
      } finally {
        await world.close();
      }
    });

    test('an unavailable vector DB or SQL database throws (the runner retries), and the retry applies', async () => {
      const world = await servingWorld(store);
      try {
        const flaky = new FlakyVectorDb(world.db);
        const processor = new RealtimeProcessor({ store, vectorDb: flaky });
        const event = processor.parse(
          new TextEncoder().encode(
            JSON.stringify(realtimeEvent(world.entity, 9, [['p15', 'is_live', 'true']])),
          ),
        );
        flaky.failing = true;
        await assert.rejects(processor.apply([event]), { code: 'UNAVAILABLE' });
        flaky.failing = false;
        assert.deepEqual(await processor.apply([event]), [undefined]);
        assert.equal((await world.payloads(1, ['p15'])).get('p15')?.to_be_indexed_live, true);

        const closed = await target.open();
        const closedStore = await openVssStore(closed);
        await closed.close();
        const cut = new RealtimeProcessor({ store: closedStore, vectorDb: world.db });
        await assert.rejects(cut.apply([event]));
      } finally {
        await world.close();
      }
    });
  });
}
