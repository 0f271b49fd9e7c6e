/**
 * The admin engine's world (admin-engine-world.ts) in memory, PGlite, the memory queue and the
 * embedded vector DB, with the admin HTTP API in front of it (api-harness.ts) and a directory of its
 * own: what the engine tests that drive it over the API (operation outcomes, the recall gate,
 * rollback) share.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/platform/logging/index.js';
import { createQueue, type Queue } from '../../src/platform/queue/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/index.js';
import type { AdminEngineOptions } from '../../src/vss/admin/operations/index.js';
import { type Harness, openHarness } from '../vss/admin/api/api-harness.js';
import { type AdminWorld, openAdminWorld } from './admin-engine-world.js';
import { uniqueName } from './servers.js';

export interface AdminApiWorld {
  /** A directory of the test's own (training data), removed on close. */
  dir: string;
  sql: SqlClient;
  queue: Queue;
  vectorDb: EmbeddedVectorDb;
  world: AdminWorld;
  api: Harness;
  close(): Promise<void>;
}

/**
 * Opens it; `name` prefixes the directory, topics and groups. `engine` adds engine options, given
 * the SQL client when they need it (a live recall source on the same database).
 */
export async function openAdminApiWorld(
  name: string,
  engine?: (sql: SqlClient) => Promise<Partial<AdminEngineOptions>> | Partial<AdminEngineOptions>,
): Promise<AdminApiWorld> {
  const dir = mkdtempSync(join(tmpdir(), `lattice-${name}-`));
  const sql = await createSqlClient({ kind: 'pglite' });
  const queue = await createQueue({ kind: 'memory' });
  const vectorDb = await EmbeddedVectorDb.open();
  const world = await openAdminWorld({
    sql,
    queue,
    vectorDb,
    name: uniqueName(name).replace(/[^A-Za-z0-9_-]/g, '_'),
    logger: createLogger(name, { level: 'silent' }),
    ...(engine ? { engine: await engine(sql) } : {}),
  });
  const api = await openHarness(sql, { lifecycle: world.engine.lifecycle }, world.store);
  return {
    dir,
    sql,
    queue,
    vectorDb,
    world,
    api,
    async close() {
      await api.close();
      await world.close();
      await queue.close();
      await vectorDb.close();
      await sql.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
