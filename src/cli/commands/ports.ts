import type { Platform } from '../../platform/platform.js';
import { openProductionVectorDb } from '../parts.js';

/** Where each port's adapter points, in words, for start-up and check output. */
export function describePorts(platform: Platform): Record<string, string> {
  const s = platform.settings;
  return {
    configStore:
      s.configStore.kind === 'file'
        ? `directory ${s.configStore.dir}`
        : `etcd ${s.configStore.endpoints.join(',')}`,
    queue:
      s.queue.kind === 'jetstream'
        ? `NATS JetStream ${s.queue.servers.join(',')}`
        : `in-process, ${s.queue.journalDir ? `journal ${s.queue.journalDir}` : 'no journal (lost on exit)'}`,
    sql:
      s.sql.kind === 'pglite'
        ? `PGlite ${s.sql.dataDir}`
        : `PostgreSQL ${s.sql.url.replace(/\/\/[^@/]*@/, '//***@')}`,
    cache:
      s.cache.kind === 'memory' ? 'in-memory LRU' : `Redis ${s.cache.url.replace(/\/\/[^@/]*@/, '//***@')}`,
    vectorDb:
      s.vss.vectorDb.kind === 'embedded'
        ? `embedded, snapshots in ${s.vss.vectorDb.dir}`
        : `Qdrant ${s.vss.vectorDb.url}`,
  };
}

/**
 * Opens every port's adapter; rejects with the first that cannot be opened, naming it. The vector
 * database goes first: when another process owns the embedded one, its lock names the way out.
 */
export async function openAllPorts(platform: Platform): Promise<void> {
  await platform.vectorDb();
  await openProductionVectorDb(platform);
  await Promise.all([
    platform.configStore(),
    platform.queue(),
    platform.sqlClient(),
    platform.cache(),
    platform.vectorDb(),
  ]);
}
