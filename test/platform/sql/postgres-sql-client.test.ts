import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../src/platform/sql/index.js';
import { realServer, uniqueName } from '../../support/servers.js';
import { rejectsWith, sqlClientContract } from './contract.js';

const url = await realServer('postgres');
// Every run works in a schema of its own (set through the connection's search_path), dropped at the end.
const schema = uniqueName('lattice_sql_test').toLowerCase();
const skip = url === undefined ? 'PostgreSQL is not reachable' : false;
const open = (options: { statementTimeoutMs?: number } = {}) =>
  createSqlClient({ kind: 'postgres', url: url ?? '', searchPath: schema, poolSize: 4, ...options });

describe('PostgreSQL', { skip }, () => {
  let admin: SqlClient;
  before(async () => {
    admin = await createSqlClient({ kind: 'postgres', url: url ?? '', poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
  });
  after(async () => {
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.close();
  });

  sqlClientContract({
    name: 'PostgreSQL',
    open: () => open(),
    openPeer: () => open(),
    openWithStatementTimeout: (statementTimeoutMs) => open({ statementTimeoutMs }),
    interruptsStatements: true,
  });

  test('statements live in the run schema', async () => {
    const sql = await open();
    try {
      const { rows } = await sql.query<{ schema: string }>('SELECT current_schema() AS schema');
      assert.deepEqual(rows, [{ schema }]);
    } finally {
      await sql.close();
    }
  });

  test('a statement over statementTimeoutMs fails with DEADLINE_EXCEEDED', async () => {
    const sql = await open({ statementTimeoutMs: 200 });
    try {
      // 57014: the server cancelled the statement at its timeout (without one it would just succeed).
      await rejectsWith(sql.query('SELECT pg_sleep(5)'), 'DEADLINE_EXCEEDED', /57014/);
      assert.deepEqual((await sql.query('SELECT 1 AS ok')).rows, [{ ok: 1 }], 'the pool recovers');
    } finally {
      await sql.close();
    }
  });
});

/** A loopback port nothing listens on. */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('PostgreSQL unreachable', () => {
  test('a refused connection is UNAVAILABLE naming the address and the refusal, not waiting for the connect timeout', async () => {
    const port = await unusedPort();
    // The refusal is the error, not a timeout after waiting for one.
    await rejectsWith(
      createSqlClient({
        kind: 'postgres',
        url: `postgres://postgres@127.0.0.1:${port}/test`,
        connectTimeoutMs: 60_000,
      }),
      'UNAVAILABLE',
      new RegExp(`127\\.0\\.0\\.1:${port} is unavailable: connect ECONNREFUSED`),
    );
  });

  // The test's timeout only turns a hang (a connect timeout not applied) into a failure.
  test('a server that accepts but never answers is UNAVAILABLE after the connect timeout, not a hang', {
    timeout: 60_000,
  }, async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    try {
      const started = Date.now();
      await rejectsWith(
        createSqlClient({
          kind: 'postgres',
          url: `postgres://postgres@127.0.0.1:${address.port}/test`,
          connectTimeoutMs: 500,
        }),
        'UNAVAILABLE',
        new RegExp(`127\\.0\\.0\\.1:${address.port} is unavailable: .*connection timeout`),
      );
      // Not before the timeout (a lower bound holds however busy the machine is).
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 400, `took ${elapsed} ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
