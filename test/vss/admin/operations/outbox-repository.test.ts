/**
 * The repository methods the engine added to OperationsRepository: the transactional outbox (rows
 * written in a transaction are there only if it commits; read in id order; marked published once)
 * and the transaction-scoped advisory lock (one holder at a time, released at commit).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { openVssStore, type VssStore } from '../../../../src/vss/store/index.js';
import { realServer, uniqueName } from '../../../support/servers.js';

describe('OperationsRepository outbox (PGlite)', () => {
  let sql: SqlClient;
  let store: VssStore;
  before(async () => {
    sql = await createSqlClient({ kind: 'pglite' });
    store = await openVssStore(sql);
  });
  after(() => sql?.close());

  it('keeps rows of committed transactions only, in id order, and marks them published once', async () => {
    const first = await store.transaction((r) =>
      r.operations.enqueueOutbox({ topic: 't', key: 'a', payload: { n: 1 } }),
    );
    await assert.rejects(
      store.transaction(async (r) => {
        await r.operations.enqueueOutbox({ topic: 't', key: 'b', payload: { n: 2 } });
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    const third = await store.operations.enqueueOutbox({ topic: 't', key: 'c', payload: { n: 3 } });
    const rows = await store.operations.unpublishedOutbox();
    assert.deepEqual(
      rows.map((r) => [r.outboxId, r.key, r.payload]),
      [
        [first, 'a', { n: 1 }],
        [third, 'c', { n: 3 }],
      ],
    );
    assert.equal(await store.operations.markOutboxPublished([first]), 1);
    assert.equal(await store.operations.markOutboxPublished([first]), 0);
    assert.deepEqual(
      (await store.operations.unpublishedOutbox()).map((r) => r.key),
      ['c'],
    );
    assert.equal(await store.operations.markOutboxPublished([]), 0);
  });
});

const url = await realServer('postgres');

describe('OperationsRepository.tryTransactionLock (PostgreSQL)', {
  skip: url === undefined ? 'PostgreSQL is not reachable' : false,
}, () => {
  const schema = uniqueName('lattice_adm_lock').toLowerCase();
  let admin: SqlClient;
  let sql: SqlClient;
  let store: VssStore;
  before(async () => {
    admin = await createSqlClient({ kind: 'postgres', url: url ?? '', poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    sql = await createSqlClient({ kind: 'postgres', url: url ?? '', searchPath: schema, poolSize: 4 });
    store = await openVssStore(sql);
  });
  after(async () => {
    await sql?.close();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.close();
  });

  it('lets one transaction at a time hold the lock, until it ends', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let taken: (value: boolean) => void = () => undefined;
    const tookIt = new Promise<boolean>((resolve) => {
      taken = resolve;
    });
    const holder = store.transaction(async (r) => {
      taken(await r.operations.tryTransactionLock('x'));
      await held;
    });
    assert.equal(await tookIt, true);
    assert.equal(await store.transaction((r) => r.operations.tryTransactionLock('x')), false);
    assert.equal(await store.transaction((r) => r.operations.tryTransactionLock('y')), true);
    release();
    await holder;
    assert.equal(await store.transaction((r) => r.operations.tryTransactionLock('x')), true);
  });
});
