import type { Platform } from '../../platform/platform.js';

/**
 * Where each port's adapter points, in words, for start-up and check output. Imports no adapter (a
 * read-only command such as `lattice models` describes the ports without loading them).
 */
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
        : s.vss.vectorDb.kind === 'pgvector'
          ? 'pgvector on the SQL database'
          : `Qdrant ${s.vss.vectorDb.url}`,
  };
}
