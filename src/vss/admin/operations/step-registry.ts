/**
 * The operation kinds the engine can run, each as an ordered list of named steps, registered by
 * kind. The engine knows no kind itself: each kind's file (steps/*.ts) registers its plan, so a
 * kind added later (PROMOTE_MODEL, PROMOTE_VARIANT) is one more file and one `register` call in
 * the composition, with nothing else changed. An operation of a kind with no plan stays PENDING
 * (and is logged) until an engine that knows the kind runs it.
 *
 * A step runs with a {@link StepContext} and ends in one of three ways:
 *
 * - `ctx.advance(next, progress, effect)` / `ctx.succeed(result, effect)`: one SQL transaction
 *   moves the operation from this step (compare-and-set on status and step) and runs `effect` with
 *   the same transaction's repositories (variant and version transitions, counts, rows dropped), so
 *   the step's state change and the record of its effect commit together or not at all;
 * - `ctx.wait(progress)`: nothing to do yet (ingestion or indexing still running): the step is run
 *   again on the next poll;
 * - throwing: a {@link StepFailure} (or a LatticeError that no retry can fix) fails the operation
 *   with its reason; anything else is taken as transient and the step is run again on the next poll.
 *
 * External effects a step causes before committing (a collection created, a job started, a
 * collection dropped) must be idempotent by construction, since a crash after the effect and before
 * the commit runs the step again.
 */
import { LatticeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { JsonObject, Operation, OperationKind, VssRepositories, VssStore } from '../../store/index.js';
import type { JobRunner } from '../jobs/index.js';
import type { AdminMetrics } from './admin-metrics.js';
import type { RecallGateSettings } from './recall-gate.js';
import type { VectorDbs } from './vector-dbs.js';

/** What the steps run against: the engine's adapters and options. */
export interface StepServices {
  readonly store: VssStore;
  readonly vectorDbs: VectorDbs;
  readonly jobRunner: JobRunner;
  /** The ingestion topic and its partitions (`vss.consumers`): what jobs publish to. */
  readonly embeddingsTopic: string;
  readonly partitions: number;
  readonly metrics: AdminMetrics;
  readonly logger: Logger;
  /** Indexed share of the points at which indexing counts as done (vss.md: 0.95). */
  readonly indexedThreshold: number;
  /**
   * Jobs this process has started (or re-started) since it began: a job of an unfinished operation
   * that is not in here is started again before its status is trusted, since after a crash the
   * runner reports the job interrupted (FAILED) until it is (the JobRunner port's recovery rule).
   */
  readonly startedJobs: Set<string>;
  /**
   * How long a promotion waits for the consumers and serving to see a change of the variants (their
   * configuration caches), ms; default 10,000 (steps/promote-steps.ts).
   */
  readonly promoteSettleMs?: number;
  /** The reset's recall gate (recall-gate.ts); default RECALL_GATE_DEFAULTS. */
  readonly recallGate?: RecallGateSettings;
  /**
   * How long a version no variant reads any more is kept for a rollback before it is dropped, ms
   * (`vss.admin.rollbackGraceMs`); default 0: dropped once page walks are done with it.
   */
  readonly rollbackGraceMs?: number;
}

/** How a run of a step ended. `lost`: another worker moved the operation on first. */
export type StepOutcome = 'advanced' | 'succeeded' | 'waiting' | 'lost';

export type StepEffect = (repositories: VssRepositories, operation: Operation) => Promise<void>;

export interface StepContext {
  /** The operation as loaded before this run (RUNNING at this step). */
  readonly operation: Operation;
  readonly step: string;
  readonly services: StepServices;
  /** Commits the move to `next` together with `effect`. */
  advance(next: string, progress: number, effect?: StepEffect): Promise<StepOutcome>;
  /** Commits SUCCEEDED (with `result` merged into the operation's result) together with `effect`. */
  succeed(result?: JsonObject, effect?: StepEffect): Promise<StepOutcome>;
  /** Not done yet: records progress (and result fields, e.g. the job's counters) and waits for the next poll. */
  wait(progress?: number, result?: JsonObject): Promise<StepOutcome>;
  /** Tells the queue a long step is still working (restarts its ack wait). */
  heartbeat(): Promise<void>;
}

export interface StepDefinition {
  readonly name: string;
  run(ctx: StepContext): Promise<StepOutcome>;
}

export interface OperationPlan {
  readonly kind: OperationKind;
  /** In order; an operation starts at the first. */
  readonly steps: readonly StepDefinition[];
  /**
   * Runs in the transaction that fails the operation: marks what the operation drove FAILED (its
   * variants, with the state they failed in, where a retry resumes).
   */
  onFail?(repositories: VssRepositories, operation: Operation, reason: string): Promise<void>;
  /** Runs in the transaction that retries the operation: puts what onFail marked back. */
  onRetry?(repositories: VssRepositories, operation: Operation): Promise<void>;
}

/**
 * A permanent failure of a step: the operation becomes FAILED with `reason`. With `resumeAt`, the
 * operation is first moved to that (earlier) step, so a retry starts there (a failed ingestion job
 * is started again rather than waited for).
 */
export class StepFailure extends Error {
  readonly resumeAt: string | undefined;

  constructor(reason: string, options: { resumeAt?: string; cause?: unknown } = {}) {
    super(reason, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StepFailure';
    this.resumeAt = options.resumeAt;
  }
}

export class StepRegistry {
  readonly #plans = new Map<OperationKind, OperationPlan>();

  /** Adds a kind's plan; a kind registered twice is a programming error. */
  register(plan: OperationPlan): this {
    if (this.#plans.has(plan.kind)) {
      throw new LatticeError('ALREADY_EXISTS', `operation kind ${plan.kind} already has steps`);
    }
    if (plan.steps.length === 0) throw new LatticeError('INVALID_ARGUMENT', `${plan.kind} has no steps`);
    const names = new Set(plan.steps.map((s) => s.name));
    if (names.size !== plan.steps.length) {
      throw new LatticeError('INVALID_ARGUMENT', `${plan.kind} names a step twice`);
    }
    this.#plans.set(plan.kind, plan);
    return this;
  }

  plan(kind: OperationKind): OperationPlan | undefined {
    return this.#plans.get(kind);
  }

  kinds(): OperationKind[] {
    return [...this.#plans.keys()];
  }

  /** The step definition, or undefined for a step this plan does not have (a newer engine's). */
  step(kind: OperationKind, name: string | null): StepDefinition | undefined {
    return this.#plans.get(kind)?.steps.find((s) => s.name === name);
  }
}
