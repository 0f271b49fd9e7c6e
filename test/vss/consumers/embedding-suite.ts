/**
 * The embedding processor against a real SQL store (PGlite or PostgreSQL) and the embedded vector
 * DB: what each event shape and operation writes, variant membership, ordering within a batch,
 * redelivery, TTL expiry and the events refused against the store. embedding-pglite.test.ts and
 * embedding-postgres.test.ts run it on each adapter.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seededRandom } from '../../../src/platform/random.js';
import type { SqlClient } from '../../../src/platform/sql/index.js';
import { ExpirySweep } from '../../../src/vss/consumers/expiry-sweep.js';
import { openVssStore, type VssStore } from '../../../src/vss/store/index.js';
import { eventually } from '../../support/servers.js';
import {
  DIMENSION,
  type EventSpec,
  embeddingEvent,
  type IngestionWorld,
  MODEL,
  openIngestionWorld,
  vectorOf,
} from './ingestion-world.js';

export interface SuiteTarget {
  name: string;
  open(): Promise<SqlClient>;
  skip?: string | false;
}

const f32 = (values: readonly number[]) => [...Float32Array.from(values)];

/** A seeded random sequence of valid events over a few ids: every operation, flags and payloads. */
function randomEvents(seed: number, count: number): EventSpec[] {
  const next = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const events: EventSpec[] = [];
  for (let i = 0; i < count; i++) {
    const op = pick(['A', 'A', 'A', 'D', 'P', 'P'] as const);
    const named = (['organic', 'live', 'brand_a'] as const).filter(() => next() < 0.7);
    const versions = Object.fromEntries(named.map((v) => [v, 1]));
    const index = next() < 0.2 ? null : Object.fromEntries(named.map((v) => [v, next() < 0.7]));
    const payload: Record<string, string> = {};
    if (next() < 0.5) payload.is_live = pick(['true', 'false']);
    if (next() < 0.5) payload.brand = pick(['a', 'b']);
    events.push({
      id: `r${Math.floor(next() * 5)}`,
      op,
      vector: op === 'A' ? vectorOf(1000 + i) : undefined,
      search: op === 'A' && next() < 0.3 ? vectorOf(5000 + i) : undefined,
      versions,
      index,
      payload: op === 'D' ? null : payload,
    });
  }
  return events;
}

export function embeddingSuite(target: SuiteTarget): void {
  describe(`embedding processor on ${target.name}`, { skip: target.skip ?? false }, () => {
    let sql: SqlClient;
    let store: VssStore;
    const worlds: IngestionWorld[] = [];
    const open = async (options?: Parameters<typeof openIngestionWorld>[1]) => {
      const world = await openIngestionWorld(store, options);
      worlds.push(world);
      return world;
    };
    before(async () => {
      sql = await target.open();
      store = await openVssStore(sql);
    });
    after(async () => {
      for (const world of worlds) await world.close();
      await sql?.close();
    });

    test('both shapes land in the store and the collection, and each variant search finds its members', async () => {
      const world = await open();
      const [v1, v2, s2] = [vectorOf(1), vectorOf(2), vectorOf(3)];
      const outcomes = await world.deliver(
        embeddingEvent(world, { id: 'd1', vector: v1, payload: { brand: 'a', is_live: 'true' } }),
        embeddingEvent(world, { id: 12, vector: v2, search: s2, payload: { is_live: 'false' } }, 'original'),
      );
      assert.deepEqual(outcomes, [undefined, undefined]);

      const d1 = await world.row('d1');
      assert.deepEqual([...d1!.embedding], f32(v1));
      assert.deepEqual([...d1!.searchEmbedding], f32(v1), 'the search embedding defaults to the index one');
      assert.deepEqual(d1!.toBeIndexed, { organic: true, live: true, brand_a: true });
      assert.equal(d1!.expiresAt, null);
      const r12 = await world.row('12');
      assert.deepEqual([...r12!.searchEmbedding], f32(s2));

      const p1 = await world.point('d1');
      assert.deepEqual([...p1!.vector!], f32(v1));
      assert.deepEqual(p1!.payload, {
        brand: 'a',
        is_live: 'true',
        to_be_indexed_organic: true,
        to_be_indexed_live: true,
        to_be_indexed_brand_a: true,
      });
      const p2 = await world.point('12');
      assert.deepEqual(p2!.payload, {
        is_live: 'false',
        to_be_indexed_organic: true,
        to_be_indexed_live: false,
        to_be_indexed_brand_a: false,
      });
      assert.deepEqual((await world.search('organic', v1)).sort(), ['12', 'd1']);
      assert.deepEqual(await world.search('live', v2), ['d1']);
      assert.deepEqual(await world.search('brand_a', v2), ['d1']);

      const info = await world.db.collectionInfo(world.collection());
      assert.equal(info.dimension, DIMENSION);
      assert.equal(info.distance, 'COSINE');
      assert.equal(info.points, 2);
    });

    test('A adds and replaces, P changes the payload only, D deletes the row and the point', async () => {
      const world = await open();
      const [v1, v2] = [vectorOf(11), vectorOf(12)];
      await world.deliver(
        embeddingEvent(world, { id: 'p1', vector: v1, payload: { brand: 'b', is_live: 'false' } }),
      );
      assert.deepEqual(await world.search('brand_a', v1), []);

      // A replaces the vector and the whole payload (is_live is gone: its default applies).
      await world.deliver(embeddingEvent(world, { id: 'p1', vector: v2, payload: { brand: 'a' } }));
      let point = await world.point('p1');
      assert.deepEqual([...point!.vector!], f32(v2));
      assert.equal(point!.payload!.is_live, undefined);
      assert.equal(point!.payload!.to_be_indexed_brand_a, true);
      assert.equal(point!.payload!.to_be_indexed_live, false);

      // P merges its payload and recomputes membership; the vector and the row's embedding stay.
      await world.deliver(
        embeddingEvent(world, { id: 'p1', op: 'P', payload: { is_live: 'true' }, index: null }),
      );
      point = await world.point('p1');
      assert.deepEqual([...point!.vector!], f32(v2));
      assert.equal(point!.payload!.brand, 'a');
      assert.equal(point!.payload!.is_live, 'true');
      assert.equal(point!.payload!.to_be_indexed_live, true);
      assert.deepEqual(await world.search('live', v2), ['p1']);
      assert.deepEqual([...(await world.row('p1'))!.embedding], f32(v2));

      // P with an index map sets the row's flags too; flags it leaves out stay.
      await world.deliver(
        embeddingEvent(world, {
          id: 'p1',
          op: 'P',
          versions: { live: 1 },
          index: { live: false },
          payload: {},
        }),
      );
      assert.deepEqual((await world.row('p1'))!.toBeIndexed, { organic: true, live: false, brand_a: true });
      assert.equal((await world.point('p1'))!.payload!.to_be_indexed_live, false);
      assert.deepEqual(await world.search('live', v2), []);

      await world.deliver(embeddingEvent(world, { id: 'p1', op: 'D' }));
      assert.equal(await world.row('p1'), undefined);
      assert.equal(await world.point('p1'), undefined);
      assert.deepEqual(await world.search('organic', v2), []);

      // A payload update or a delete of an id that is not there is applied and changes nothing.
      const outcomes = await world.deliver(
        embeddingEvent(world, { id: 'p1', op: 'P', payload: { brand: 'a' } }),
        embeddingEvent(world, { id: 'never', op: 'D' }),
      );
      assert.deepEqual(outcomes, [undefined, undefined]);
      assert.equal(await world.point('p1'), undefined);
      assert.equal(await world.row('p1'), undefined);
    });

    test('membership: index flag AND vss_filter on the event payload over the aggregator row, defaults applied', async () => {
      const world = await open();
      await store.aggregator.upsert(world.aggregatorTable, [
        { id: 'q1', label: 'is_live', value: 'true' },
        { id: 'q1', label: 'brand', value: 'a' },
        { id: 'q2', label: 'is_live', value: 'false' },
      ]);
      const v = vectorOf(21);
      await world.deliver(
        // attributes from the aggregator row only
        embeddingEvent(world, { id: 'q1', vector: v }),
        // the event payload wins over the aggregator row
        embeddingEvent(world, { id: 'q2', vector: v, payload: { is_live: 'true' } }),
        // neither: `live` takes its default "false", `brand_a` has no default and fails
        embeddingEvent(world, { id: 'q3', vector: v }),
        // the filters hold but the index flag is false
        embeddingEvent(world, {
          id: 'q4',
          vector: v,
          index: { organic: false, live: true, brand_a: true },
          payload: { is_live: 'true', brand: 'a' },
        }),
      );
      const flags = async (id: string) => {
        const payload = (await world.point(id))!.payload!;
        return [payload.to_be_indexed_organic, payload.to_be_indexed_live, payload.to_be_indexed_brand_a];
      };
      assert.deepEqual(await flags('q1'), [true, true, true]);
      assert.equal(
        (await world.point('q1'))!.payload!.brand,
        'a',
        'the aggregator attributes are in the payload',
      );
      assert.deepEqual(await flags('q2'), [true, true, false]);
      assert.deepEqual(await flags('q3'), [true, false, false]);
      assert.deepEqual(await flags('q4'), [false, true, true]);
      assert.deepEqual((await world.row('q4'))!.toBeIndexed, { organic: false, live: true, brand_a: true });
      assert.deepEqual((await world.search('live', v)).sort(), ['q1', 'q2', 'q4']);

      // An event naming only `organic` keeps the others' raw flags and recomputes their membership.
      await world.deliver(
        embeddingEvent(world, { id: 'q4', vector: v, versions: { organic: 1 }, payload: { brand: 'a' } }),
      );
      assert.deepEqual((await world.row('q4'))!.toBeIndexed, { organic: true, live: true, brand_a: true });
      assert.deepEqual(
        await flags('q4'),
        [true, false, true],
        'is_live is gone from the payload: live is out',
      );
    });

    test('events of one id in one batch have the effect of applying them one by one (seeded sequences)', async () => {
      for (const seed of [1, 2, 3]) {
        const batched = await open();
        const oneByOne = await open();
        const specs = randomEvents(seed, 40);
        const outcomes = await batched.deliver(...specs.map((spec) => embeddingEvent(batched, spec)));
        assert.ok(
          outcomes.every((o) => o === undefined),
          String(outcomes),
        );
        for (const spec of specs) await oneByOne.deliver(embeddingEvent(oneByOne, spec));
        const ids = ['r0', 'r1', 'r2', 'r3', 'r4'];
        assert.deepEqual(await batched.snapshot(ids), await oneByOne.snapshot(ids), `seed ${seed}`);
      }
    });

    test('a batch applied twice has the effect of applying it once', async () => {
      const world = await open();
      const specs = randomEvents(9, 30);
      const messages = specs.map((spec) => embeddingEvent(world, spec));
      await world.deliver(...messages);
      const ids = ['r0', 'r1', 'r2', 'r3', 'r4'];
      const once = await world.snapshot(ids);
      // Distinct events in the ledger: the second application records none it did not have.
      const ledger = async () =>
        (
          await sql.query<{ count: number }>(
            `SELECT count(DISTINCT k)::integer AS count
               FROM vss_ingestion_batches, unnest(event_keys) AS k WHERE entity = $1`,
            [world.entity],
          )
        ).rows[0]!.count;
      const recorded = await ledger();
      await world.deliver(...messages);
      assert.deepEqual(await world.snapshot(ids), once);
      assert.equal(await ledger(), recorded);
      assert.equal(
        (await world.db.collectionInfo(world.collection())).points,
        Object.keys(once.points).length,
      );
    });

    test('TTL: rows expire, are hidden from reads, swept, and come back when written again', async () => {
      const world = await open({ ttlSeconds: 3600 });
      const before = (await sql.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
      await world.deliver(
        embeddingEvent(world, { id: 't1', vector: vectorOf(31) }),
        embeddingEvent(world, { id: 't2', vector: vectorOf(32) }),
      );
      const t1 = await world.row('t1');
      assert.ok(t1!.expiresAt !== null);
      const lifetime = (t1!.expiresAt!.getTime() - before.getTime()) / 1000;
      assert.ok(lifetime >= 3600 && lifetime < 3600 + 600, `expires ${lifetime} s after the write`);

      const expire = (id: string) =>
        sql.query(
          `UPDATE ${world.embeddingsTable} SET expires_at = now() - interval '1 second' WHERE id = $1`,
          [id],
        );
      const stored = async (id: string) =>
        (
          await sql.query<{ count: number }>(
            `SELECT count(*)::integer AS count FROM ${world.embeddingsTable} WHERE id = $1`,
            [id],
          )
        ).rows[0]!.count;
      await expire('t1');
      assert.equal(await world.row('t1'), undefined, 'an expired row is never read');
      assert.equal(await store.embeddings.count(world.embeddingsTable, MODEL, 1), 1);
      assert.equal(await stored('t1'), 1, 'still stored until swept');

      const sweep = new ExpirySweep(store);
      assert.ok((await sweep.sweepOnce()) >= 1);
      assert.equal(await stored('t1'), 0);
      assert.ok((await world.row('t2')) !== undefined);

      // The periodic sweep, started and stopped.
      const periodic = new ExpirySweep(store, { intervalMs: 5 });
      periodic.start();
      try {
        await expire('t2');
        await eventually(async () => (await stored('t2')) === 0, 10_000, 'the periodic sweep');
      } finally {
        await periodic.stop();
      }

      // An expired id written again is live again.
      await world.deliver(embeddingEvent(world, { id: 't1', vector: vectorOf(33) }));
      assert.deepEqual([...(await world.row('t1'))!.embedding], f32(vectorOf(33)));

      // Without the embedding store enabled, the TTL does not apply.
      const off = await open({ ttlSeconds: 3600, embeddingStoreEnabled: false });
      await off.deliver(embeddingEvent(off, { id: 'k1', vector: vectorOf(34) }));
      assert.equal((await off.row('k1'))!.expiresAt, null);
    });

    test('events that can never apply are refused with a reason naming the field; the rest of the batch applies', async () => {
      const world = await open();
      const v = vectorOf(41);
      const outcomes = await world.deliver(
        { ...(embeddingEvent(world, { id: 'x1', vector: v }) as object), model_name: 'nope' },
        embeddingEvent(world, { id: 'x2', vector: v, versions: { ghost: 1 }, index: null }),
        embeddingEvent(world, {
          id: 'x3',
          vector: v,
          versions: { organic: 1 },
          index: { organic: true, ghost: true },
        }),
        embeddingEvent(world, { id: 'x4', vector: [1, 2, 3] }),
        embeddingEvent(world, { id: 'x5', vector: v, search: [1, 2, 3, 4, 5] }),
        embeddingEvent(world, { id: 'x6', vector: v, versions: { organic: 2 } }),
        embeddingEvent(world, { id: 'ok', vector: v }),
        'not json',
      );
      assert.match(outcomes[0]!, /model .*\/nope is not registered \(field model_name\)/);
      assert.match(outcomes[1]!, /^index_space\.variants_version_map\.ghost: model .* has no variant ghost/);
      assert.match(outcomes[2]!, /^index_space\.variants_index_map\.ghost: model .* has no variant ghost/);
      assert.match(outcomes[3]!, /^index_space\.embedding has 3 values, but model .* has dimension 4/);
      assert.match(outcomes[4]!, /^search_space\.embedding has 5 values/);
      assert.match(
        outcomes[5]!,
        /^index_space\.variants_version_map\.organic: variant organic writes version 1/,
      );
      assert.equal(outcomes[6], undefined);
      assert.match(outcomes[7]!, /not JSON/);
      for (const id of ['x1', 'x2', 'x3', 'x4', 'x5', 'x6']) {
        assert.equal(await world.row(id), undefined, `${id} wrote nothing`);
        assert.equal(await world.point(id), undefined, `${id} wrote nothing`);
      }
      assert.ok((await world.point('ok')) !== undefined);
    });

    test('a variant registered after the catalog was read is accepted at once', async () => {
      const world = await open();
      await world.deliver(embeddingEvent(world, { id: 'y1', vector: vectorOf(51) }));
      const key = { entity: world.entity, modelName: MODEL, variant: 'fresh' };
      await store.variants.create({
        ...key,
        vssFilter: {},
        vectorDbType: 'EMBEDDED',
        vectorDbConfig: {},
        jobFrequency: 'FREQ_1D',
      });
      await store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: 1 });
      const outcomes = await world.deliver(
        embeddingEvent(world, { id: 'y2', vector: vectorOf(52), versions: { organic: 1, fresh: 1 } }),
      );
      assert.deepEqual(outcomes, [undefined]);
      assert.equal((await world.point('y2'))!.payload!.to_be_indexed_fresh, true);
    });

    test('a collection that exists with another dimension refuses the adds written to it', async () => {
      const world = await open();
      await world.newVersion(2);
      await world.db.createCollection({ name: world.collection(2), dimension: 8, distance: 'COSINE' });
      const outcomes = await world.deliver(
        embeddingEvent(world, { id: 'z1', vector: vectorOf(61), versions: { organic: 2 }, version: 2 }),
      );
      assert.match(outcomes[0]!, /exists with dimension 8 .* the model has dimension 4/);
    });

    test('a variant on another vector DB gets its index flag stored but no point flag here', async () => {
      const world = await open();
      const outcomes = await world.deliver(
        embeddingEvent(world, {
          id: 'w1',
          vector: vectorOf(71),
          versions: { organic: 1, remote: 1 },
          index: { organic: true, remote: true },
        }),
      );
      assert.deepEqual(outcomes, [undefined]);
      assert.deepEqual((await world.row('w1'))!.toBeIndexed, { organic: true, remote: true });
      const payload = (await world.point('w1'))!.payload!;
      assert.equal(payload.to_be_indexed_organic, true);
      assert.equal(payload.to_be_indexed_remote, undefined);
    });
  });
}
