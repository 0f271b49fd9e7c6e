import type { ConfigStore } from '../../platform/config-store/index.js';
import { type AdmissionLimits, type CallerAuthOptions, GrpcServer } from '../../platform/grpc/index.js';
import type { Logger } from '../../platform/logging/index.js';
import type { Metrics } from '../../platform/metrics/index.js';
import type { FeatureFetcher } from '../clients/feature-fetcher.js';
import type { VssSearch } from '../clients/vss-search-client.js';
import { type ComponentBuilder, ModelRegistry } from '../config/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { InferenceEngine } from '../engine/inference-engine.js';
import { MatrixBudget } from '../engine/matrix-budget.js';
import { ShadowFigures } from '../shadow/shadow-figures.js';
import { ShadowMirror } from '../shadow/shadow-mirror.js';
import { ModelTraffic } from '../traffic/model-traffic.js';
import { timedComponents } from '../traffic/timed-components.js';
import { LegacyService } from '../wire/legacy-response-codec.js';
import { PredictServiceAnswers } from '../wire/predict-response-codec.js';
import { classifyPredict } from './admission-class.js';
import { type ExecutionObserver, legacyHandlers, predictHandlers } from './orchestrator-services.js';

export interface OrchestratorServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  store: ConfigStore;
  buildComponent: ComponentBuilder<ExecutionContext>;
  logger: Logger;
  metrics: Metrics;
  auth?: CallerAuthOptions;
  maxMessageBytes?: number;
  shutdownGraceMs?: number;
  /** Deadline of calls that carry none (GrpcServer's default when unset). */
  defaultDeadlineMs?: number;
  /** Unary calls in flight before RESOURCE_EXHAUSTED (GrpcServer's default when unset). */
  maxInFlightCalls?: number;
  /** Per-class concurrency and queues (settings `grpc.admission`; GrpcServer's defaults when unset). */
  admission?: AdmissionLimits;
  /** Bytes of request matrices alive at once (InferenceEngine's default when unset). */
  maxInFlightMatrixBytes?: number;
  /** Sees every finished execution (inference logging). */
  observe?: ExecutionObserver;
  /** Shadow configs' queue, concurrency and deadline (settings `orchestrator.shadow*`; defaults 100, 2, 1000 ms). */
  shadow?: { queueSize?: number; concurrency?: number; deadlineMs?: number };
  /** vss Search, for model configs with a retrieval stage; without it such a config's Predict fails. */
  vssSearch?: VssSearch;
  /** The feature store, for retrievers whose query is a feature-store vector (`feature_store_vector`). */
  retrievalFeatures?: FeatureFetcher;
  /**
   * Listen at once but answer UNAVAILABLE until `open()` (GrpcServerOptions.startClosed): in `lattice
   * up` the process goes on starting its other parts (loading vss's vector database blocks its one
   * event loop), and a Predict must not wait on that unanswered.
   */
  startClosed?: boolean;
}

export interface RunningOrchestrator {
  port: number;
  registry: ModelRegistry<ExecutionContext>;
  engine: InferenceEngine;
  /** Requests and component runs of the last minute, per model (the console's live numbers). */
  traffic: ModelTraffic;
  /** Each (primary, shadow) pair's comparison figures (docs/orchestrator.md "Shadow configs"). */
  shadows: ShadowFigures;
  /** Serves calls after a `startClosed` start. */
  open(): void;
  /** Drains in-flight calls, then stops following config changes. */
  stop(): Promise<void>;
}

/**
 * The orchestrator service: `orchestrator.v1.Predict` and the legacy `Orchestrator` API on one gRPC
 * server (with health and reflection), model configs from the ConfigStore under `models/`, live.
 */
export async function startOrchestrator(options: OrchestratorServerOptions): Promise<RunningOrchestrator> {
  const traffic = new ModelTraffic();
  const registry = new ModelRegistry<ExecutionContext>({
    store: options.store,
    buildComponent: timedComponents(options.buildComponent, traffic),
    logger: options.logger,
    metrics: options.metrics,
  });
  registry.onChange((id, snapshot) => {
    if (snapshot === undefined) traffic.forget(id);
  });
  await registry.start();
  const engine = new InferenceEngine(
    registry,
    options.maxInFlightMatrixBytes === undefined
      ? undefined
      : new MatrixBudget(options.maxInFlightMatrixBytes),
    traffic,
    options.metrics,
    options.vssSearch,
    options.retrievalFeatures,
  );
  // Shadow executions take their own matrix budget: mirrored work never refuses a caller's request.
  const shadowEngine = new InferenceEngine(
    registry,
    new MatrixBudget(engine.matrixBudget.maxBytes),
    undefined,
    undefined,
    options.vssSearch,
    options.retrievalFeatures,
  );
  const shadows = new ShadowFigures(options.metrics);
  engine.mirror = new ShadowMirror({
    lookup: (id) => registry.get(id),
    run: (snapshot, input, trackingId, runOptions) =>
      shadowEngine.executeOn(snapshot, input, trackingId, runOptions),
    figures: shadows,
    queueSize: options.shadow?.queueSize ?? 100,
    concurrency: options.shadow?.concurrency ?? 2,
    deadlineMs: options.shadow?.deadlineMs ?? 1000,
    idle: () => engine.callers.idle(),
  });
  const server = new GrpcServer({
    name: 'orchestrator',
    host: options.host,
    port: options.port,
    logger: options.logger,
    metrics: options.metrics,
    auth: options.auth,
    maxMessageBytes: options.maxMessageBytes,
    shutdownGraceMs: options.shutdownGraceMs,
    defaultDeadlineMs: options.defaultDeadlineMs,
    maxInFlightCalls: options.maxInFlightCalls,
    admission: options.admission,
    reflectionProtos: ['orchestrator/v1/predict.proto', 'orchestrator/v1/orchestrator.proto'],
    startClosed: options.startClosed ?? false,
  });
  server.addUnaryService(PredictServiceAnswers, predictHandlers(engine, options.observe), classifyPredict);
  server.addUnaryService(LegacyService, legacyHandlers(engine, options.observe));
  let port: number;
  try {
    port = await server.start();
  } catch (err) {
    await registry.stop();
    throw err;
  }
  return {
    port,
    registry,
    engine,
    traffic,
    shadows,
    open: () => server.open(),
    stop: async () => {
      await server.stop();
      await registry.stop();
    },
  };
}
