/**
 * The services `lattice up` starts in one process, each also runnable alone (`lattice orchestrator`,
 * …). A part starts on the platform's adapters and reports where it listens. Caller-token auth
 * (settings `auth`) guards the orchestrator's public API; the reference servers are internal peers
 * and run without it here.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  BLEND_COMPUTE_ID,
  BLEND_EXPRESSION,
  CATALOG_RANKER_ID,
  CATALOG_RANKER_MODEL,
  catalogRankerConfig,
  writeCatalogRankerModel,
} from './catalog-ranker.js';
import { startComputeServer } from '../compute/server/index.js';
import {
  FeatureRegistry,
  MirroredFeatureStore,
  ServedRegistry,
  SqlFeatureStore,
  seedDemoData,
  startFeatureStore,
} from '../featurestore/index.js';
import { startModelServer, writeDemoModels } from '../modelserver/index.js';
import { startOrchestrator } from '../orchestrator/api/index.js';
import { createOrchestratorClients } from '../orchestrator/clients/index.js';
import { createComponentBuilder } from '../orchestrator/components/index.js';
import type { ModelStatus } from '../orchestrator/config/index.js';
import { InferenceLogger, QueueLogSink } from '../orchestrator/logging/index.js';
import { grpcChannelCredentials, type LocalChannel } from '../platform/grpc/index.js';
import { type ReadinessCheck, tlsOf } from '../platform/http/index.js';
import type { Platform } from '../platform/platform.js';
import { callerAuth, type Settings } from '../platform/settings/index.js';
import type { VectorDb } from '../platform/vectordb/index.js';
import { startVssConsumers } from '../vss/consumers/index.js';
import { ClusterVectorDbs } from '../vss/model/index.js';
import { startVssServing } from '../vss/serving/index.js';

export interface RunningPart {
  name: string;
  /** What listens (or consumes) where, e.g. `['gRPC retrieve.FeatureService', '127.0.0.1:50052']`. */
  endpoints: [string, string][];
  stop(): Promise<void>;
  /** Readiness checks of its own, beside "accepts connections" (added to the ops server's /readyz). */
  readiness?: Record<string, ReadinessCheck>;
  /**
   * Starts serving calls, for a part that listens from its start but answers UNAVAILABLE until the
   * whole process has started (the composition root calls it once every part is up).
   */
  open?(): void;
}

/** A part that serves on a port. */
export interface ListeningPart extends RunningPart {
  /** The port it bound (the configured one, or a free one when configured as 0). */
  port: number;
  /** Its gRPC methods for the other parts of this process, without the network (none with caller tokens). */
  local?: LocalChannel;
}

/** The orchestrator part: also says what each model config serves (the ops server's GET /models). */
export interface OrchestratorPart extends ListeningPart {
  modelStatus(): ModelStatus[];
}

function authOf(platform: Platform) {
  return callerAuth(platform.settings);
}

/**
 * The orchestrator: Predict and legacy APIs over the model configs under `models/`, live. Its feature
 * components call `featureStoreTarget` (by default the configured one, else this stack's feature
 * store at `<host>:<featurestore.port>`). A call to a target that names one of the `local` servers
 * (this process's feature store, model server or compute) takes its LocalChannel instead of loopback.
 */
export async function startOrchestratorPart(
  platform: Platform,
  port = platform.settings.orchestrator.port,
  options: { featureStoreTarget?: string; local?: readonly (LocalChannel | undefined)[] } = {},
): Promise<OrchestratorPart> {
  const { settings, logger, metrics } = platform;
  const [store, cache] = await Promise.all([platform.configStore(), platform.cache()]);
  const clients = createOrchestratorClients({
    metrics,
    featureStoreTarget:
      options.featureStoreTarget ??
      settings.orchestrator.featureStoreTarget ??
      `${settings.host}:${settings.featurestore.port}`,
    callerId: settings.orchestrator.featureStoreCallerId || undefined,
    callerToken: settings.orchestrator.featureStoreCallerToken || undefined,
    channelsPerTarget: settings.orchestrator.channelsPerTarget,
    maxInFlightPerEndpoint: settings.orchestrator.maxInFlightPerEndpoint,
    credentials: grpcChannelCredentials(tlsOf(settings).client),
    local: options.local?.filter((channel) => channel !== undefined),
  });
  // Inference logs go through a bounded buffer to the queue: logging never blocks or fails a request.
  // The log topic is bounded (orchestrator.logTopicRetentionMs / logTopicMaxBytes), and so is the buffer.
  const inferenceLogger = new InferenceLogger({
    sink: new QueueLogSink(await platform.queue(), settings.orchestrator.logTopic, {
      retentionMs: settings.orchestrator.logTopicRetentionMs,
      maxBytes: settings.orchestrator.logTopicMaxBytes,
    }),
    metrics,
    logger,
    maxBufferedBytes: settings.orchestrator.logBufferMaxBytes,
  });
  const running = await startOrchestrator({
    host: settings.host,
    port,
    store,
    buildComponent: createComponentBuilder({ ...clients, featureCache: { cache, metrics } }),
    logger,
    metrics,
    observe: (context) => void inferenceLogger.log(context),
    maxInFlightMatrixBytes: settings.orchestrator.maxInFlightMatrixBytes,
    auth: authOf(platform),
    maxMessageBytes: settings.grpc.maxMessageBytes,
    shutdownGraceMs: settings.grpc.shutdownGraceMs,
    defaultDeadlineMs: settings.grpc.defaultDeadlineMs,
    maxInFlightCalls: settings.grpc.maxInFlightCalls,
    admission: settings.grpc.admission,
    // Listening now, answering UNAVAILABLE at once until every part of the process has started.
    startClosed: true,
  });
  const models = running.registry.ids();
  return {
    name: 'orchestrator',
    port: running.port,
    modelStatus: () => running.registry.status(),
    endpoints: [
      [
        `gRPC orchestrator.v1 Predict + Orchestrator (${models.length} models: ${models.join(', ') || 'none yet'})`,
        `${settings.host}:${running.port}`,
      ],
    ],
    open: () => running.open(),
    stop: async () => {
      await running.stop();
      await inferenceLogger.close();
      clients.close();
    },
  };
}

/**
 * The reference feature store: the registry file's entities or the generated demo data (made again
 * at each start, in memory), plus what was loaded into it through FeatureWriterService (entity
 * definitions and rows, kept in the platform's SQL database so a restart serves them again).
 */
export async function startFeatureStorePart(
  platform: Platform,
  port = platform.settings.featurestore.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const durable = await SqlFeatureStore.open(await platform.sqlClient());
  let base: FeatureRegistry | undefined = settings.featurestore.registry
    ? FeatureRegistry.fromFile(settings.featurestore.registry)
    : undefined;
  const { store, rows } = await MirroredFeatureStore.open(durable, {
    seed: async (memory) => {
      base ??= (await seedDemoData(memory)).registry;
    },
  });
  let registry = base!;
  for (const definition of await durable.registeredEntities()) {
    registry = registry.withEntities({ entities: [definition] }, 'a registered entity').registry;
  }
  const served = new ServedRegistry(registry, (name, definition) => durable.saveEntity(name, definition));
  const running = await startFeatureStore({
    registry: served,
    store,
    host: settings.host,
    port,
    logger,
    metrics,
    closeStore: true,
  });
  const loaded = rows > 0 ? `, ${rows} loaded rows` : '';
  return {
    name: 'featurestore',
    port: running.port,
    local: running.local,
    endpoints: [
      [
        `gRPC retrieve.FeatureService + featurestore.v1.FeatureWriterService (${settings.featurestore.registry ? 'registry file' : 'seeded demo data'}${loaded})`,
        `${settings.host}:${running.port}`,
      ],
    ],
    stop: () => running.stop(),
  };
}

/** The reference model server over the model repository (demo models written when it is empty). */
export async function startModelServerPart(
  platform: Platform,
  port = platform.settings.modelserver.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const repository = settings.modelserver.repository;
  if (!existsSync(join(repository, CATALOG_RANKER_MODEL))) {
    writeDemoModels(repository);
    writeCatalogRankerModel(repository);
  }
  const running = await startModelServer({ repository, host: settings.host, port, logger, metrics });
  return {
    name: 'modelserver',
    port: running.port,
    local: running.local,
    endpoints: [
      [`gRPC inference.GRPCInferenceService (KServe v2, ${repository})`, `${settings.host}:${running.port}`],
    ],
    stop: () => running.stop(),
  };
}

/** The reference compute server over the expressions under `compute/`. */
export async function startComputePart(
  platform: Platform,
  port = platform.settings.compute.port,
): Promise<ListeningPart> {
  const { settings, logger, metrics } = platform;
  const store = await platform.configStore();
  const running = await startComputeServer({ store, host: settings.host, port, logger, metrics });
  return {
    name: 'compute',
    port: running.port,
    local: running.local,
    endpoints: [['gRPC numerix.Numerix', `${settings.host}:${running.port}`]],
    stop: () => running.stop(),
  };
}

/**
 * Whether `lattice up` seeds the example model: into the embedded (file) config store, which is this
 * machine's own, whenever it has no models; into a shared one (etcd) only when asked (`--seed-demo`),
 * since other deployments read it.
 */
export function shouldSeedExampleModel(
  settings: Pick<Settings, 'configStore'>,
  flags: { seedDemo?: boolean } = {},
): boolean {
  return flags.seedDemo === true || settings.configStore.kind === 'file';
}

/**
 * On a store that has none, writes the example catalog ranker (config and blend expression) pointing
 * at this stack's model and compute servers, so a fresh `npm start` answers real requests.
 */
export async function seedExampleModel(
  platform: Platform,
  targets: { modelServer: string; computeServer: string },
): Promise<boolean> {
  const store = await platform.configStore();
  if ((await store.list('models/')).length > 0) return false;
  await store.put(`compute/${BLEND_COMPUTE_ID}`, { expression: BLEND_EXPRESSION });
  await store.put(`models/${CATALOG_RANKER_ID}`, catalogRankerConfig(targets));
  return true;
}

/**
 * The vector database first: when another process owns the embedded one's data directory, its lock
 * says to run the vss components together or use Qdrant (the SQL and queue locks would not).
 */
export async function openVssAdapters(platform: Platform) {
  const vectorDb = await platform.vectorDb();
  const production = await openProductionVectorDb(platform);
  const sql = await platform.sqlClient();
  return { vectorDb, vectorDbs: clusterVectorDbs(platform, vectorDb, production), sql };
}

/**
 * The production cluster's vector DB, unless it is the embedded default beside an experiment vector
 * DB server: an embedded database lives inside one process, which a scaled-out deployment (Qdrant,
 * processes per component) does not have; configure a production server there to promote.
 */
export async function openProductionVectorDb(platform: Platform): Promise<VectorDb | undefined> {
  const { vectorDb, clusters } = platform.settings.vss;
  if (vectorDb.kind !== 'embedded' && clusters.production.vectorDb.kind === 'embedded') return undefined;
  return platform.productionVectorDb();
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

const clusters = new WeakMap<Platform, ClusterVectorDbs>();

/**
 * One routing value per process (vss.md "Concepts": each variant is searched, written and indexed on
 * its cluster's vector DB), shared by serving, the consumers and admin, so they agree on it.
 */
function clusterVectorDbs(
  platform: Platform,
  experiment: VectorDb,
  production: VectorDb | undefined,
): ClusterVectorDbs {
  let routing = clusters.get(platform);
  if (routing === undefined) {
    routing = new ClusterVectorDbs(experiment, {
      ...(production === undefined ? {} : { production }),
      productionCacheKeyPrefix: platform.settings.vss.clusters.production.cacheKeyPrefix,
    });
    clusters.set(platform, routing);
  }
  return routing;
}

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
    auth: authOf(platform),
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
    // With the vector DB in this process, a restart is not ready until its graphs are back (a
    // shared vector DB server's index is every replica's: its metric and alert say so instead).
    ...(settings.vss.vectorDb.kind === 'embedded'
      ? { readiness: { servedIndex: running.indexHealth.check } }
      : {}),
  };
}

/**
 * The vss consumers (src/vss/consumers/vss-consumers.ts): the vss topics ensured (settings
 * `vss.consumers`), embedding events, EOF markers and real-time events applied to the SQL store and
 * the platform's vector database, and the sweep of expired embedding-store rows. On the embedded
 * vector database this must share its process with vss serving (`lattice vss`): the database lives
 * in one process.
 */
export async function startVssConsumersPart(
  platform: Platform,
  options: { partitions?: readonly number[] } = {},
): Promise<RunningPart> {
  const { settings, logger, metrics } = platform;
  const { sql, vectorDb, vectorDbs } = await openVssAdapters(platform);
  const queue = await platform.queue();
  const consumers = await startVssConsumers({
    sql,
    vectorDb,
    vectorDbs,
    vectorDbType: settings.vss.vectorDb.kind === 'embedded' ? 'EMBEDDED' : 'QDRANT',
    queue,
    settings: settings.vss.consumers,
    metrics,
    logger,
    ...(options.partitions === undefined ? {} : { partitions: options.partitions }),
  });
  const own =
    consumers.ownPartitions.length === consumers.partitions
      ? `${consumers.partitions} partitions per topic`
      : `partitions ${consumers.ownPartitions.join(',')} of ${consumers.partitions} per topic`;
  return {
    name: 'vss-consumers',
    endpoints: [
      [
        `vss consumers (group ${consumers.group}, ${own})`,
        `${settings.queue.kind} topics ${consumers.topics.join(', ')}`,
      ],
    ],
    stop: () => consumers.stop(),
  };
}
