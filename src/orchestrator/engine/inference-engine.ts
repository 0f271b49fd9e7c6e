import { describeError } from '../../platform/errors.js';
import type { Metrics } from '../../platform/metrics/index.js';
import { IdleGate } from '../../platform/scheduling/index.js';
import type { FeatureFetcher } from '../clients/feature-fetcher.js';
import type { VssSearch } from '../clients/vss-search-client.js';
import type { ModelRegistry, ModelSnapshot } from '../config/index.js';
import { FEATURE_INIT } from '../config/index.js';
import { type DagComponent, DagExecutor, type ExecutionReport, ExecutionTimeline } from '../dag/index.js';
import type { ModelTraffic } from '../traffic/model-traffic.js';
import type { ExecutionContext } from './execution-context.js';
import { type InferenceRequest, initRequestMatrices } from './feature-init.js';
import { MatrixBudget } from './matrix-budget.js';
import { retrieveTargets } from './retrieval-stage.js';
import { type Routed, SplitRouter } from './split-routing.js';

export interface ExecuteOptions {
  /** Aborted when the caller cancels; every component sees it. */
  signal?: AbortSignal;
  /** Epoch milliseconds; the whole DAG is bounded by it. */
  deadline?: number;
  /**
   * Filled when the request ends, succeeded or not, with every component's start, duration and
   * state (FeatureInit's work counted as the `feature_init` node); nothing is recorded without it.
   */
  timeline?: ExecutionTimeline;
  /**
   * A background execution (a shadow request) waits before its retrieval, its FeatureInit and each
   * component while this returns a promise ({@link InferenceEngine.callers}' idle()).
   */
  pause?(): Promise<void> | undefined;
}

/** What the engine asks of a request mirror (shadow/shadow-mirror.ts): on the request path, so both are O(1). */
export interface RequestMirror {
  /** Before the primary runs: is this request mirrored? (The primary then records a timeline.) */
  wants(snapshot: ModelSnapshot<ExecutionContext>, trackingId: string): boolean;
  /** After the primary answered: queues the shadow run or drops it; never waits, never throws. */
  send(input: InferenceRequest, primary: InferenceResult, timeline: ExecutionTimeline): void;
}

export interface InferenceResult {
  readonly context: ExecutionContext;
  readonly report: ExecutionReport;
  /** What failed without failing the request (a retriever of the retrieval stage), for PredictResponse.errors. */
  readonly errors: readonly string[];
}

/** The root node: FeatureInit's work is done before the DAG starts (its errors are INVALID_ARGUMENT, not component failures). */
const featureInitNode: DagComponent<ExecutionContext> = { name: FEATURE_INIT, required: true, run: () => {} };

/**
 * Runs one request: takes the model's current snapshot (kept for the whole request, whatever
 * reloads happen meanwhile; for a config with a sticky A/B split, the snapshot of the arm the
 * request's key hashes to, split-routing.ts), builds the matrices (FeatureInit), then executes the snapshot's DAG.
 * A non-required component that fails leaves every column it writes at the type's default and marks
 * every row it affects with its name; a required one fails the request (UNAVAILABLE naming it).
 */
export class InferenceEngine {
  private readonly executor = new DagExecutor<ExecutionContext>();
  /** Sends a sample of the requests of configs with a `shadow` block to their shadow, after they answered. */
  mirror: RequestMirror | undefined;
  private readonly splits: SplitRouter<ExecutionContext>;
  /** Callers' requests in flight (`execute`); shadow requests run while none is (their `pause`). */
  readonly callers = new IdleGate();

  constructor(
    private readonly registry: ModelRegistry<ExecutionContext>,
    /** Bytes of request matrices alive at once (RESOURCE_EXHAUSTED past it); default 1 GiB. */
    readonly matrixBudget = new MatrixBudget(1024 * 1024 * 1024),
    /** Counts each request of a known model, failed or not, and times it (the console's live numbers). */
    private readonly traffic?: ModelTraffic,
    /** Where the per-arm numbers of sticky A/B splits go (splits route without it, uncounted). */
    metrics?: Metrics,
    /** vss Search, for configs with a retrieval stage (retrieval-stage.ts). */
    private readonly vss?: VssSearch,
    /** The feature store, for retrievers whose query is a feature-store vector. */
    private readonly retrievalFeatures?: FeatureFetcher,
  ) {
    this.splits = new SplitRouter(registry, metrics, traffic);
  }

  async execute(
    modelConfigId: string,
    input: InferenceRequest,
    trackingId: string,
    options: ExecuteOptions = {},
  ): Promise<InferenceResult> {
    // A config with a sticky A/B split is served by the arm the request's key hashes to; the arm's
    // config (its own shadow block included) serves the whole request.
    const routed = this.splits.route(this.registry.require(modelConfigId), input);
    this.callers.enter();
    try {
      if (this.mirror?.wants(routed.snapshot, trackingId)) {
        return await this.mirrored(modelConfigId, routed, input, trackingId, options);
      }
      return await this.counted(modelConfigId, routed, input, trackingId, options);
    } finally {
      this.callers.leave();
    }
  }

  /** A mirrored request records its timeline (for the latency comparison) and is queued for the shadow once answered. */
  private async mirrored(
    modelConfigId: string,
    routed: Routed<ExecutionContext>,
    input: InferenceRequest,
    trackingId: string,
    options: ExecuteOptions,
  ): Promise<InferenceResult> {
    const timeline = options.timeline ?? new ExecutionTimeline();
    const result = await this.counted(modelConfigId, routed, input, trackingId, { ...options, timeline });
    this.mirror?.send(input, result, timeline);
    return result;
  }

  /** Runs the routed snapshot, counted under the config the request named and under its split arm. */
  private async counted(
    modelConfigId: string,
    { snapshot, arm }: Routed<ExecutionContext>,
    input: InferenceRequest,
    trackingId: string,
    options: ExecuteOptions,
  ): Promise<InferenceResult> {
    if (this.traffic === undefined && arm === undefined) {
      return this.executeOn(snapshot, input, trackingId, options);
    }
    const series = this.traffic?.requests(modelConfigId);
    const started = performance.now();
    try {
      const result = await this.executeOn(snapshot, input, trackingId, options);
      const ms = performance.now() - started;
      series?.record(ms, false);
      arm?.record(ms, false);
      return result;
    } catch (err) {
      const ms = performance.now() - started;
      series?.record(ms, true);
      arm?.record(ms, true);
      throw err;
    }
  }

  async executeOn(
    snapshot: ModelSnapshot<ExecutionContext>,
    input: InferenceRequest,
    trackingId: string,
    options: ExecuteOptions = {},
  ): Promise<InferenceResult> {
    const timeline = options.timeline;
    // Retrieval, when the config has it, makes the targets before FeatureInit (counted in its time).
    const prepare = async () => {
      const paused = options.pause?.();
      if (paused !== undefined) await paused;
      const retrieved = await retrieveTargets(
        { vss: this.vss, features: this.retrievalFeatures },
        snapshot,
        input,
        initOptions(options),
      );
      input = retrieved.input;
      const pausedAgain = options.pause?.();
      if (pausedAgain !== undefined) await pausedAgain;
      return {
        ...(await initRequestMatrices(snapshot, input, initOptions(options))),
        errors: retrieved.errors,
      };
    };
    const { matrix, slate, errors } = await (timeline === undefined
      ? prepare()
      : timedInit(snapshot, prepare, timeline));
    const initMs = timeline === undefined ? 0 : performance.now() - timeline.origin;
    try {
      const release = this.matrixBudget.acquire(
        matrix.layout.arenaBytes(matrix.rowCount) + (slate ? slate.layout.arenaBytes(slate.rowCount) : 0),
      );
      try {
        return { ...(await this.run(snapshot, input, trackingId, options, matrix, slate)), errors };
      } finally {
        release();
      }
    } finally {
      if (timeline !== undefined) endTimeline(timeline, snapshot, initMs);
    }
  }

  private async run(
    snapshot: ModelSnapshot<ExecutionContext>,
    input: InferenceRequest,
    trackingId: string,
    options: ExecuteOptions,
    matrix: ExecutionContext['matrix'],
    slate: ExecutionContext['slate'],
  ): Promise<Omit<InferenceResult, 'errors'>> {
    const deadline = options.deadline ?? Number.POSITIVE_INFINITY;
    const context: ExecutionContext = {
      snapshot,
      matrix,
      slate,
      pattern: input.pattern,
      trackingId,
      deadline,
    };
    const components = snapshot.components;
    const report = await this.executor.execute(
      snapshot.model.topology,
      (name) => (name === FEATURE_INIT ? featureInitNode : components.get(name)!),
      context,
      {
        signal: options.signal,
        deadline,
        timeline: options.timeline,
        pause: options.pause,
        onFailure: (component, error) => {
          const reason = `${component.name} failed: ${describeError(error)}`;
          const plan = snapshot.model.components.get(component.name);
          const target = plan?.kind !== 'feature' && plan?.config.slate ? slate : matrix;
          if (!target) return;
          // A failed component's cells all take the default, whatever it wrote before failing, so
          // no later component (or the response) reads a mix of its values and defaults.
          for (const spec of plan?.writes ?? []) {
            if (target.hasByteColumn(spec.name)) target.byteColumn(spec.name).reset();
          }
          target.addErrorToAllRows(reason);
        },
      },
    );
    return { context, report };
  }
}

function initOptions(options: ExecuteOptions): { signal: AbortSignal; deadline: number } {
  return {
    signal: options.signal ?? new AbortController().signal,
    deadline: options.deadline ?? Number.POSITIVE_INFINITY,
  };
}

/** FeatureInit for a request that asked for timings: its failure ends the timeline, nothing else ran. */
async function timedInit<T>(
  snapshot: ModelSnapshot<ExecutionContext>,
  prepare: () => Promise<T>,
  timeline: ExecutionTimeline,
): Promise<T> {
  try {
    return await prepare();
  } catch (err) {
    const durationMs = performance.now() - timeline.origin;
    skipAll(timeline, snapshot);
    timeline.set({ name: FEATURE_INIT, state: 'failed', startMs: 0, durationMs });
    end(timeline, snapshot);
    throw err;
  }
}

/**
 * The DAG's `feature_init` node does nothing (FeatureInit's work is done before the DAG starts): its
 * entry is that work's time instead.
 */
function endTimeline(
  timeline: ExecutionTimeline,
  snapshot: ModelSnapshot<ExecutionContext>,
  initMs: number,
): void {
  // The matrix budget refused the request: the DAG never started.
  if (timeline.components.length === 0) skipAll(timeline, snapshot);
  timeline.set({ name: FEATURE_INIT, state: 'ran', startMs: 0, durationMs: initMs });
  end(timeline, snapshot);
}

/** Each entry gets its component's kind (`feature_init`, `feature`, `model`, `compute`). */
function end(timeline: ExecutionTimeline, snapshot: ModelSnapshot<ExecutionContext>): void {
  const plans = snapshot.model.components;
  timeline.record(timeline.components.map((c) => ({ ...c, kind: plans.get(c.name)?.kind ?? FEATURE_INIT })));
  timeline.end();
}

function skipAll(timeline: ExecutionTimeline, snapshot: ModelSnapshot<ExecutionContext>): void {
  timeline.record(
    snapshot.model.topology.nodes.map((name) => ({ name, state: 'skipped', startMs: 0, durationMs: 0 })),
  );
}
