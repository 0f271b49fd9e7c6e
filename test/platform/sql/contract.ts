/**
 * The SqlClient contract: every adapter runs this suite, so PGlite and PostgreSQL cannot drift apart.
 * Each test works on tables named uniquely, so a suite can share one database (and one client).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ErrorCode, isLatticeError, type LatticeError } from '../../../src/platform/errors.js';
import { type Migration, migrate, type SqlClient } from '../../../src/platform/sql/index.js';
import { eventually, uniqueName } from '../../support/servers.js';

export interface SqlContractTarget {
  /** Shown in the suite name. */
  name: string;
  /** Opens the client the suite uses (once). */
  open(): Promise<SqlClient>;
  /**
   * Opens another client onto the same database, for concurrent migration runners from two
   * processes. Absent for an embedded database, which only one client may open.
   */
  openPeer?: () => Promise<SqlClient>;
  /** Skips the suite (with the reason) when the database is not available. */
  skip?: string | false;
  /** Opens a separate client with `statementTimeoutMs` set (its own database for an embedded one). */
  openWithStatementTimeout(statementTimeoutMs: number): Promise<SqlClient>;
  /**
   * Whether the database interrupts a statement running past the timeout (PostgreSQL). PGlite
   * cannot: its caller fails once the statement returns, so its suite sleeps for less.
   */
  interruptsStatements: boolean;
}

export async function rejectsWith(
  work: Promise<unknown>,
  code: ErrorCode,
  message?: RegExp,
): Promise<LatticeError> {
  let caught: unknown;
  await assert.rejects(work, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(isLatticeError(caught), `expected a LatticeError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}

const table = (prefix: string) => uniqueName(prefix).toLowerCase();

export function sqlClientContract(target: SqlContractTarget): void {
  describe(`SqlClient contract: ${target.name}`, { skip: target.skip ?? false }, () => {
    let sql: SqlClient;

    before(async () => {
      sql = await target.open();
    });
    after(async () => {
      await sql?.close();
    });

    test('query binds $n parameters and INSERT ... RETURNING returns the new rows', async () => {
      const t = table('items');
      await sql.query(`CREATE TABLE ${t} (id serial PRIMARY KEY, name text NOT NULL, score real)`);
      const inserted = await sql.query<{ id: number; name: string }>(
        `INSERT INTO ${t} (name, score) VALUES ($1, $2), ($3, $4) RETURNING id, name`,
        ['a', 0.5, 'b', null],
      );
      assert.equal(inserted.rowCount, 2);
      assert.deepEqual(
        inserted.rows.map((r) => r.name),
        ['a', 'b'],
      );
      assert.equal(typeof inserted.rows[0]?.id, 'number');
      const found = await sql.query<{ name: string; score: number | null }>(
        `SELECT name, score FROM ${t} WHERE name = ANY($1) ORDER BY name`,
        [['a', 'b', 'zz']],
      );
      assert.deepEqual(found.rows, [
        { name: 'a', score: 0.5 },
        { name: 'b', score: null },
      ]);
      assert.equal(found.rowCount, 2);
    });

    test('rowCount counts affected rows, and is 0 for statements without rows', async () => {
      const t = table('counts');
      const ddl = await sql.query(`CREATE TABLE ${t} (id int PRIMARY KEY, n int NOT NULL)`);
      assert.equal(ddl.rowCount, 0);
      await sql.query(`INSERT INTO ${t} SELECT g, 0 FROM generate_series(1, 5) g`);
      const updated = await sql.query(`UPDATE ${t} SET n = n + 1 WHERE id <= $1`, [3]);
      assert.equal(updated.rowCount, 3);
      assert.deepEqual(updated.rows, []);
      const deleted = await sql.query(`DELETE FROM ${t} WHERE id = $1`, [42]);
      assert.equal(deleted.rowCount, 0);
    });

    test('real[] round-trips Float32Array and number[] values exactly at float32 precision', async () => {
      const t = table('embeddings');
      await sql.query(`CREATE TABLE ${t} (id text PRIMARY KEY, embedding real[] NOT NULL, search real[])`);
      const embedding = Float32Array.from([0.1, -2.5, 3.4028234663852886e38, 1e-7, 0, 1 / 3]);
      await sql.query(`INSERT INTO ${t} (id, embedding, search) VALUES ($1, $2, $3)`, [
        'x',
        embedding,
        [1.5, 2.25],
      ]);
      await sql.query(`INSERT INTO ${t} (id, embedding) VALUES ($1, $2)`, ['empty', new Float32Array(0)]);
      const { rows } = await sql.query<{ id: string; embedding: number[]; search: number[] | null }>(
        `SELECT id, embedding, search FROM ${t} ORDER BY id`,
      );
      assert.equal(rows.length, 2);
      assert.deepEqual(rows[0], { id: 'empty', embedding: [], search: null });
      assert.ok(Array.isArray(rows[1]?.embedding));
      assert.deepEqual(Float32Array.from(rows[1]?.embedding ?? []), embedding);
      assert.deepEqual(rows[1]?.search, [1.5, 2.25]);
    });

    test('values come back with the same JavaScript types on every adapter', async () => {
      const { rows } = await sql.query<Record<string, unknown>>(
        `SELECT count(*) AS n, $1::int8 AS big, $2::int8 AS huge, 2.50::numeric AS price, $3::bytea AS bytes,
                $4::jsonb AS doc, $5::boolean AS flag, $6::text[] AS labels, $7::timestamptz AS at,
                ARRAY[1, 2]::int8[] AS longs`,
        [
          42,
          9007199254740993n,
          new Uint8Array([0, 255, 7]),
          JSON.stringify({ a: [1, 'x'] }),
          true,
          ['p', 'q"r'],
          new Date('2024-05-06T07:08:09.123Z'),
        ],
      );
      const row = rows[0] ?? {};
      assert.equal(row['n'], 1);
      assert.equal(row['big'], 42);
      assert.equal(row['huge'], 9007199254740993n);
      assert.equal(row['price'], '2.50');
      assert.ok(row['bytes'] instanceof Uint8Array);
      assert.deepEqual([...(row['bytes'] as Uint8Array)], [0, 255, 7]);
      assert.deepEqual(row['doc'], { a: [1, 'x'] });
      assert.equal(row['flag'], true);
      assert.deepEqual(row['labels'], ['p', 'q"r']);
      assert.ok(row['at'] instanceof Date);
      assert.equal((row['at'] as Date).toISOString(), '2024-05-06T07:08:09.123Z');
      assert.deepEqual(row['longs'], [1, 2]);
    });

    test('ON CONFLICT upserts and RETURNING reports the stored row', async () => {
      const t = table('upserts');
      await sql.query(`CREATE TABLE ${t} (id text PRIMARY KEY, hits int NOT NULL)`);
      const upsert = `INSERT INTO ${t} (id, hits) VALUES ($1, 1)
                      ON CONFLICT (id) DO UPDATE SET hits = ${t}.hits + 1 RETURNING hits`;
      assert.deepEqual((await sql.query(upsert, ['k'])).rows, [{ hits: 1 }]);
      assert.deepEqual((await sql.query(upsert, ['k'])).rows, [{ hits: 2 }]);
      const ignored = await sql.query(
        `INSERT INTO ${t} VALUES ($1, 9) ON CONFLICT DO NOTHING RETURNING hits`,
        ['k'],
      );
      assert.equal(ignored.rowCount, 0);
    });

    test('without parameters, a script of several statements runs and returns the last result', async () => {
      const t = table('script');
      const result = await sql.query<{ total: number }>(
        `CREATE TABLE ${t} (v int); INSERT INTO ${t} VALUES (1), (2), (3); SELECT sum(v)::int AS total FROM ${t}`,
      );
      assert.deepEqual(result.rows, [{ total: 6 }]);
    });

    test('queryWithSettings runs each statement under its own settings, also concurrently', async () => {
      // A placeholder setting (dotted name: any user may set one), read back by the statement.
      const probe = (value: number) =>
        sql.queryWithSettings<{ v: string }>(
          { 'lattice.probe': value, 'lattice.mode': value % 2 === 0 ? 'even' : 'odd' },
          `SELECT current_setting('lattice.probe') || current_setting('lattice.mode') AS v, $1::int AS n`,
          [value],
        );
      const label = (value: number) => `${value}${value % 2 === 0 ? 'even' : 'odd'}`;
      // One after another (a pooled connection is reused): each call sees its values, not the last call's.
      for (const value of [1, 2, 2, 1, 3]) assert.equal((await probe(value)).rows[0]?.v, label(value));
      // At once, more calls than connections: none sees another's.
      const values = Array.from({ length: 24 }, (_, i) => (i * 7) % 5);
      const seen = await Promise.all(values.map(async (value) => (await probe(value)).rows[0]?.v));
      assert.deepEqual(seen, values.map(label));
    });

    test('queryWithSettings refuses names and values that are not plain SQL names, words or numbers', async () => {
      const t = table('settings_refused');
      await sql.query(`CREATE TABLE ${t} (v int)`);
      const refused: Record<string, number | string>[] = [
        { [`x; DROP TABLE ${t}; --`]: 1 },
        { 'Lattice.Probe': 1 },
        { 'lattice.probe': `1; DROP TABLE ${t}` },
        { 'lattice.probe': "'quoted'" },
        { 'lattice.probe': Number.NaN },
      ];
      for (const settings of refused) {
        await rejectsWith(sql.queryWithSettings(settings, 'SELECT 1'), 'INVALID_ARGUMENT', /setting/);
      }
      assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 0, 'the table is still there');
    });

    test('transaction commits when the callback resolves and returns its value', async () => {
      const t = table('tx_commit');
      await sql.query(`CREATE TABLE ${t} (id int PRIMARY KEY)`);
      const value = await sql.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${t} VALUES ($1), ($2)`, [1, 2]);
        const inside = await tx.query<{ n: number }>(`SELECT count(*) AS n FROM ${t}`);
        return inside.rows[0]?.n;
      });
      assert.equal(value, 2);
      assert.deepEqual((await sql.query(`SELECT id FROM ${t} ORDER BY id`)).rows, [{ id: 1 }, { id: 2 }]);
    });

    test('transaction rolls back when the callback throws, and rethrows that same error', async () => {
      const t = table('tx_rollback');
      await sql.query(`CREATE TABLE ${t} (id int PRIMARY KEY)`);
      const boom = new Error('boom');
      await assert.rejects(
        sql.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${t} VALUES (1)`);
          await tx.query(`CREATE TABLE ${t}_inside (x int)`);
          throw boom;
        }),
        (err) => err === boom,
      );
      assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 0);
      // DDL is transactional too.
      await rejectsWith(sql.query(`SELECT * FROM ${t}_inside`), 'INTERNAL', /42P01/);
    });

    test('a failing statement inside a transaction rolls everything back', async () => {
      const t = table('tx_sqlfail');
      await sql.query(`CREATE TABLE ${t} (id int PRIMARY KEY)`);
      await rejectsWith(
        sql.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${t} VALUES (1)`);
          await tx.query(`INSERT INTO ${t} VALUES (1)`);
        }),
        'ALREADY_EXISTS',
      );
      assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 0);
      // The client is still usable afterwards.
      await sql.transaction((tx) => tx.query(`INSERT INTO ${t} VALUES (2)`));
      assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 1);
    });

    test('concurrent transactions on one client all commit, each seeing only its own writes', async () => {
      const t = table('tx_concurrent');
      await sql.query(`CREATE TABLE ${t} (worker int, n int, PRIMARY KEY (worker, n))`);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, worker) =>
          sql.transaction(async (tx) => {
            for (let n = 0; n < 3; n++) await tx.query(`INSERT INTO ${t} VALUES ($1, $2)`, [worker, n]);
            const mine = await tx.query<{ n: number }>(`SELECT count(*) AS n FROM ${t} WHERE worker = $1`, [
              worker,
            ]);
            return mine.rows[0]?.n;
          }),
        ),
      );
      assert.deepEqual(results, [3, 3, 3, 3, 3, 3]);
      assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 18);
    });

    test('the client refuses its own statements inside its transaction instead of deadlocking', async () => {
      const t = table('tx_misuse');
      await sql.query(`CREATE TABLE ${t} (id int)`);
      await rejectsWith(
        sql.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${t} VALUES (1)`);
          await sql.query(`SELECT 1`);
        }),
        'FAILED_PRECONDITION',
        /inside one of its transactions/,
      );
      await rejectsWith(
        sql.transaction(() => sql.transaction(async () => 1)),
        'FAILED_PRECONDITION',
      );
      assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 0);
    });

    test('the guard follows each of overlapping transactions, and is gone once all have ended', async () => {
      let releaseFirst!: () => void;
      const firstMayEnd = new Promise<void>((resolve) => {
        releaseFirst = resolve;
      });
      let firstStarted!: () => void;
      const started = new Promise<void>((resolve) => {
        firstStarted = resolve;
      });
      const first = sql.transaction(async (tx) => {
        firstStarted();
        await firstMayEnd;
        return tx.query('SELECT 1 AS one');
      });
      await started;
      // A second transaction queued behind the first (PGlite: one connection) or beside it (pg pool):
      // after the first ends, its own client-level statement is still refused.
      const second = sql.transaction(async (tx) => {
        await tx.query('SELECT 2');
        await sql.query('SELECT 3');
      });
      // Observed at once: beside the first (pg pool), it may fail before the first ends.
      const refused = rejectsWith(second, 'FAILED_PRECONDITION', /inside one of its transactions/);
      releaseFirst();
      assert.equal((await first).rows.length, 1);
      await refused;
      // Outside every transaction, client-level statements run.
      assert.equal((await sql.query('SELECT 4 AS four')).rows.length, 1);
    });

    test('a transaction handle is dead once its transaction has ended', async () => {
      let leaked: { query: (text: string) => Promise<unknown> } | undefined;
      await sql.transaction(async (tx) => {
        leaked = tx;
      });
      await rejectsWith(leaked!.query('SELECT 1'), 'FAILED_PRECONDITION', /already ended/);
    });

    test('a unique violation is ALREADY_EXISTS, naming the constraint and SQLSTATE', async () => {
      const t = table('uniq');
      await sql.query(`CREATE TABLE ${t} (id text PRIMARY KEY)`);
      await sql.query(`INSERT INTO ${t} VALUES ($1)`, ['dup']);
      await rejectsWith(
        sql.query(`INSERT INTO ${t} VALUES ($1)`, ['dup']),
        'ALREADY_EXISTS',
        /_pkey.*23505/s,
      );
    });

    test('a syntax error is INTERNAL with its SQLSTATE; a value the column refuses is INVALID_ARGUMENT', async () => {
      await rejectsWith(sql.query('SELEC 1'), 'INTERNAL', /42601/);
      await rejectsWith(sql.query('SELECT $1::int AS n', ['not a number']), 'INVALID_ARGUMENT', /22P02/);
    });

    describe('migrations', () => {
      const createItems = (t: string): Migration => ({
        version: 1,
        name: 'create items',
        up: `CREATE TABLE ${t} (id text PRIMARY KEY, label text); CREATE INDEX ${t}_label ON ${t} (label)`,
      });
      const seedItems = (t: string): Migration => ({
        version: 2,
        name: 'seed items',
        up: async (tx) => {
          await tx.query(`INSERT INTO ${t} (id, label) VALUES ($1, $2), ($3, $4)`, ['a', 'x', 'b', 'y']);
        },
      });
      const addScore = (t: string): Migration => ({
        version: 3,
        name: 'add score',
        up: `ALTER TABLE ${t} ADD COLUMN score real NOT NULL DEFAULT 0`,
      });

      test('applies pending migrations in order and records them', async () => {
        const t = table('mig_items');
        const history = table('mig_hist');
        // Given out of order: the runner orders by version.
        const report = await migrate(sql, [addScore(t), createItems(t), seedItems(t)], { table: history });
        assert.deepEqual(report, { applied: [1, 2, 3], current: 3 });
        const rows = await sql.query<{ id: string; score: number }>(`SELECT id, score FROM ${t} ORDER BY id`);
        assert.deepEqual(rows.rows, [
          { id: 'a', score: 0 },
          { id: 'b', score: 0 },
        ]);
        const recorded = await sql.query<{ version: number; name: string }>(
          `SELECT version, name FROM ${history} ORDER BY version`,
        );
        assert.deepEqual(recorded.rows, [
          { version: 1, name: 'create items' },
          { version: 2, name: 'seed items' },
          { version: 3, name: 'add score' },
        ]);
      });

      test('re-running is a no-op, and new migrations apply on top', async () => {
        const t = table('mig_rerun');
        const history = table('mig_hist');
        const first = [createItems(t), seedItems(t)];
        assert.deepEqual(await migrate(sql, first, { table: history }), { applied: [1, 2], current: 2 });
        assert.deepEqual(await migrate(sql, first, { table: history }), { applied: [], current: 2 });
        assert.equal((await sql.query(`SELECT * FROM ${t}`)).rowCount, 2, 'seed ran once');
        assert.deepEqual(await migrate(sql, [...first, addScore(t)], { table: history }), {
          applied: [3],
          current: 3,
        });
      });

      test('separate tables keep separate migration sets', async () => {
        const a = table('mig_a');
        const b = table('mig_b');
        assert.deepEqual((await migrate(sql, [createItems(a)], { table: `${a}_hist` })).applied, [1]);
        assert.deepEqual((await migrate(sql, [createItems(b)], { table: `${b}_hist` })).applied, [1]);
      });

      test('refuses to run when the SQL of an applied migration has changed', async () => {
        const t = table('mig_changed');
        const history = table('mig_hist');
        await migrate(sql, [createItems(t), seedItems(t)], { table: history });
        const edited: Migration = { ...createItems(t), up: `${createItems(t).up} ;` };
        await rejectsWith(
          migrate(sql, [edited, seedItems(t), addScore(t)], { table: history }),
          'FAILED_PRECONDITION',
          /migration 1 \(create items\) was changed/,
        );
        const columns = await sql.query(
          `SELECT column_name FROM information_schema.columns WHERE table_name = $1`,
          [t],
        );
        assert.equal(columns.rowCount, 2, 'migration 3 did not run');
        // Line endings alone are not a change (a checkout on another OS).
        const t2 = table('mig_crlf');
        const lines = [`CREATE TABLE ${t2} (x int);`, `CREATE INDEX ${t2}_x ON ${t2} (x)`];
        const history2 = table('mig_hist');
        await migrate(sql, [{ version: 1, name: 'lf', up: lines.join('\n') }], { table: history2 });
        assert.deepEqual(
          await migrate(sql, [{ version: 1, name: 'lf', up: lines.join('\r\n') }], { table: history2 }),
          { applied: [], current: 1 },
        );
      });

      test('refuses to run when the checksum of an applied code migration has changed', async () => {
        const t = table('mig_code');
        const history = table('mig_hist');
        const v1: Migration = { ...seedItems(t), checksum: 'seed-v1' };
        await migrate(sql, [createItems(t), v1], { table: history });
        assert.deepEqual((await migrate(sql, [createItems(t), v1], { table: history })).applied, []);
        await rejectsWith(
          migrate(sql, [createItems(t), { ...v1, checksum: 'seed-v2' }], { table: history }),
          'FAILED_PRECONDITION',
          /migration 2 \(seed items\) was changed/,
        );
      });

      test('refuses gaps, duplicates and bad versions before touching the database', async () => {
        const t = table('mig_gap');
        const history = table('mig_hist');
        await rejectsWith(
          migrate(sql, [createItems(t), addScore(t)], { table: history }),
          'INVALID_ARGUMENT',
          /expected 2, found 3/,
        );
        await rejectsWith(
          migrate(sql, [createItems(t), { ...seedItems(t), version: 1 }], { table: history }),
          'INVALID_ARGUMENT',
          /version 1 is used twice/,
        );
        await rejectsWith(
          migrate(sql, [{ ...createItems(t), version: 0 }], { table: history }),
          'INVALID_ARGUMENT',
        );
        await rejectsWith(migrate(sql, [seedItems(t)], { table: history }), 'INVALID_ARGUMENT', /expected 1/);
        await rejectsWith(migrate(sql, [createItems(t)], { table: 'bad-name; DROP' }), 'INVALID_ARGUMENT');
        const exists = await sql.query(
          `SELECT 1 FROM information_schema.tables WHERE table_name IN ($1, $2)`,
          [t, history],
        );
        assert.equal(exists.rowCount, 0);
      });

      test('refuses a database that records a migration the code does not have', async () => {
        const t = table('mig_newer');
        const history = table('mig_hist');
        await migrate(sql, [createItems(t), seedItems(t)], { table: history });
        await rejectsWith(
          migrate(sql, [createItems(t)], { table: history }),
          'FAILED_PRECONDITION',
          /records migration 2 \(seed items\), which this build does not have/,
        );
      });

      test('a failing migration is rolled back whole, keeps the earlier ones, and names itself', async () => {
        const t = table('mig_fail');
        const history = table('mig_hist');
        const broken: Migration = {
          version: 2,
          name: 'broken',
          up: `ALTER TABLE ${t} ADD COLUMN extra int; INSERT INTO ${t} (id) VALUES (NULL)`,
        };
        await rejectsWith(
          migrate(sql, [createItems(t), broken], { table: history }),
          'FAILED_PRECONDITION',
          /migration 2 \(broken\) failed: .*23502/,
        );
        const recorded = await sql.query(`SELECT version FROM ${history}`);
        assert.deepEqual(recorded.rows, [{ version: 1 }]);
        const columns = await sql.query(
          `SELECT column_name FROM information_schema.columns WHERE table_name = $1`,
          [t],
        );
        assert.equal(columns.rowCount, 2, 'the ALTER of the failed migration was rolled back');
      });

      test('concurrent runners apply each migration exactly once', async () => {
        const log = table('mig_log');
        const history = table('mig_hist');
        await sql.query(`CREATE TABLE ${log} (version int NOT NULL)`);
        // Each migration appends to the log: a second application would show as a duplicate.
        const migrations: Migration[] = Array.from({ length: 5 }, (_, i) => ({
          version: i + 1,
          name: `step ${i + 1}`,
          up: async (tx) => {
            await tx.query(`INSERT INTO ${log} VALUES ($1)`, [i + 1]);
            // Holds the migration open a moment, so the runners really overlap (the scenario).
            await tx.query('SELECT pg_sleep(0.02)');
          },
        }));
        const peer = target.openPeer ? await target.openPeer() : undefined;
        try {
          const runners = [sql, peer ?? sql, sql, peer ?? sql];
          const reports = await Promise.all(
            runners.map((client) => migrate(client, migrations, { table: history })),
          );
          const applied = reports.flatMap((r) => r.applied).sort((a, b) => a - b);
          assert.deepEqual(applied, [1, 2, 3, 4, 5]);
          for (const report of reports) assert.equal(report.current, 5);
        } finally {
          await peer?.close();
        }
        const logged = await sql.query<{ version: number }>(`SELECT version FROM ${log} ORDER BY version`);
        assert.deepEqual(
          logged.rows.map((r) => r.version),
          [1, 2, 3, 4, 5],
        );
      });
    });

    describe('statement timeout', () => {
      const timeoutMs = 250;
      let slow: SqlClient;
      before(async () => {
        slow = await target.openWithStatementTimeout(timeoutMs);
      });
      after(async () => {
        await slow?.close();
      });

      test('a statement running past it fails with DEADLINE_EXCEEDED and the client keeps working', async () => {
        // PostgreSQL cancels the sleep at the timeout: SQLSTATE 57014 is the server's own cancellation
        // (a client that only stopped waiting would report that it got no answer in time).
        const sleepSeconds = target.interruptsStatements ? 30 : 1;
        await rejectsWith(
          slow.query(`SELECT pg_sleep(${sleepSeconds})`),
          'DEADLINE_EXCEEDED',
          target.interruptsStatements ? /statement timeout.*\[SQLSTATE 57014\]/ : /timeout/,
        );
        await rejectsWith(
          slow.transaction((tx) => tx.query(`SELECT pg_sleep(${sleepSeconds})`)),
          'DEADLINE_EXCEEDED',
          /timeout/,
        );
        assert.deepEqual((await slow.query('SELECT 1 AS ok')).rows, [{ ok: 1 }]);
        assert.deepEqual(await slow.transaction(async (tx) => (await tx.query('SELECT 2 AS ok')).rows), [
          { ok: 2 },
        ]);
      });

      test('a statement waiting behind a transaction fails while the transaction still holds it', async () => {
        const t = table('held');
        await slow.query(`CREATE TABLE ${t} (id int PRIMARY KEY, n int NOT NULL)`);
        await slow.query(`INSERT INTO ${t} VALUES (1, 0)`);
        let holding!: () => void;
        const held = new Promise<void>((resolve) => {
          holding = resolve;
        });
        let release!: () => void;
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        let open = true;
        // The transaction locks the row (PostgreSQL) and holds PGlite's only connection until released.
        const transaction = slow
          .transaction(async (tx) => {
            await tx.query(`UPDATE ${t} SET n = n + 1 WHERE id = 1`);
            holding();
            await released;
          })
          .finally(() => {
            open = false;
          });
        await held;
        try {
          await rejectsWith(
            slow.query(`SELECT n FROM ${t} WHERE id = 1 FOR UPDATE`),
            'DEADLINE_EXCEEDED',
            /timeout/,
          );
          assert.equal(open, true, 'the wait ended by the timeout, not by the transaction ending');
        } finally {
          release();
          await transaction;
        }
        const { rows } = await slow.query<{ n: number }>(`SELECT n FROM ${t} WHERE id = 1`);
        assert.deepEqual(rows, [{ n: 1 }], 'the transaction committed');
      });
    });

    describe('listen', () => {
      const waitFor = (condition: () => boolean, what: string) => eventually(condition, 10_000, what);

      test('a NOTIFY committed on the channel reaches the listener with its payload; closed, none does', async () => {
        const channel = table('chan');
        const got: (string | undefined)[] = [];
        const listener = await sql.listen(channel, (payload) => got.push(payload));
        const t = table('notified');
        await sql.query(`CREATE TABLE ${t} (id int)`);
        await sql.query('SELECT pg_notify($1, $2)', [channel, 'first']);
        await sql.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${t} VALUES (1)`);
          await tx.query('SELECT pg_notify($1, $2)', [channel, 'in a transaction']);
        });
        // Another channel is not heard; a rolled-back NOTIFY is never sent.
        await sql.query('SELECT pg_notify($1, $2)', [table('other'), 'elsewhere']);
        await sql
          .transaction(async (tx) => {
            await tx.query('SELECT pg_notify($1, $2)', [channel, 'rolled back']);
            throw new Error('roll back');
          })
          .catch(() => {});
        await sql.query('SELECT pg_notify($1, $2)', [channel, 'last']);
        await waitFor(() => got.includes('last'), 'the last notification');
        assert.deepEqual(got, ['first', 'in a transaction', 'last']);
        await listener.close();
        await listener.close();
        await sql.query('SELECT pg_notify($1, $2)', [channel, 'after close']);
        // A fresh listener on the same channel hears the next one, the closed one does not.
        const again: (string | undefined)[] = [];
        const second = await sql.listen(channel, (payload) => again.push(payload));
        await sql.query('SELECT pg_notify($1, $2)', [channel, 'second listener']);
        await waitFor(() => again.includes('second listener'), 'the second listener');
        await second.close();
        assert.deepEqual(got, ['first', 'in a transaction', 'last']);
      });

      test('a channel that is not a lower-case SQL name is INVALID_ARGUMENT', async () => {
        await rejectsWith(
          sql.listen('Bad-Channel; DROP', () => {}),
          'INVALID_ARGUMENT',
        );
      });
    });

    test('close is idempotent and later calls fail with UNAVAILABLE', async () => {
      await sql.close();
      await sql.close();
      await rejectsWith(sql.query('SELECT 1'), 'UNAVAILABLE', /closed/);
      await rejectsWith(
        sql.transaction(async () => 1),
        'UNAVAILABLE',
      );
    });
  });
}
