import { after, before } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { realServer, uniqueName } from '../../../support/servers.js';
import { adminRouteSuite } from './route-suite.js';

const url = await realServer('postgres');
// The suite works in a schema of its own (the connection's search_path), dropped at the end.
const schema = uniqueName('lattice_vss_admin_api').toLowerCase();
let admin: SqlClient | undefined;

before(async () => {
  if (url === undefined) return;
  admin = await createSqlClient({ kind: 'postgres', url, poolSize: 1 });
  await admin.query(`CREATE SCHEMA ${schema}`);
});
after(async () => {
  await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin?.close();
});

adminRouteSuite({
  name: 'PostgreSQL',
  skip: url === undefined ? 'PostgreSQL is not reachable' : false,
  open: () => createSqlClient({ kind: 'postgres', url: url ?? '', searchPath: schema, poolSize: 8 }),
});
