import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createSqlClient } from '../../../src/platform/sql/index.js';
import { openPglite } from '../../../src/platform/sql/pglite/pglite-database.js';

// PGlite on its own never flushes to disk (flushing-node-fs.ts says why); on disk the adapter does.
describe('PGlite on disk flushes commits to disk', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lattice-pglite-flush-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const worker of [true, false]) {
    test(`fsync is on, the WAL synced by fsync() (${worker ? 'worker thread' : 'caller thread'})`, async () => {
      const sql = await createSqlClient({ kind: 'pglite', dataDir: join(dir, `settings-${worker}`), worker });
      try {
        const { rows } = await sql.query<{ fsync: string; wal_sync_method: string }>(
          "SELECT current_setting('fsync') AS fsync, current_setting('wal_sync_method') AS wal_sync_method",
        );
        assert.deepEqual(rows, [{ fsync: 'on', wal_sync_method: 'fsync' }]);
      } finally {
        await sql.close();
      }
    });
  }

  test('each commit has flushed its WAL file before it returns; a checkpoint flushes the tables', async () => {
    const flushed: string[] = [];
    const db = await openPglite(join(dir, 'commits'), {}, (path) => flushed.push(path));
    try {
      await db.exec('CREATE TABLE t (id integer PRIMARY KEY, v text)');
      const inWal = () => flushed.filter((path) => path.includes(`${sep}pg_wal${sep}`)).length;
      for (let i = 0; i < 5; i++) {
        const before = inWal();
        await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`]);
        assert.ok(inWal() > before, `commit ${i} returned without flushing the WAL: ${flushed.join(', ')}`);
      }
      flushed.length = 0;
      await db.exec('CHECKPOINT');
      assert.ok(
        flushed.some((path) => path.includes(`${sep}base${sep}`)),
        `the checkpoint flushed no table file: ${flushed.join(', ')}`,
      );
    } finally {
      await db.close();
    }
  });

  test('in memory there is nothing to flush: fsync stays off', async () => {
    const sql = await createSqlClient({ kind: 'pglite' });
    try {
      const { rows } = await sql.query<{ fsync: string }>("SELECT current_setting('fsync') AS fsync");
      assert.deepEqual(rows, [{ fsync: 'off' }]);
    } finally {
      await sql.close();
    }
  });
});
