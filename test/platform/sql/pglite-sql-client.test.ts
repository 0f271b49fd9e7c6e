import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createSqlClient, type Migration, migrate } from '../../../src/platform/sql/index.js';
import { sqlClientContract } from './contract.js';

sqlClientContract({
  name: 'PGlite in memory',
  open: () => createSqlClient({ kind: 'pglite' }),
  openWithStatementTimeout: (statementTimeoutMs) => createSqlClient({ kind: 'pglite', statementTimeoutMs }),
  interruptsStatements: false,
});

// The database on the caller's thread rather than its own worker thread (the default).
sqlClientContract({
  name: 'PGlite in memory, on the caller thread',
  open: () => createSqlClient({ kind: 'pglite', worker: false }),
  openWithStatementTimeout: (statementTimeoutMs) =>
    createSqlClient({ kind: 'pglite', statementTimeoutMs, worker: false }),
  interruptsStatements: false,
});

describe('PGlite on disk', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lattice-pglite-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  sqlClientContract({
    name: 'PGlite on disk',
    open: () => createSqlClient({ kind: 'pglite', dataDir: join(dir, 'contract') }),
    openWithStatementTimeout: (statementTimeoutMs) =>
      createSqlClient({ kind: 'pglite', dataDir: join(dir, 'statement-timeout'), statementTimeoutMs }),
    interruptsStatements: false,
  });

  test('data and migration history survive closing and reopening the directory', async () => {
    const dataDir = join(dir, 'reopen', 'nested');
    const migrations: Migration[] = [
      {
        version: 1,
        name: 'create models',
        up: 'CREATE TABLE models (name text PRIMARY KEY, dims int NOT NULL)',
      },
      {
        version: 2,
        name: 'seed',
        up: async (tx) => {
          await tx.query('INSERT INTO models VALUES ($1, $2)', ['m1', 128]);
        },
      },
    ];
    const first = await createSqlClient({ kind: 'pglite', dataDir });
    try {
      assert.deepEqual((await migrate(first, migrations)).applied, [1, 2]);
      await first.transaction((tx) => tx.query('INSERT INTO models VALUES ($1, $2)', ['m2', 64]));
    } finally {
      await first.close();
    }

    const reopened = await createSqlClient({ kind: 'pglite', dataDir });
    try {
      assert.deepEqual(await migrate(reopened, migrations), { applied: [], current: 2 });
      const rows = await reopened.query('SELECT name, dims FROM models ORDER BY name');
      assert.deepEqual(rows.rows, [
        { name: 'm1', dims: 128 },
        { name: 'm2', dims: 64 },
      ]);
    } finally {
      await reopened.close();
    }
  });
});

describe('PGlite buffer pool', () => {
  for (const worker of [true, false]) {
    test(`sharedBuffersMb sets shared_buffers (${worker ? 'worker thread' : 'caller thread'})`, async () => {
      const sql = await createSqlClient({ kind: 'pglite', sharedBuffersMb: 24, worker });
      try {
        const { rows } = await sql.query<{ shared_buffers: string }>('SHOW shared_buffers');
        assert.deepEqual(rows, [{ shared_buffers: '24MB' }]);
      } finally {
        await sql.close();
      }
    });
  }

  test("without sharedBuffersMb PostgreSQL's default stands", async () => {
    const sql = await createSqlClient({ kind: 'pglite' });
    try {
      const { rows } = await sql.query<{ shared_buffers: string }>('SHOW shared_buffers');
      assert.deepEqual(rows, [{ shared_buffers: '128MB' }]);
    } finally {
      await sql.close();
    }
  });
});
