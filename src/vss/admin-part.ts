/**
 * vss admin as a part of `lattice vss` and `lattice up` (and `lattice vss admin` alone, with a vector
 * database server): the operations engine (outbox relay, admin consumers, scheduled resets) and the
 * admin HTTP API on `vss.admin.port`. Ingestion jobs run on the built-in file runner, whose job
 * records and checkpoints outlive the process so a job resumes after a restart (see jobStateStoreOf),
 * or on an external batch platform over HTTP (`vss.admin.jobRunner`).
 */
import { join } from 'node:path';
import { tlsOf } from '../platform/http/index.js';
import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import type { Settings } from '../platform/settings/index.js';
import type { SqlQueryable } from '../platform/sql/index.js';
import { buildAdminApi } from './admin/api/index.js';
import {
  FileJobRunner,
  FileJobStateStore,
  HttpJobRunner,
  type JobRunner,
  type JobStateStore,
  SqlJobStateStore,
} from './admin/jobs/index.js';
import { startAdminEngine, storeLiveRecall } from './admin/operations/index.js';
import { openVssStore } from './store/index.js';
import { openProductionVectorDb, openVssAdapters, vectorDbTypeOf } from './vss-adapters.js';

/**
 * Where the built-in runner keeps its job records. On PGlite this process alone runs admin on the
 * data directory: the records are files under `<dataDir>/jobs`, locked like the database, so a
 * restart after a crash takes its predecessor's jobs over at once (no lease to wait for). On
 * PostgreSQL admin replicas on other hosts share the work: the records are rows of the vss schema
 * (`sql`, migrated), so whichever replica takes an operation over sees its job, waits for a live
 * runner's lease, and takes over and resumes a dead one's.
 */
export function jobStateStoreOf(settings: Settings, sql: SqlQueryable): JobStateStore {
  if (settings.sql.kind === 'pglite') {
    return new FileJobStateStore(join(settings.dataDir, 'jobs'), { exclusive: true });
  }
  return new SqlJobStateStore(sql);
}

function jobRunnerOf(
  platform: Platform,
  queue: Awaited<ReturnType<Platform['queue']>>,
  sql: SqlQueryable,
): JobRunner {
  const { settings, logger } = platform;
  const runner = settings.vss.admin.jobRunner;
  if (runner.kind === 'http') return new HttpJobRunner({ baseUrl: runner.url!, tls: tlsOf(settings).client });
  return new FileJobRunner({
    queue,
    stateStore: jobStateStoreOf(settings, sql),
    leaseMs: runner.leaseMs,
    logger,
    trainingDataRoots: settings.vss.admin.trainingDataRoots,
  });
}

export async function startVssAdminPart(
  platform: Platform,
  port = platform.settings.vss.admin.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  // The vector databases first: a lock names the way out when another process owns one.
  const { vectorDb, sql } = await openVssAdapters(platform);
  const productionVectorDb = await openProductionVectorDb(platform);
  const queue = await platform.queue();
  const store = await openVssStore(sql);
  const jobRunner = jobRunnerOf(platform, queue, sql);
  const admin = settings.vss.admin;
  const engine = await startAdminEngine({
    store,
    queue,
    vectorDb,
    ...(productionVectorDb === undefined ? {} : { productionVectorDb }),
    vectorDbType: vectorDbTypeOf(settings.vss.vectorDb.kind),
    jobRunner,
    embeddingsTopic: settings.vss.consumers.embeddingsTopic,
    partitions: settings.vss.consumers.partitions,
    operationsTopic: admin.operationsTopic,
    group: admin.group,
    pollIntervalMs: admin.pollIntervalMs,
    scheduleIntervalMs: admin.scheduleIntervalMs,
    recallGate: { sampleSize: admin.recallSampleSize, k: admin.recallK },
    rollbackGraceMs: admin.rollbackGraceMs,
    // Live recall as every serving process records it in SQL (recall-watch.ts).
    ...(admin.autoRollback.enabled
      ? {
          liveRecall: storeLiveRecall(store),
          autoRollback: { windowMs: admin.autoRollback.windowMs, minSamples: admin.autoRollback.minSamples },
        }
      : {}),
    metrics,
    logger,
  }).catch(async (err: unknown) => {
    await jobRunner.close();
    throw err;
  });
  const stopEngine = async () => {
    await engine.stop();
    await jobRunner.close();
  };
  let app: Awaited<ReturnType<typeof buildAdminApi>> | undefined;
  try {
    app = await buildAdminApi({
      store,
      lifecycle: engine.lifecycle,
      servedIndex: engine.servedIndex,
      sql,
      logger,
      metrics,
      apiKeys: admin.apiKeys,
      ...(jobRunner.kind === 'file' ? { trainingDataRoots: admin.trainingDataRoots } : {}),
      readiness: platform.readiness(),
      readinessTimeoutMs: settings.metrics.readyTimeoutMs,
    });
    await app.listen({ host: settings.host, port });
  } catch (err) {
    await app?.close().catch(() => {});
    await stopEngine();
    throw err;
  }
  const address = app.server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  const auth = admin.apiKeys.length > 0 ? 'API key required' : 'no auth';
  return {
    name: 'vss-admin',
    port: bound,
    endpoints: [
      [
        `HTTP vss admin API (${auth}; OpenAPI at /docs)`,
        `${tlsOf(settings).server ? 'https' : 'http'}://${settings.host}:${bound}`,
      ],
    ],
    // The API first (no new operations), then the engine: steps in flight settle, jobs checkpoint.
    stop: async () => {
      await app.close();
      await stopEngine();
    },
  };
}
