import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  createSqlClient,
  type Migration,
  migrate,
  type SqlClientOptions,
} from '../../../src/platform/sql/index.js';
import { openPglite } from '../../../src/platform/sql/pglite/pglite-database.js';
import { sqlClientContract } from './contract.js';

/** PostgreSQL settings (by name) of a client opened with `options`, which is closed again. */
async function settingsOf(
  options: SqlClientOptions,
  names: readonly string[],
): Promise<Record<string, string>> {
  const sql = await createSqlClient(options);
  try {
    const columns = names.map((name) => `current_setting('${name}') AS ${name}`).join(', ');
    const { rows } = await sql.query<Record<string, string>>(`SELECT ${columns}`);
    return rows[0]!;
  } finally {
    await sql.close();
  }
}

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

  // PGlite on its own never flushes to disk (flushing-node-fs.ts says why); on disk the adapter does.
  describe('flushes commits to disk', () => {
    for (const worker of [true, false]) {
      test(`fsync is on, the WAL synced by fsync() (${worker ? 'worker thread' : 'caller thread'})`, async () => {
        const dataDir = join(dir, `settings-${worker}`);
        const settings = await settingsOf({ kind: 'pglite', dataDir, worker }, ['fsync', 'wal_sync_method']);
        assert.deepEqual(settings, { fsync: 'on', wal_sync_method: 'fsync' });
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
  });
});

describe('PGlite creating a database', () => {
  // initdb grows PGlite's WebAssembly memory to about 750 MB, which never shrinks: a fresh directory
  // is created by a worker thread of its own that takes that memory with it when it ends.
  test('a fresh directory is created by a worker that is gone before the database opens', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lattice-pglite-fresh-'));
    try {
      const script = `
        import { readFileSync } from 'node:fs';
        import { createSqlClient } from ${JSON.stringify(new URL('../../../src/platform/sql/index.ts', import.meta.url).href)};
        const sql = await createSqlClient({ kind: 'pglite', dataDir: ${JSON.stringify(join(dir, 'db'))} });
        await sql.query('CREATE TABLE t (x int)');
        const resident = () => Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
        // A worker's memory goes back as its thread is torn down: at once on Node 20, over a few
        // seconds on Node 24. Memory still held by the database never goes.
        let rss = resident();
        for (let waited = 0; rss >= 750e6 && waited < 20_000; waited += 250) {
          await new Promise((r) => setTimeout(r, 250));
          rss = Math.min(rss, resident());
        }
        await sql.close();
        console.log(JSON.stringify({ rss }));`;
      const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(child.status, 0, child.stderr);
      const { rss } = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { rss: number };
      // About 510 MB on Node 20 with tsx loaded, where initdb in the database's own worker kept
      // 900-970 MB; Node 24 gives that memory back by itself (550-650 MB either way).
      assert.ok(rss < 750e6, `resident ${Math.round(rss / 1e6)} MB after creating the database`);
      const reopened = await createSqlClient({ kind: 'pglite', dataDir: join(dir, 'db') });
      try {
        assert.deepEqual((await reopened.query('SELECT count(*)::int AS n FROM t')).rows, [{ n: 0 }]);
      } finally {
        await reopened.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a directory that cannot be created fails with the reason', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lattice-pglite-file-'));
    try {
      const file = join(dir, 'not-a-directory');
      await writeFile(file, 'x');
      await assert.rejects(createSqlClient({ kind: 'pglite', dataDir: join(file, 'db') }));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('PGlite settings', () => {
  for (const worker of [true, false]) {
    test(`sharedBuffersMb sets shared_buffers (${worker ? 'worker thread' : 'caller thread'})`, async () => {
      const settings = await settingsOf({ kind: 'pglite', sharedBuffersMb: 24, worker }, ['shared_buffers']);
      assert.deepEqual(settings, { shared_buffers: '24MB' });
    });
  }

  test("without sharedBuffersMb PostgreSQL's default stands", async () => {
    assert.deepEqual(await settingsOf({ kind: 'pglite' }, ['shared_buffers']), { shared_buffers: '128MB' });
  });

  test('in memory there is nothing to flush: fsync stays off', async () => {
    assert.deepEqual(await settingsOf({ kind: 'pglite' }, ['fsync']), { fsync: 'off' });
  });
});
