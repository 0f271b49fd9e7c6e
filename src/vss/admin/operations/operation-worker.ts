/**
 * The admin consumers: a durable group on the operations topic. An event `{operation_id}` (from the
 * outbox relay, or a nudge of the waiter below) makes this worker load the operation and run its
 * current step, then the next, until the operation finishes or a step has to wait. Every state
 * change is compare-and-set on the operation's (status, step) in the transaction that records the
 * step's effect (step-registry.ts), so a redelivered event, a second replica or a restart after a
 * crash never applies a step twice, and always finds where to continue.
 *
 * Waiting (ingestion, indexing) never blocks: a step that has to wait returns at once and the event
 * is acknowledged. The waiter re-publishes a nudge for every unfinished (PENDING or RUNNING)
 * operation each `pollIntervalMs` — read from SQL, so it also finds, after a restart, operations
 * whose outbox event was published and acknowledged before the crash. Going through the queue
 * rather than running the step here keeps one execution path and spreads operations over the
 * group's members. A nudge is not re-sent while the previous one for the operation is unhandled
 * (for at most 5 polls or 5 s: another replica of the group may have taken it).
 *
 * Failures: a StepFailure (or a LatticeError no retry can fix: INVALID_ARGUMENT, NOT_FOUND,
 * FAILED_PRECONDITION, ALREADY_EXISTS) fails the operation with its reason, together with the
 * plan's onFail (operation-targets.ts: variants that serve stay READY, others FAILED). Anything else is transient (a database or vector DB briefly
 * unavailable): logged, and the step runs again at the next nudge; after `maxTransientFailures`
 * in a row it fails the operation too.
 */
import { describeError, isLatticeError, LatticeError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { Consumer, Queue, QueueMessage } from '../../../platform/queue/index.js';
import { collectionName } from '../../model/index.js';
import type { JsonObject, Operation } from '../../store/index.js';
import { settleModelState } from './model-state.js';
import type {
  OperationPlan,
  StepContext,
  StepDefinition,
  StepEffect,
  StepOutcome,
  StepRegistry,
  StepServices,
} from './step-registry.js';
import { StepFailure } from './step-registry.js';

/** What `onStep` is told after each committed transition. */
export interface StepEvent {
  operationId: string;
  kind: Operation['kind'];
  /** The step left (null when the operation started). */
  from: string | null;
  /** The step entered, or SUCCEEDED / FAILED. */
  to: string;
}

export interface OperationWorkerOptions {
  services: StepServices;
  registry: StepRegistry;
  queue: Queue;
  topic: string;
  group: string;
  pollIntervalMs: number;
  logger: Logger;
  onStep?: (event: StepEvent) => void | Promise<void>;
  /** Transient failures of one step in a row before the operation fails; default 30. */
  maxTransientFailures?: number;
  /** How often READY variants' indexed-vector ratio is refreshed, ms; default 30,000. */
  ratioIntervalMs?: number;
}

const PERMANENT_CODES = new Set(['INVALID_ARGUMENT', 'NOT_FOUND', 'FAILED_PRECONDITION', 'ALREADY_EXISTS']);

/** Thrown inside a commit when the operation moved on first: rolls the transaction back. */
class Lost extends Error {}

export function operationEvent(operationId: string): JsonObject {
  return { operation_id: operationId };
}

export class OperationWorker {
  readonly #o: OperationWorkerOptions;
  readonly #driving = new Set<string>();
  /** Operation id → when its last nudge was published (a nudge another replica took never comes back here). */
  readonly #nudged = new Map<string, number>();
  readonly #transient = new Map<string, number>();
  readonly #unknownKinds = new Set<string>();
  #consumer: Consumer | undefined;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #lastRatios = 0;
  #stopped = false;

  constructor(options: OperationWorkerOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    const { queue, topic, group } = this.#o;
    this.#consumer = await queue.subscribe(topic, group, (message) => this.#handle(message), {
      // Operations are independent (each step is compare-and-set), so one waiting in a partition
      // must not hold up the others behind it.
      inFlightPerPartition: 8,
    });
    this.#timer = setInterval(() => this.poll(), this.#o.pollIntervalMs);
    this.#timer.unref();
    this.poll();
  }

  /** One waiter round (also run by the timer): nudges unfinished operations. */
  poll(): Promise<void> {
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = undefined;
    });
    return this.#polling;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#polling;
    await this.#consumer?.drain(10_000);
  }

  async #poll(): Promise<void> {
    if (this.#stopped) return;
    const { services, queue, topic, logger } = this.#o;
    try {
      const unfinished = await services.store.operations.list({ unfinished: true, limit: 1000 });
      for (const op of unfinished) {
        if (this.#stopped) return;
        const nudgedAt = this.#nudged.get(op.operationId);
        const pending =
          nudgedAt !== undefined && Date.now() - nudgedAt < Math.max(5 * this.#o.pollIntervalMs, 5000);
        if (this.#driving.has(op.operationId) || pending) continue;
        if (this.#o.registry.plan(op.kind) === undefined) {
          this.#reportUnknownKind(op);
          continue;
        }
        this.#nudged.set(op.operationId, Date.now());
        await queue.publish(topic, Buffer.from(JSON.stringify(operationEvent(op.operationId))), {
          key: op.operationId,
        });
      }
      if (Date.now() - this.#lastRatios >= (this.#o.ratioIntervalMs ?? 30_000)) {
        this.#lastRatios = Date.now();
        await this.#refreshRatios();
      }
    } catch (err) {
      logger.warn({ err: describeError(err) }, 'vss admin: polling unfinished operations failed');
    }
  }

  /** The indexed-vector ratio of READY variants, so the alert sees it between operations too. */
  async #refreshRatios(): Promise<void> {
    const { services } = this.#o;
    for (const variant of await services.store.variants.listAll()) {
      if (variant.state !== 'READY' || variant.readVersion === null) continue;
      let db: ReturnType<typeof services.vectorDbs.get>;
      try {
        db = services.vectorDbs.forVariant(variant);
      } catch {
        continue;
      }
      try {
        const info = await db.collectionInfo(
          collectionName(variant.entity, variant.modelName, variant.readVersion),
        );
        services.metrics.indexedRatio(variant, info.points === 0 ? 1 : info.indexedPoints / info.points);
      } catch (err) {
        if (!isLatticeError(err, 'NOT_FOUND')) throw err;
      }
    }
  }

  #reportUnknownKind(op: Operation): void {
    if (this.#unknownKinds.has(op.operationId)) return;
    this.#unknownKinds.add(op.operationId);
    this.#o.logger.warn(
      { operationId: op.operationId, kind: op.kind },
      `vss admin: no steps are registered for ${op.kind}; operation ${op.operationId} waits for an admin that runs them`,
    );
  }

  async #handle(message: QueueMessage): Promise<void> {
    let operationId: string | undefined;
    try {
      const body = JSON.parse(Buffer.from(message.payload).toString('utf8')) as { operation_id?: unknown };
      if (typeof body.operation_id === 'string') operationId = body.operation_id;
    } catch {
      // not JSON: refused below
    }
    if (operationId === undefined) {
      await message.term('not an operation event: expected {"operation_id": "<id>"}', {
        field: 'operation_id',
      });
      return;
    }
    this.#nudged.delete(operationId);
    await this.drive(operationId, () => message.inProgress());
  }

  /** Runs the operation's steps until it finishes or waits. Never throws (failures are logged). */
  async drive(operationId: string, heartbeat: () => Promise<void> = async () => undefined): Promise<void> {
    if (this.#driving.has(operationId) || this.#stopped) return;
    this.#driving.add(operationId);
    try {
      for (let round = 0; round < 100 && !this.#stopped; round++) {
        const op = await this.#o.services.store.operations.find(operationId);
        if (op === undefined || op.status === 'SUCCEEDED' || op.status === 'FAILED') return;
        const plan = this.#o.registry.plan(op.kind);
        if (plan === undefined) {
          this.#reportUnknownKind(op);
          return;
        }
        if (op.status === 'PENDING') {
          const first = plan.steps[0]!.name;
          if (await this.#o.services.store.operations.start(op.operationId, first)) {
            this.#o.services.metrics.started(op.kind);
            this.#o.services.metrics.progress(op, 0);
            await this.#o.onStep?.({ operationId, kind: op.kind, from: null, to: first });
          }
          continue;
        }
        const step = plan.steps.find((s) => s.name === op.step);
        if (step === undefined) {
          this.#o.logger.warn(
            { operationId, kind: op.kind, step: op.step },
            `vss admin: ${op.kind} has no step ${String(op.step)} here; left for an admin that knows it`,
          );
          return;
        }
        const outcome = await this.#run(op, plan, step, heartbeat);
        if (outcome === 'waiting' || outcome === 'succeeded') return;
      }
    } catch (err) {
      this.#o.logger.warn(
        { operationId, err: describeError(err) },
        'vss admin: driving the operation failed',
      );
    } finally {
      this.#driving.delete(operationId);
    }
  }

  async #run(
    op: Operation,
    plan: OperationPlan,
    step: StepDefinition,
    heartbeat: () => Promise<void>,
  ): Promise<StepOutcome> {
    const started = Date.now();
    const transientKey = `${op.operationId}\u0000${step.name}`;
    try {
      const outcome = await step.run(this.#context(op, step, heartbeat));
      this.#transient.delete(transientKey);
      return outcome;
    } catch (err) {
      const count = (this.#transient.get(transientKey) ?? 0) + 1;
      const permanent =
        err instanceof StepFailure ||
        (err instanceof LatticeError && PERMANENT_CODES.has(err.code)) ||
        count >= (this.#o.maxTransientFailures ?? 30);
      if (!permanent) {
        this.#transient.set(transientKey, count);
        this.#o.logger.warn(
          {
            operationId: op.operationId,
            kind: op.kind,
            step: step.name,
            attempt: count,
            err: describeError(err),
          },
          'vss admin: step failed (transient); it runs again at the next poll',
        );
        return 'waiting';
      }
      this.#transient.delete(transientKey);
      return this.#fail(op, plan, step, err);
    } finally {
      this.#o.services.metrics.stepMs(op.kind, step.name, Date.now() - started);
    }
  }

  async #fail(op: Operation, plan: OperationPlan, step: StepDefinition, err: unknown): Promise<StepOutcome> {
    const reason = describeError(err);
    const resumeAt = err instanceof StepFailure ? err.resumeAt : undefined;
    const { store, metrics } = this.#o.services;
    try {
      await store.transaction(async (repositories) => {
        let at = step.name;
        if (resumeAt !== undefined && resumeAt !== step.name) {
          if (!(await repositories.operations.advance(op.operationId, step.name, resumeAt))) throw new Lost();
          at = resumeAt;
        }
        if (!(await repositories.operations.fail(op.operationId, { status: 'RUNNING', step: at }, reason))) {
          throw new Lost();
        }
        await plan.onFail?.(repositories, op, reason);
        await settleModelState(repositories, op);
      });
    } catch (e) {
      if (e instanceof Lost) return 'lost';
      throw e;
    }
    metrics.failed(op.kind);
    this.#o.logger.warn(
      { operationId: op.operationId, kind: op.kind, step: step.name, reason },
      `vss admin: ${op.kind} ${op.operationId} failed`,
    );
    await this.#o.onStep?.({ operationId: op.operationId, kind: op.kind, from: step.name, to: 'FAILED' });
    return 'waiting';
  }

  #context(op: Operation, step: StepDefinition, heartbeat: () => Promise<void>): StepContext {
    const { services, onStep } = this.#o;
    const commit = async (
      to: string,
      progress: number,
      move: (repositories: Parameters<StepEffect>[0]) => Promise<boolean>,
      effect: StepEffect | undefined,
    ): Promise<StepOutcome> => {
      try {
        await services.store.transaction(async (repositories) => {
          if (!(await move(repositories))) throw new Lost();
          await effect?.(repositories, op);
          await settleModelState(repositories, op);
        });
      } catch (err) {
        if (err instanceof Lost) return 'lost';
        throw err;
      }
      services.metrics.progress(op, progress);
      // A flip changes what variants serve: their indexed-vector ratio is measured now.
      if (step.name === 'flip' || step.name === 'switch') {
        await this.#refreshRatios().catch((err: unknown) =>
          this.#o.logger.warn({ err: describeError(err) }, 'vss admin: measuring indexed ratios failed'),
        );
      }
      await onStep?.({ operationId: op.operationId, kind: op.kind, from: step.name, to });
      return to === 'SUCCEEDED' ? 'succeeded' : 'advanced';
    };
    return {
      operation: op,
      step: step.name,
      services,
      advance: (next, progress, effect) =>
        commit(
          next,
          progress,
          (r) => r.operations.advance(op.operationId, step.name, next, progress),
          effect,
        ),
      succeed: async (result, effect) => {
        const outcome = await commit(
          'SUCCEEDED',
          1,
          async (r) => {
            // The effect first (the transaction rolls back if the operation moved on meanwhile): it
            // may record result fields, and the final result merges over the latest.
            await effect?.(r, op);
            const latest = (await r.operations.get(op.operationId)).result ?? {};
            return r.operations.succeed(op.operationId, step.name, { ...latest, ...result });
          },
          undefined,
        );
        if (outcome === 'succeeded') services.metrics.succeeded(op.kind);
        return outcome;
      },
      wait: async (progress, result) => {
        await services.store.transaction(async (r) => {
          const applied = await r.operations.reportProgress(
            op.operationId,
            step.name,
            progress ?? op.progress,
          );
          if (applied && result !== undefined) {
            const latest = (await r.operations.get(op.operationId)).result ?? {};
            await r.operations.setResult(op.operationId, { ...latest, ...result });
          }
        });
        if (progress !== undefined) services.metrics.progress(op, progress);
        return 'waiting';
      },
      heartbeat,
    };
  }
}
