import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../src/platform/sql/index.js';
import { migrateVssStore, vssMigrations } from '../../../src/vss/store/index.js';
import { realServer, uniqueName } from '../../support/servers.js';
import { vssStoreSuite } from './store-suite.js';

const url = await realServer('postgres');
const skip = url === undefined ? 'PostgreSQL is not reachable' : false;
// Each run works in schemas of its own (the connection's search_path), dropped at the end.
const schema = uniqueName('lattice_vss_store').toLowerCase();
const racing = `${schema}_race`;
const open = (searchPath: string) =>
  createSqlClient({ kind: 'postgres', url: url ?? '', searchPath, poolSize: 8 });

describe('PostgreSQL schemas for the vss store', { skip }, () => {
  let admin: SqlClient;
  before(async () => {
    admin = await createSqlClient({ kind: 'postgres', url: url ?? '', poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE SCHEMA ${racing}`);
  });
  after(async () => {
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.query(`DROP SCHEMA IF EXISTS ${racing} CASCADE`);
    await admin?.close();
  });

  vssStoreSuite({ name: 'PostgreSQL', open: () => open(schema) });

  test('replicas migrating at once apply each migration exactly once', async () => {
    const clients = await Promise.all([open(racing), open(racing), open(racing)]);
    try {
      const reports = await Promise.all(clients.map((client) => migrateVssStore(client)));
      assert.deepEqual(
        reports.flatMap((r) => r.applied).sort((a, b) => a - b),
        vssMigrations.map((m) => m.version),
      );
      for (const report of reports) assert.equal(report.current, vssMigrations.length);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });
});
