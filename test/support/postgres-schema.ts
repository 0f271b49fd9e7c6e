/**
 * A PostgreSQL schema of a suite's own: created before the suite, dropped (with everything in it)
 * after, so suites run beside each other and beside earlier runs' leftovers. Call it inside the
 * `describe` it serves (or at the top of a file); clients from `open` see only that schema (their
 * search_path).
 */
import { after, before } from 'node:test';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { uniqueName } from './servers.js';

export interface PostgresSchema {
  readonly name: string;
  /** A client whose search_path is the schema. */
  open(poolSize?: number): Promise<SqlClient>;
}

export function postgresSchema(url: string | undefined, prefix: string): PostgresSchema {
  const name = uniqueName(prefix).toLowerCase();
  let admin: SqlClient | undefined;
  before(async () => {
    if (url === undefined) return; // the suite skips
    admin = await createSqlClient({ kind: 'postgres', url, poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${name}`);
  });
  after(async () => {
    await admin?.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    await admin?.close();
  });
  return {
    name,
    open: (poolSize = 8) => createSqlClient({ kind: 'postgres', url: url ?? '', searchPath: name, poolSize }),
  };
}
