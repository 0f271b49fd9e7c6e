import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import { callerAuth } from '../platform/settings/index.js';
import { startVssServing } from './serving/index.js';
import { openVssAdapters } from './vss-adapters.js';

/**
 * VSS serving (`vss.v1.SimilaritySearch`) on the SQL store, the platform's vector database (settings
 * `vss.vectorDb`: embedded in `<dataDir>/vectordb` by default, or Qdrant), and the cache. The
 * platform owns the vector database: it reports it on /readyz and closes it on shutdown.
 */
export async function startVssServingPart(
  platform: Platform,
  port = platform.settings.vss.servingPort,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const { sql, vectorDb, vectorDbs } = await openVssAdapters(platform);
  // Serving keeps its own in-process LRU; a shared cache is a second level only when it is Redis.
  const cache = settings.cache.kind === 'redis' ? await platform.cache() : undefined;
  const running = await startVssServing({
    sql,
    vectorDb,
    vectorDbs,
    cache,
    host: settings.host,
    port,
    logger,
    metrics,
    auth: callerAuth(settings),
    maxMessageBytes: settings.grpc.maxMessageBytes,
    shutdownGraceMs: settings.grpc.shutdownGraceMs,
    defaultDeadlineMs: settings.grpc.defaultDeadlineMs,
    maxInFlightCalls: settings.grpc.maxInFlightCalls,
    admission: settings.grpc.admission,
    pageTokenSecret: settings.vss.pageTokenSecret,
    recallSampleRate: settings.vss.recallSampleRate,
    // Listening now, answering UNAVAILABLE at once until every part of the process has started.
    startClosed: true,
  });
  return {
    name: 'vss-serving',
    port: running.port,
    endpoints: [['gRPC vss.v1.SimilaritySearch', `${settings.host}:${running.port}`]],
    stop: () => running.stop(),
    open: () => running.open(),
    local: running.local,
    // With the vector DB in this process, a restart is not ready until its graphs are back (a
    // shared vector DB server's index is every replica's: its metric and alert say so instead).
    ...(settings.vss.vectorDb.kind === 'embedded'
      ? { readiness: { servedIndex: running.indexHealth.check } }
      : {}),
  };
}
