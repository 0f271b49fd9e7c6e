/**
 * EOF markers and the ingestion record against a real SQL store (PGlite or PostgreSQL): a job
 * completes exactly once, when every partition delivered its marker, with counts that stay exact
 * when markers and events are delivered again. eof-pglite.test.ts and eof-postgres.test.ts run it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EofProcessor } from '../../../src/vss/consumers/eof-processor.js';
import { type IngestionRecord, openVssStore, type VssStore } from '../../../src/vss/store/index.js';
import type { SuiteTarget } from './embedding-suite.js';
import {
  embeddingEvent,
  eofMarker,
  type IngestionWorld,
  MODEL,
  openIngestionWorld,
  PARTITIONS,
  vectorOf,
} from './ingestion-world.js';

export function eofSuite(target: SuiteTarget): void {
  describe(`EOF markers and ingestion records on ${target.name}`, { skip: target.skip ?? false }, () => {
    let store: VssStore;
    let close: () => Promise<void>;
    const worlds: IngestionWorld[] = [];
    const completions: IngestionRecord[] = [];
    const open = async () => {
      const world = await openIngestionWorld(store, { onComplete: (record) => completions.push(record) });
      worlds.push(world);
      return world;
    };
    const completionsOf = (world: IngestionWorld) => completions.filter((r) => r.entity === world.entity);
    const find = (world: IngestionWorld, jobId?: string, version = 1) =>
      store.ingestion.find({ entity: world.entity, modelName: MODEL, version, jobId });
    before(async () => {
      const sql = await target.open();
      store = await openVssStore(sql);
      close = () => sql.close();
    });
    after(async () => {
      for (const world of worlds) await world.close();
      await close?.();
    });

    test('a job completes once every partition delivered its marker; duplicate markers count once', async () => {
      const world = await open();
      const outcomes = await world.deliver(
        embeddingEvent(world, { id: 'e1', vector: vectorOf(1) }),
        embeddingEvent(world, { id: 'e2', vector: vectorOf(2) }),
        embeddingEvent(world, { id: 'e3', vector: vectorOf(3), versions: { ghost: 1 }, index: null }),
        embeddingEvent(world, { id: 'e4', op: 'D' }),
      );
      assert.equal(outcomes.filter((o) => o !== undefined).length, 1);

      assert.deepEqual(await world.deliver(eofMarker(world, 0), eofMarker(world, 1), eofMarker(world, 1)), [
        undefined,
        undefined,
        undefined,
      ]);
      let record = await find(world, 'job-1');
      assert.equal(record!.status, 'INGESTING');
      assert.deepEqual(record!.markedPartitions, [0, 1]);
      assert.equal(record!.counts, null);
      assert.equal(record!.partitions, PARTITIONS);
      assert.equal(completionsOf(world).length, 0);

      await world.deliver(eofMarker(world, 2));
      record = await find(world, 'job-1');
      assert.equal(record!.status, 'COMPLETE');
      assert.deepEqual(record!.counts, { events: 4, applied: 3, rejected: 1, pointsWritten: 2 });
      assert.ok(record!.completedAt instanceof Date);
      assert.equal(completionsOf(world).length, 1);
      assert.deepEqual(completionsOf(world)[0], record);

      // Every marker again, and every event again: nothing changes, nothing completes twice.
      await world.deliver(eofMarker(world, 2), eofMarker(world, 0), eofMarker(world, 1));
      await world.deliver(
        embeddingEvent(world, { id: 'e1', vector: vectorOf(1) }),
        embeddingEvent(world, { id: 'e2', vector: vectorOf(2) }),
      );
      assert.deepEqual(await find(world, 'job-1'), record);
      assert.equal(completionsOf(world).length, 1);

      // The redelivered events stay counted in job-1: the next job does not count them again.
      await world.deliver(
        eofMarker(world, 0, 'job-2'),
        eofMarker(world, 1, 'job-2'),
        eofMarker(world, 2, 'job-2'),
      );
      assert.deepEqual((await find(world, 'job-2'))!.counts, {
        events: 0,
        applied: 0,
        rejected: 0,
        pointsWritten: 0,
      });
    });

    test('counts are exact when events are delivered again, in later batches and within one', async () => {
      const world = await open();
      const events = [
        embeddingEvent(world, { id: 'c1', vector: vectorOf(11) }),
        embeddingEvent(world, { id: 'c2', vector: vectorOf(12), versions: { organic: 1 } }),
        embeddingEvent(world, { id: 'c2', op: 'P', payload: { brand: 'a' } }),
        embeddingEvent(world, { id: 'c1', op: 'D' }),
        embeddingEvent(world, { id: 'c3', vector: [1, 2] }),
      ];
      await world.deliver(...events);
      // A crash before the acknowledgement: the whole batch again, then parts of it twice in one batch.
      await world.deliver(...events);
      await world.deliver(events[0], events[0], events[4], events[2]);
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p)));
      const record = await find(world, 'job-1');
      assert.deepEqual(record!.counts, { events: 5, applied: 4, rejected: 1, pointsWritten: 2 });
    });

    test('events naming their job count in it; the others are claimed by the first job to complete', async () => {
      const world = await open();
      await world.deliver(
        embeddingEvent(world, { id: 'j1', vector: vectorOf(21), jobId: 'job-a' }),
        embeddingEvent(world, { id: 'j2', vector: vectorOf(22), jobId: 'job-a' }),
        embeddingEvent(world, { id: 'j3', vector: vectorOf(23) }),
      );
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p, 'job-b')));
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p, 'job-a')));
      assert.equal((await find(world, 'job-b'))!.counts!.events, 1);
      assert.equal((await find(world, 'job-a'))!.counts!.events, 2);
    });

    test('an event delivered again after its job completed stays in that job, not the next', async () => {
      const world = await open();
      const first = embeddingEvent(world, { id: 'r1', vector: vectorOf(41) });
      await world.deliver(first, embeddingEvent(world, { id: 'r2', vector: vectorOf(42) }));
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p)));
      assert.equal((await find(world, 'job-1'))!.counts!.events, 2);
      // A redelivery of r1 (a crash before its acknowledgement reached the queue), then a new event.
      await world.deliver(first, embeddingEvent(world, { id: 'r3', vector: vectorOf(43) }), first);
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p, 'job-2')));
      assert.deepEqual((await find(world, 'job-2'))!.counts, {
        events: 1,
        applied: 1,
        rejected: 0,
        pointsWritten: 1,
      });
      assert.equal((await find(world, 'job-1'))!.counts!.events, 2, 'the first job keeps its counts');
    });

    test('an event recorded again counts once, with the outcome recorded last', async () => {
      const world = await open();
      const event = (key: string, rejected: boolean) => ({
        entity: world.entity,
        modelName: MODEL,
        version: 1,
        eventKey: key,
        jobId: 'job-o',
        rejected,
        points: rejected ? 0 : 1,
      });
      const dead = 'd'.repeat(32);
      const good = 'a'.repeat(32);
      // Dead-lettered, then replayed and applied; and the other way round, in one batch.
      await store.ingestion.recordEvents([event(dead, true), event(good, false)]);
      await store.ingestion.recordEvents([event(dead, false), event(good, false), event(good, true)]);
      for (let p = 0; p < PARTITIONS; p++)
        await store.ingestion.recordMarker(
          { entity: world.entity, modelName: MODEL, version: 1, jobId: 'job-o', partition: p },
          PARTITIONS,
        );
      assert.deepEqual((await find(world, 'job-o'))!.counts, {
        events: 2,
        applied: 1,
        rejected: 1,
        pointsWritten: 1,
      });
    });

    test('ledger records of concurrent batches count each event once, in its own job', async () => {
      const world = await open();
      const event = (n: number, jobId: string, rejected = false) => ({
        entity: world.entity,
        modelName: MODEL,
        version: 1,
        eventKey: n.toString(16).padStart(32, '0'),
        jobId,
        rejected,
        points: rejected ? 0 : 2,
      });
      // Eight partitions' batches at once (one of them two jobs), then one of them delivered again.
      const batches = Array.from({ length: 8 }, (_, b) =>
        Array.from({ length: 10 }, (_, i) => event(100 * b + i, 'job-c', i === 0)),
      );
      batches[3]!.push(event(999, 'job-d'));
      await Promise.all(batches.map((batch) => store.ingestion.recordEvents(batch)));
      await Promise.all([store.ingestion.recordEvents(batches[5]!), store.ingestion.recordEvents([])]);
      for (const jobId of ['job-c', 'job-d'])
        for (let p = 0; p < PARTITIONS; p++)
          await store.ingestion.recordMarker(
            { entity: world.entity, modelName: MODEL, version: 1, jobId, partition: p },
            PARTITIONS,
          );
      assert.deepEqual((await find(world, 'job-c'))!.counts, {
        events: 80,
        applied: 72,
        rejected: 8,
        pointsWritten: 144,
      });
      assert.deepEqual((await find(world, 'job-d'))!.counts, {
        events: 1,
        applied: 1,
        rejected: 0,
        pointsWritten: 2,
      });
    });

    test("in one batch, the events after a job's last marker belong to the next job", async () => {
      const world = await open();
      await world.deliver(
        embeddingEvent(world, { id: 'b1', vector: vectorOf(31) }),
        eofMarker(world, 0),
        embeddingEvent(world, { id: 'b2', vector: vectorOf(32) }),
        eofMarker(world, 1),
        eofMarker(world, 2),
        embeddingEvent(world, { id: 'b3', vector: vectorOf(33) }),
      );
      assert.equal((await find(world, 'job-1'))!.counts!.events, 2);
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p, 'job-2')));
      assert.equal((await find(world, 'job-2'))!.counts!.events, 1);
    });

    test("the original system's markers (candidate_id EOF) complete the version's default job", async () => {
      const world = await open();
      await world.deliver(embeddingEvent(world, { id: 'o1', vector: vectorOf(41) }, 'original'));
      const marker = (partition: string) => ({
        entity: world.entity,
        model_name: MODEL,
        candidate_id: 'EOF',
        embedding_store_version: 1,
        partition,
        index_space: { variants_version_map: { organic: 1 }, embedding: [], operation: 'ADD' },
      });
      assert.deepEqual(await world.deliver(marker('0'), marker('1'), marker('2')), [
        undefined,
        undefined,
        undefined,
      ]);
      const record = await find(world);
      assert.equal(record!.jobId, 'default');
      assert.equal(record!.status, 'COMPLETE');
      assert.equal(record!.counts!.events, 1);
      assert.equal(await world.row('EOF'), undefined, 'a marker is not an embedding');
    });

    test('markers that can never count are refused with the reason', async () => {
      const world = await open();
      const outcomes = await world.deliver(
        eofMarker(world, 3),
        { ...eofMarker(world, 0), model_name: 'nope' },
        { ...eofMarker(world, 0), partition: '' },
      );
      assert.match(outcomes[0]!, /partition 3 is out of range: job job-1 has 3 partitions \(0 to 2\)/);
      assert.match(outcomes[1]!, /model .*\/nope is not registered/);
      assert.match(outcomes[2]!, /^partition: .*partition number/);
      assert.equal(await find(world), undefined, 'nothing was recorded');
    });

    test('the last markers delivered at once by several consumers complete the job exactly once', async () => {
      const world = await open();
      await world.deliver(embeddingEvent(world, { id: 'k1', vector: vectorOf(51) }));
      // Consumers of their own (separate processors), each delivering every marker, all at once.
      const consumers = [0, 1, 2].map(
        () =>
          new EofProcessor({
            store,
            partitions: PARTITIONS,
            onComplete: (record) => completions.push(record),
          }),
      );
      const markers = [0, 1, 2].map((p) =>
        world.markers.parse(Buffer.from(JSON.stringify(eofMarker(world, p)))),
      );
      const outcomes = await Promise.all(
        consumers.flatMap((consumer) => markers.map((marker) => consumer.apply([marker]))),
      );
      assert.ok(outcomes.flat().every((o) => o === undefined));
      assert.equal(completionsOf(world).length, 1);
      assert.equal((await find(world, 'job-1'))!.counts!.events, 1);
    });

    test('the admin reads a version by job, or its latest job, and lists the model', async () => {
      const world = await open();
      await world.deliver(...[0, 1, 2].map((p) => eofMarker(world, p, 'job-x')));
      await world.deliver(eofMarker(world, 0, 'job-y'));
      assert.equal((await find(world))!.jobId, 'job-y');
      assert.equal((await find(world, 'job-x'))!.status, 'COMPLETE');
      assert.equal(await find(world, 'job-z'), undefined);
      assert.equal(await find(world, undefined, 2), undefined);
      const all = await store.ingestion.list({ entity: world.entity, modelName: MODEL });
      assert.deepEqual(
        all.map((r) => [r.jobId, r.status]),
        [
          ['job-x', 'COMPLETE'],
          ['job-y', 'INGESTING'],
        ],
      );
      // Dropping the version forgets its bookkeeping.
      await store.ingestion.forgetVersion({ entity: world.entity, modelName: MODEL, version: 1 });
      assert.deepEqual(await store.ingestion.list({ entity: world.entity, modelName: MODEL }), []);
    });
  });
}
