/**
 * SQL port: `createSqlClient` picks the adapter from configuration alone (PGlite embedded, PostgreSQL
 * distributed); services see only `SqlClient`. `migrate` brings a schema up to date.
 */
import { PgliteSqlClient } from './pglite/pglite-sql-client.js';
import { PostgresSqlClient } from './postgres/postgres-sql-client.js';
import type { SqlClient } from './sql-client.js';

export type { MigrateOptions, Migration, MigrationReport } from './migrations.js';
export { migrate, migrationChecksum } from './migrations.js';
export type {
  SqlClient,
  SqlClientKind,
  SqlQueryable,
  SqlResult,
  SqlRow,
  SqlScalar,
  SqlSettings,
  SqlTransaction,
  SqlValue,
} from './sql-client.js';

export type SqlClientOptions =
  | {
      kind: 'pglite';
      /** On-disk database directory; in memory when omitted. */
      dataDir?: string;
      /** Bound on each statement's wait (PGlite cannot interrupt a running statement: see its adapter). */
      statementTimeoutMs?: number;
      /** The database on a worker thread of its own (default), or false: on the caller's thread. */
      worker?: boolean;
      sharedBuffersMb?: number;
      /** Make pgvector available (`CREATE EXTENSION vector`), for the pgvector vector DB adapter. */
      vector?: boolean;
    }
  | {
      kind: 'postgres';
      url: string;
      poolSize?: number;
      connectTimeoutMs?: number;
      statementTimeoutMs?: number;
      searchPath?: string;
      applicationName?: string;
    };

/** Opens the configured database; rejects with UNAVAILABLE (naming the address) when it cannot. */
export async function createSqlClient(options: SqlClientOptions): Promise<SqlClient> {
  switch (options.kind) {
    case 'pglite': {
      const { kind: _kind, ...pglite } = options;
      return PgliteSqlClient.open(pglite);
    }
    case 'postgres': {
      const { kind: _kind, ...postgres } = options;
      return PostgresSqlClient.connect(postgres);
    }
  }
}
