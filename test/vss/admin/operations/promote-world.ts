/**
 * The promotion tests' world: PGlite, the memory queue and two embedded vector DBs in temp dirs
 * (experiment and production) behind one ClusterVectorDbs, with the real consumers, the operations
 * engine (promotion plans included by default) and vss serving, all routing by cluster. Short
 * settle and catalog times keep a promotion to a second or two.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../../src/platform/logging/index.js';
import { Metrics } from '../../../../src/platform/metrics/index.js';
import { createQueue, type Queue } from '../../../../src/platform/queue/index.js';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { EmbeddedVectorDb, type VectorDb } from '../../../../src/platform/vectordb/index.js';
import { FileJobRunner } from '../../../../src/vss/admin/jobs/index.js';
import { type AdminEngine, startAdminEngine } from '../../../../src/vss/admin/operations/index.js';
import { startVssConsumers, type VssConsumers } from '../../../../src/vss/consumers/index.js';
import { ClusterVectorDbs, collectionName } from '../../../../src/vss/model/index.js';
import { startVssServing, type VssServing } from '../../../../src/vss/serving/index.js';
import { openVssStore, type VssStore } from '../../../../src/vss/store/index.js';
import { type Catalog, consumerSettings, PARTITIONS } from '../../../support/admin-engine-world.js';
import { uniqueName } from '../../../support/servers.js';
import { Client } from '../../serving/harness.js';

export interface PromoteWorld {
  sql: SqlClient;
  queue: Queue;
  store: VssStore;
  experiment: EmbeddedVectorDb;
  production: EmbeddedVectorDb;
  engine: AdminEngine;
  consumers: VssConsumers;
  serving: VssServing;
  client: Client;
  /** Stops the engine and starts another on the same adapters (a restart), its production DB `production`. */
  restartEngine(production?: VectorDb): Promise<AdminEngine>;
  /** Points of the model version's collection on a cluster's vector DB; undefined when there is none. */
  points(db: VectorDb, catalog: Catalog, version: number): Promise<number | undefined>;
  close(): Promise<void>;
}

export const SETTLE_MS = 300;

export async function openPromoteWorld(): Promise<PromoteWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-promote-'));
  const name = uniqueName('prm').replace(/[^A-Za-z0-9_-]/g, '_');
  const logger = createLogger('promote-world', { level: 'silent' });
  const metrics = new Metrics();
  const sql = await createSqlClient({ kind: 'pglite' });
  const queue = await createQueue({ kind: 'memory' });
  const experiment = await EmbeddedVectorDb.open({ dir: join(dir, 'experiment') });
  const production = await EmbeddedVectorDb.open({ dir: join(dir, 'production') });
  const vectorDbs = new ClusterVectorDbs(experiment, { production });
  const store = await openVssStore(sql);
  const settings = consumerSettings(name);
  const consumers = await startVssConsumers({
    sql,
    vectorDb: experiment,
    vectorDbs,
    vectorDbType: 'EMBEDDED',
    queue,
    settings,
    metrics,
    logger,
    catalogTtlMs: 100,
  });
  const jobRunner = new FileJobRunner({ queue, batchRows: 200, checkpointEveryMs: 100 });
  const start = (productionDb: VectorDb) =>
    startAdminEngine({
      store,
      queue,
      vectorDb: experiment,
      vectorDbType: 'EMBEDDED',
      productionVectorDb: productionDb,
      promoteSettleMs: SETTLE_MS,
      jobRunner,
      embeddingsTopic: settings.embeddingsTopic,
      partitions: PARTITIONS,
      operationsTopic: `${name}-ops`,
      group: `${name}-admin`,
      pollIntervalMs: 50,
      scheduleIntervalMs: 0,
      metrics,
      logger,
    });
  const world: PromoteWorld = {
    sql,
    queue,
    store,
    experiment,
    production,
    engine: await start(production),
    consumers,
    serving: await startVssServing({
      sql,
      vectorDb: experiment,
      vectorDbs,
      host: '127.0.0.1',
      port: 0,
      logger,
      refreshIntervalMs: 100,
      pageTokenSecret: 'promote-test-secret',
    }),
    client: undefined as unknown as Client,
    async restartEngine(productionDb = production) {
      await world.engine.stop();
      world.engine = await start(productionDb);
      return world.engine;
    },
    async points(db, catalog, version) {
      const name = collectionName(catalog.entity, catalog.modelName, version);
      if (!(await db.listCollections()).includes(name)) return undefined;
      return (await db.collectionInfo(name)).points;
    },
    async close() {
      world.client.close();
      await world.serving.stop();
      await world.engine.stop();
      await jobRunner.close();
      await consumers.stop();
      await queue.close();
      await experiment.close();
      await production.close();
      await sql.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  world.client = new Client(`127.0.0.1:${world.serving.port}`);
  return world;
}
