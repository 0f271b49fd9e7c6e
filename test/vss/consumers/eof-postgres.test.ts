import { after, before, describe } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../src/platform/sql/index.js';
import { realServer, uniqueName } from '../../support/servers.js';
import { eofSuite } from './eof-suite.js';

const url = await realServer('postgres');
const skip = url === undefined ? 'PostgreSQL is not reachable' : false;
// The run works in a schema of its own (the connection's search_path), dropped at the end.
const schema = uniqueName('lattice_vss_eof').toLowerCase();

describe('PostgreSQL schema for the EOF processor', { skip }, () => {
  let admin: SqlClient;
  before(async () => {
    admin = await createSqlClient({ kind: 'postgres', url: url ?? '', poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
  });
  after(async () => {
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.close();
  });

  // A pool of 8, so the consumers delivering the last markers at once really run concurrently.
  eofSuite({
    name: 'PostgreSQL',
    open: () => createSqlClient({ kind: 'postgres', url: url ?? '', searchPath: schema, poolSize: 8 }),
  });
});
