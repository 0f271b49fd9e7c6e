import { setMaxListeners } from 'node:events';
import { deadlineExceeded, describeError, LatticeError, unavailable } from '../../platform/errors.js';
import { startedSliceOver } from '../../platform/scheduling/index.js';
import type { ComponentTiming, ExecutionTimeline } from './execution-timeline.js';
import type { Topology } from './topology.js';

/** A node of the DAG as the executor sees it: a name, whether it may fail, and work to run. */
export interface DagComponent<C> {
  readonly name: string;
  /** A required component's failure fails the execution; another's only calls `onFailure`. */
  readonly required: boolean;
  /**
   * Finishes synchronously or returns a promise. `signal` aborts (with the execution's error as its
   * reason) when the execution is abandoned; listeners on it must not throw.
   */
  run(context: C, signal: AbortSignal): void | Promise<void>;
}

export interface ExecuteOptions<C> {
  /** Request cancellation or deadline from the caller. */
  signal?: AbortSignal;
  /** Epoch ms; undefined, Infinity or NaN = none. */
  deadline?: number;
  /**
   * A non-required component failed: called once, before any of its successors start, so the caller
   * can mark defaulted cells and row errors. If it throws, the execution fails with INTERNAL.
   */
  onFailure?(component: DagComponent<C>, error: unknown): void;
  /** Filled with each node's start, duration and state when the execution settles, either way. */
  timeline?: ExecutionTimeline;
  /**
   * Background executions (shadow requests): asked before each component starts; a promise holds the
   * start until it resolves (IdleGate.idle: until no caller's request runs). The deadline still holds.
   */
  pause?(): Promise<void> | undefined;
}

export type ComponentOutcome = 'ok' | 'failed';

/** What a successful execution did; every node ran, non-required ones may have failed. */
export interface ExecutionReport {
  readonly topology: Topology;
  /** Per node index of `topology.nodes`: how long it ran, in ms (sync part plus awaited promise). */
  readonly durationsMs: Float64Array;
  /** From the start of `execute` to the last component finishing, in ms. */
  readonly elapsedMs: number;
  /** How many (non-required) components failed. */
  readonly failedCount: number;
  /** The outcome of the node `name`, undefined when the DAG has no such node. */
  outcome(name: string): ComponentOutcome | undefined;
  /** Names of the failed components, in topological order. */
  failed(): string[];
}

// Node states, kept per execution in a Uint8Array (0 = not started yet).
const RUNNING = 1;
const OK = 2;
const FAILED = 3;

// Execution states.
const ACTIVE = 0;
const SUCCEEDED = 1;
const ABANDONED = 2;

/** setTimeout's limit; a later deadline is as good as none (and would otherwise fire at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Runs a topology with eager Kahn scheduling: a component starts as soon as its last predecessor
 * finishes, independent components run concurrently, and any number of roots is fine. Stateless and
 * shareable; knows nothing of features, models or matrices.
 */
export class DagExecutor<C> {
  /**
   * Resolves every node first (an unknown name rejects with INVALID_ARGUMENT before anything runs),
   * then runs them. Rejects with UNAVAILABLE naming a failed required component, DEADLINE_EXCEEDED when
   * `deadline` passes, or the caller's signal reason (a LatticeError as is, else CANCELLED); on any
   * rejection, components still running see their signal aborted and nothing new starts.
   */
  execute(
    topology: Topology,
    resolve: (name: string) => DagComponent<C>,
    context: C,
    options?: ExecuteOptions<C>,
  ): Promise<ExecutionReport> {
    const n = topology.nodes.length;
    const components: DagComponent<C>[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const name = topology.nodes[i]!;
      let component: DagComponent<C> | undefined;
      try {
        component = resolve(name);
      } catch (err) {
        return Promise.reject(unknownComponent(name, err));
      }
      if (component == null) return Promise.reject(unknownComponent(name, undefined));
      components[i] = component;
    }
    const signal = options?.signal;
    if (signal?.aborted === true) return Promise.reject(abortReason(signal.reason));
    const deadline = options?.deadline;
    if (deadline !== undefined && deadline <= Date.now()) {
      return Promise.reject(deadlineExceeded('deadline exceeded before any component started'));
    }

    const execution = new Execution(topology, components, context, options);
    execution.begin();
    if (execution.state === SUCCEEDED) return Promise.resolve(execution.report!);
    if (execution.state === ABANDONED) return Promise.reject(execution.error);
    return execution.wait();
  }
}

/** The state of one `execute` call: typed arrays sized once, no per-node maps or closures. */
class Execution<C> {
  state = ACTIVE;
  error: unknown = undefined;
  report: ExecutionReport | undefined = undefined;
  private readonly topology: Topology;
  private readonly components: readonly DagComponent<C>[];
  private readonly context: C;
  private readonly options: ExecuteOptions<C> | undefined;
  private readonly controller = unlimited(new AbortController());
  private readonly startedAt = performance.now();
  /** Predecessors each node still waits for. */
  private readonly remaining: Int32Array;
  /** FIFO of nodes whose predecessors all finished: each node enters once, so n slots suffice. */
  private readonly ready: Int32Array;
  private head = 0;
  private tail = 0;
  private readonly states: Uint8Array;
  /** Start time while a node runs, then its duration. */
  private readonly times: Float64Array;
  /** Start times kept for `options.timeline`; undefined (nothing allocated) when nobody asked. */
  private readonly starts: Float64Array | undefined;
  private finished = 0;
  private failedCount = 0;
  private timer: NodeJS.Timeout | undefined = undefined;
  /** A drain put off to the next turn of the event loop (the turn's time slice was over). */
  private drainPending = false;
  private listening = false;
  private settle: ((report: ExecutionReport) => void) | undefined = undefined;
  private fail: ((error: unknown) => void) | undefined = undefined;

  constructor(
    topology: Topology,
    components: readonly DagComponent<C>[],
    context: C,
    options: ExecuteOptions<C> | undefined,
  ) {
    const n = components.length;
    this.topology = topology;
    this.components = components;
    this.context = context;
    this.options = options;
    this.remaining = topology.inDegrees.slice();
    this.ready = new Int32Array(n);
    this.ready.set(topology.roots);
    this.tail = topology.roots.length;
    this.states = new Uint8Array(n);
    this.times = new Float64Array(n);
    this.starts = options?.timeline === undefined ? undefined : new Float64Array(n);
  }

  /** Runs everything that can run synchronously; the caller looks at `state` afterwards. */
  begin(): void {
    this.drain();
  }

  /** Some component is still pending: arm the deadline and the caller's signal, then wait. */
  wait(): Promise<ExecutionReport> {
    const deadline = this.options?.deadline;
    if (deadline !== undefined && deadline < Number.POSITIVE_INFINITY) {
      const wait = deadline - Date.now();
      if (wait <= 0) this.expire();
      else if (wait <= MAX_TIMER_MS) this.timer = setTimeout(expire, wait, this);
    }
    const signal = this.options?.signal;
    if (signal !== undefined && this.state === ACTIVE) {
      if (signal.aborted) this.abandon(abortReason(signal.reason));
      else {
        signal.addEventListener('abort', this, { once: true });
        this.listening = true;
      }
    }
    if (this.state === ABANDONED) return Promise.reject(this.error);
    return new Promise<ExecutionReport>((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
  }

  /** The caller's signal aborted (EventListenerObject: no closure per execution). */
  handleEvent(): void {
    this.abandon(abortReason(this.options?.signal?.reason));
  }

  expire(): void {
    if (this.state !== ACTIVE) return;
    const running: string[] = [];
    for (let i = 0; i < this.states.length; i++) {
      if (this.states[i] === RUNNING) running.push(`"${this.topology.nodes[i]}"`);
    }
    const what =
      running.length === 0
        ? 'before the next component started'
        : running.length === 1
          ? `while component ${running[0]} was running`
          : `while components ${running.join(', ')} were running`;
    this.abandon(deadlineExceeded(`deadline exceeded ${what}`));
  }

  /**
   * Starts every ready component. The deadline is read from the clock before each start, since a
   * busy event loop runs the deadline timer late: no component starts after the deadline. When a long
   * loop has used up the turn's time slice, the rest waits for the next turn (startedSliceOver never
   * starts a slice itself, so small requests never pay for a turn).
   */
  private drain(resumed = false): void {
    while (this.head < this.tail && this.state === ACTIVE) {
      if (this.pastDeadline()) {
        this.expire();
        return;
      }
      // A resumed drain starts one component whatever the slice: others' long loops keep it over,
      // and waiting for a turn of its own would starve this execution.
      if (!resumed && startedSliceOver()) {
        if (!this.drainPending) {
          this.drainPending = true;
          setImmediate(resumeDrain, this);
        }
        return;
      }
      const paused = this.options?.pause?.();
      if (paused !== undefined) {
        if (!this.drainPending) {
          this.drainPending = true;
          void paused.then(() => this.resumeDrain());
        }
        return;
      }
      this.start(this.ready[this.head++]!);
      resumed = false;
    }
    if (this.state === ACTIVE && this.finished === this.components.length) this.succeed();
  }

  /** The drain put off by `drain`, on the next turn. */
  resumeDrain(): void {
    this.drainPending = false;
    if (this.state === ACTIVE) this.drain(true);
  }

  private pastDeadline(): boolean {
    const deadline = this.options?.deadline;
    return deadline !== undefined && deadline <= Date.now();
  }

  private start(i: number): void {
    this.states[i] = RUNNING;
    this.times[i] = performance.now();
    if (this.starts !== undefined) this.starts[i] = this.times[i]!;
    let result: unknown;
    try {
      result = this.components[i]!.run(this.context, this.controller.signal);
    } catch (err) {
      this.failed(i, err);
      return;
    }
    if (isThenable(result)) void this.settleLater(i, result);
    else this.finish(i);
  }

  /** Never rejects: a component's late rejection after the execution was abandoned is swallowed here. */
  private async settleLater(i: number, pending: PromiseLike<unknown>): Promise<void> {
    let error: unknown;
    let rejected = false;
    try {
      await pending;
    } catch (err) {
      rejected = true;
      error = err;
    }
    if (this.state !== ACTIVE) return;
    // Past the deadline (its timer held up by a busy loop), the outcome no longer matters, and a
    // component that gave up because of it has not failed.
    if (this.pastDeadline()) {
      this.expire();
      return;
    }
    try {
      if (rejected) this.failed(i, error);
      else this.finish(i);
      this.drain();
    } catch (err) {
      this.abandon(internal('the DAG executor failed', err));
    }
  }

  private finish(i: number): void {
    this.states[i] = OK;
    this.times[i] = performance.now() - this.times[i]!;
    this.release(i);
  }

  private failed(i: number, error: unknown): void {
    if (this.pastDeadline()) {
      this.expire();
      return;
    }
    this.states[i] = FAILED;
    this.times[i] = performance.now() - this.times[i]!;
    const component = this.components[i]!;
    const name = this.topology.nodes[i]!;
    if (component.required) {
      this.abandon(unavailable(`component "${name}" failed: ${describeError(error)}`, error));
      return;
    }
    this.failedCount++;
    const options = this.options;
    if (options?.onFailure !== undefined) {
      try {
        options.onFailure(component, error);
      } catch (err) {
        this.abandon(internal(`handling the failure of component "${name}" failed`, err));
        return;
      }
    }
    if (this.state === ACTIVE) this.release(i);
  }

  /** Node i is done: successors whose last predecessor it was become ready. */
  private release(i: number): void {
    const { successorOffsets, successorIndices } = this.topology;
    const remaining = this.remaining;
    const end = successorOffsets[i + 1]!;
    for (let k = successorOffsets[i]!; k < end; k++) {
      const j = successorIndices[k]!;
      if (--remaining[j]! === 0) this.ready[this.tail++] = j;
    }
    this.finished++;
  }

  private succeed(): void {
    this.state = SUCCEEDED;
    this.cleanUp();
    if (this.starts !== undefined) this.recordTimeline(this.starts);
    this.report = new Report(
      this.topology,
      this.states,
      this.times,
      performance.now() - this.startedAt,
      this.failedCount,
    );
    this.settle?.(this.report);
  }

  private abandon(error: LatticeError): void {
    if (this.state !== ACTIVE) return;
    this.state = ABANDONED;
    this.error = error;
    this.cleanUp();
    if (this.starts !== undefined) this.recordTimeline(this.starts);
    this.controller.abort(error);
    this.fail?.(error);
  }

  /** Hands `options.timeline` every node as it stands now; a node still running counts up to now. */
  private recordTimeline(starts: Float64Array): void {
    const timeline = this.options!.timeline!;
    const now = performance.now();
    const components: ComponentTiming[] = [];
    for (let i = 0; i < this.states.length; i++) {
      const name = this.topology.nodes[i]!;
      const state = this.states[i];
      if (state === 0) {
        components.push({ name, state: 'skipped', startMs: 0, durationMs: 0 });
        continue;
      }
      components.push({
        name,
        state: state === OK ? 'ran' : state === FAILED ? 'failed' : 'cancelled',
        startMs: starts[i]! - timeline.origin,
        durationMs: state === RUNNING ? now - starts[i]! : this.times[i]!,
      });
    }
    timeline.record(components);
  }

  private cleanUp(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.listening) this.options?.signal?.removeEventListener('abort', this);
  }
}

class Report implements ExecutionReport {
  readonly topology: Topology;
  readonly durationsMs: Float64Array;
  readonly elapsedMs: number;
  readonly failedCount: number;
  private readonly states: Uint8Array;

  constructor(
    topology: Topology,
    states: Uint8Array,
    durationsMs: Float64Array,
    elapsedMs: number,
    failedCount: number,
  ) {
    this.topology = topology;
    this.states = states;
    this.durationsMs = durationsMs;
    this.elapsedMs = elapsedMs;
    this.failedCount = failedCount;
  }

  outcome(name: string): ComponentOutcome | undefined {
    const i = this.topology.indexOf(name);
    if (i < 0) return undefined;
    return this.states[i] === FAILED ? 'failed' : 'ok';
  }

  failed(): string[] {
    const names: string[] = [];
    if (this.failedCount === 0) return names;
    for (let i = 0; i < this.states.length; i++) {
      if (this.states[i] === FAILED) names.push(this.topology.nodes[i]!);
    }
    return names;
  }
}

function expire(execution: { expire(): void }): void {
  execution.expire();
}

function resumeDrain(execution: { resumeDrain(): void }): void {
  execution.resumeDrain();
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function unknownComponent(name: string, cause: unknown): LatticeError {
  const detail = cause === undefined ? '' : `: ${describeError(cause)}`;
  return new LatticeError('INVALID_ARGUMENT', `unknown component "${name}"${detail}`, {
    field: `component_dependency.${name}`,
    cause,
  });
}

/** The caller's abort reason as a status: a LatticeError as is, a timeout as DEADLINE_EXCEEDED. */
function abortReason(reason: unknown): LatticeError {
  if (reason instanceof LatticeError) return reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') {
    return new LatticeError('DEADLINE_EXCEEDED', 'the request deadline passed', { cause: reason });
  }
  return new LatticeError('CANCELLED', 'the request was cancelled', { cause: reason });
}

function internal(message: string, cause: unknown): LatticeError {
  return new LatticeError('INTERNAL', `${message}: ${describeError(cause)}`, { cause });
}

/**
 * Every component of an execution, and every outbound call of each (one per batch), listens on the
 * execution's one signal; dozens of listeners are normal, not the leak Node's default cap of 10
 * warns about.
 */
function unlimited(controller: AbortController): AbortController {
  setMaxListeners(0, controller.signal);
  return controller;
}
