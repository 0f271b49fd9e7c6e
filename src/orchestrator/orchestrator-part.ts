/**
 * The orchestrator as a part of a process (`lattice orchestrator`, `lattice up`): Predict and the
 * legacy APIs over the model configs under `models/` in the platform's config store, its clients to
 * the feature store, model servers and compute servers, the feature cache, and the inference log on
 * the platform's queue. Caller-token auth (settings `auth`) guards its API.
 */
import { grpcChannelCredentials, type LocalChannel } from '../platform/grpc/index.js';
import { tlsOf } from '../platform/http/index.js';
import type { Platform } from '../platform/platform.js';
import type { ListeningPart } from '../platform/running-part.js';
import { grpcServerSettings } from '../platform/settings/index.js';
import { startOrchestrator } from './api/index.js';
import { createOrchestratorClients } from './clients/index.js';
import { type ComponentClients, createComponentBuilder } from './components/index.js';
import type { ModelRegistry, ModelStatus } from './config/index.js';
import { ModelConfigs, ModelConsole } from './console/index.js';
import type { ExecutionContext } from './engine/execution-context.js';
import { InferenceLogger, QueueLogSink } from './logging/index.js';

/** The orchestrator part: also says what each model config serves (the ops server's GET /models). */
export interface OrchestratorPart extends ListeningPart {
  /** The live model configs under `models/`: each one's version changes when its config does. */
  readonly registry: ModelRegistry<ExecutionContext>;
  modelStatus(): ModelStatus[];
  /** The model configs, their history, DAGs, live traffic and example requests (the console's API). */
  readonly console: ModelConsole;
  /**
   * Stops inference logging now and waits up to `timeoutMs` (default 5 s) for what is buffered to be
   * written; says how many requests were dropped unwritten. `stop()` does it after draining calls.
   */
  closeInferenceLog(timeoutMs?: number): Promise<{ dropped: number }>;
}

/** The downstream clients the orchestrator's components call. */
export type DownstreamClients = Pick<ComponentClients, 'featureFetcher' | 'modelInferer' | 'remoteCompute'>;

export interface OrchestratorPartOptions {
  /** The feature store the feature components call; by default the configured one, else this stack's. */
  featureStoreTarget?: string;
  /** Servers of this process, called through their LocalChannel instead of loopback. */
  local?: readonly (LocalChannel | undefined)[];
  /**
   * Wraps the downstream clients before any component is built on them (the predict benchmark
   * times each call here); the clients' own channels are still closed by `stop()`.
   */
  decorateClients?: (clients: DownstreamClients) => DownstreamClients;
  /** Sees every finished execution, after the inference logger took it. */
  onExecution?: (context: ExecutionContext) => void;
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
  options: OrchestratorPartOptions = {},
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
    // vss serving guards Search with the platform's caller tokens: the process's outbound identity.
    vssCaller: {
      callerId: settings.auth.callerId,
      callerToken: settings.auth.callerToken,
      idHeader: settings.auth.callerIdHeader,
      tokenHeader: settings.auth.callerTokenHeader,
    },
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
  const downstream: DownstreamClients = {
    featureFetcher: clients.featureFetcher,
    modelInferer: clients.modelInferer,
    remoteCompute: clients.remoteCompute,
  };
  const { onExecution } = options;
  const running = await startOrchestrator({
    host: settings.host,
    port,
    store,
    buildComponent: createComponentBuilder({
      ...(options.decorateClients?.(downstream) ?? downstream),
      featureCache: { cache, metrics },
    }),
    logger,
    metrics,
    observe:
      onExecution === undefined
        ? (context) => void inferenceLogger.log(context)
        : (context) => {
            inferenceLogger.log(context);
            onExecution(context);
          },
    maxInFlightMatrixBytes: settings.orchestrator.maxInFlightMatrixBytes,
    shadow: {
      queueSize: settings.orchestrator.shadowQueueSize,
      concurrency: settings.orchestrator.shadowConcurrency,
      deadlineMs: settings.orchestrator.shadowDeadlineMs,
    },
    vssSearch: clients.vssSearch,
    retrievalFeatures: clients.featureFetcher,
    ...grpcServerSettings(settings),
    // Listening now, answering UNAVAILABLE at once until every part of the process has started.
    startClosed: true,
  });
  let inferenceLogClosed: Promise<{ dropped: number }> | undefined;
  const closeInferenceLog = (timeoutMs?: number) => {
    inferenceLogClosed ??= inferenceLogger.close(timeoutMs);
    return inferenceLogClosed;
  };
  // Changes written to the store outside the console's API are recorded in the history from here on.
  const configs = new ModelConfigs({ store, registry: running.registry, logger });
  try {
    await configs.start();
  } catch (err) {
    await running.stop();
    clients.close();
    throw err;
  }
  const modelConsole = new ModelConsole({
    configs,
    registry: running.registry,
    traffic: running.traffic,
    shadows: running.shadows,
    featureFetcher: clients.featureFetcher,
  });
  const models = running.registry.ids();
  return {
    name: 'orchestrator',
    port: running.port,
    registry: running.registry,
    modelStatus: () => running.registry.status(),
    console: modelConsole,
    endpoints: [
      [
        `gRPC orchestrator.v1 Predict + Orchestrator (${models.length} models: ${models.join(', ') || 'none yet'})`,
        `${settings.host}:${running.port}`,
      ],
    ],
    open: () => running.open(),
    closeInferenceLog,
    stop: async () => {
      await configs.stop();
      await running.stop();
      await closeInferenceLog();
      clients.close();
    },
  };
}
