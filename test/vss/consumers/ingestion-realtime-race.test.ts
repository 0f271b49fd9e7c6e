/**
 * The race between an embedding event and a real-time update of the same id: the embedding
 * processor reads the aggregator row, the real-time processor then writes the row and finds no point
 * to update (it is not written yet), and the point is written. The point must end with the real-time
 * attribute and the membership it implies, whichever way the two interleave.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../src/platform/sql/index.js';
import type { VectorDb } from '../../../src/platform/vectordb/index.js';
import { EmbeddingProcessor } from '../../../src/vss/consumers/embedding-processor.js';
import { RealtimeProcessor } from '../../../src/vss/consumers/realtime-processor.js';
import { openVssStore, type VssStore } from '../../../src/vss/store/index.js';
import {
  embeddingEvent,
  type IngestionWorld,
  openIngestionWorld,
  parsedEmbedding,
  vectorOf,
} from './ingestion-world.js';
import { realtimeEvent } from './realtime-world.js';

/** The world's vector DB, with every `upsert` held until `release` is called once per call. */
function holdingUpserts(db: VectorDb) {
  const waiting: (() => void)[] = [];
  let onHeld: (() => void) | undefined;
  let holding = true;
  const wrapped = new Proxy(db, {
    get(target, property, receiver) {
      if (property === 'upsert') {
        return async (...args: Parameters<VectorDb['upsert']>) => {
          if (holding) {
            await new Promise<void>((resolve) => {
              waiting.push(resolve);
              onHeld?.();
            });
          }
          return target.upsert(...args);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    db: wrapped,
    /** Resolves once an upsert is held. */
    held: () =>
      new Promise<void>((resolve) => {
        if (waiting.length > 0) resolve();
        else onHeld = resolve;
      }),
    release: () => {
      holding = false;
      for (const resume of waiting.splice(0)) resume();
    },
  };
}

describe('an embedding event racing a real-time update of its id', () => {
  let sql: SqlClient;
  let store: VssStore;
  let world: IngestionWorld;
  let realtime: RealtimeProcessor;

  before(async () => {
    sql = await createSqlClient({ kind: 'pglite' });
    store = await openVssStore(sql);
    world = await openIngestionWorld(store);
    realtime = new RealtimeProcessor({ store, vectorDb: world.db });
  });
  after(async () => {
    await world?.close();
    await sql?.close();
  });

  const deliverRealtime = async (event: unknown) => {
    const parsed = realtime.parse(Buffer.from(JSON.stringify(event)));
    assert.deepEqual(await realtime.apply([parsed]), [undefined]);
  };

  test('a row written between the read and the point write reaches the point and its membership', async () => {
    const hold = holdingUpserts(world.db);
    const ingestion = new EmbeddingProcessor({ store, vectorDb: hold.db, vectorDbType: 'EMBEDDED' });
    const event = parsedEmbedding(embeddingEvent(world, { id: 'race-1', vector: vectorOf(1) }));
    const applying = ingestion.apply([event]);
    // The aggregator row has been read (no row: is_live defaults to "false") and the point is on its way.
    await hold.held();
    await deliverRealtime(realtimeEvent(world.entity, 100, [['race-1', 'is_live', 'true']]));
    assert.equal(await world.point('race-1'), undefined, 'the real-time update found no point');
    hold.release();
    assert.deepEqual(await applying, [undefined]);

    const point = await world.point('race-1');
    assert.equal(point?.payload?.is_live, 'true');
    assert.equal(point?.payload?.to_be_indexed_live, true, 'a member of live once is_live is "true"');
    assert.ok((await world.search('live', vectorOf(1))).includes('race-1'));
  });

  test('a point written before the real-time update is updated by it, and no rewrite undoes that', async () => {
    const ingestion = new EmbeddingProcessor({ store, vectorDb: world.db, vectorDbType: 'EMBEDDED' });
    await deliverRealtime(realtimeEvent(world.entity, 100, [['race-2', 'is_live', 'true']]));
    const event = parsedEmbedding(embeddingEvent(world, { id: 'race-2', vector: vectorOf(2) }));
    assert.deepEqual(await ingestion.apply([event]), [undefined]);
    assert.equal((await world.point('race-2'))?.payload?.to_be_indexed_live, true);
    await deliverRealtime(realtimeEvent(world.entity, 200, [['race-2', 'is_live', 'false']]));
    const point = await world.point('race-2');
    assert.equal(point?.payload?.is_live, 'false');
    assert.equal(point?.payload?.to_be_indexed_live, false);
  });
});
