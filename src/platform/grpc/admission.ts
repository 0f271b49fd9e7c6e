import { LatticeError } from '../errors.js';

/**
 * Admission control of one gRPC server: its unary calls are split into classes (`light`, `heavy`),
 * each with a bounded number of handlers running at once and a bounded queue with its own short
 * deadline. A call beyond concurrency + queue is refused RESOURCE_EXHAUSTED at once; a queued call
 * still waiting when the queue deadline passes is refused RESOURCE_EXHAUSTED too. The client learns
 * in milliseconds that the server is full, rather than by its own deadline, and the work admitted is
 * work that can finish: with 200 large Searches running at once on one event loop each took 200
 * times as long, nearly all timed out, and the small calls in between waited behind all of them.
 *
 * The classes have separate gates, so large requests never hold the slots of small ones. Each
 * server has its own gates: in `lattice up` the orchestrator's Predict waits on the orchestrator's
 * gate and its downstream calls on the feature store's, model server's and compute's, and no call
 * ever waits on a gate held by the call that made it, so admission cannot deadlock.
 */

export type AdmissionClass = 'light' | 'heavy';
export const ADMISSION_CLASSES: readonly AdmissionClass[] = ['light', 'heavy'];

export interface AdmissionClassLimits {
  /** Handlers of this class running at once. */
  concurrency: number;
  /** Calls waiting for a slot; past it new calls are refused at once. */
  queue: number;
  /** How long a call may wait in the queue before it is refused. */
  queueTimeoutMs: number;
}

export type AdmissionLimits = Record<AdmissionClass, AdmissionClassLimits>;

/** Sized for a 2-core machine serving everything in one process (docs/operations.md, "Admission control"). */
export const DEFAULT_ADMISSION: AdmissionLimits = {
  light: { concurrency: 64, queue: 256, queueTimeoutMs: 1000 },
  heavy: { concurrency: 2, queue: 4, queueTimeoutMs: 250 },
};

/**
 * Decides a call's class from its method path and decoded request (or a DeferredRequest: a request
 * large enough to be decoded in slices, which the default calls heavy). Must be cheap: it runs for
 * every call, before the call is admitted.
 */
export type Classify = (method: string, request: unknown) => AdmissionClass;

interface Waiter {
  admit: (release: () => void) => void;
  refuse: (reason: unknown) => void;
  cleanup: () => void;
}

/** One class's gate: `concurrency` slots, then a FIFO queue of at most `queue` waiters. */
export class AdmissionGate {
  #active = 0;
  readonly #waiting: Waiter[] = [];

  constructor(
    readonly serverName: string,
    readonly admissionClass: AdmissionClass,
    readonly limits: AdmissionClassLimits,
  ) {}

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * RESOURCE_EXHAUSTED when every slot is taken and the queue is full: a call to refuse before any
   * work is spent on it (no signal, no timer). Undefined when `admit` would run or queue it.
   */
  refusalIfFull(method: string): LatticeError | undefined {
    const { concurrency, queue } = this.limits;
    if (this.#active < concurrency || this.#waiting.length < queue) return undefined;
    return this.#refusal(
      method,
      `${this.#active} ${this.admissionClass} calls running (limit ${concurrency}) and ${this.#waiting.length} queued (limit ${queue})`,
    );
  }

  /**
   * A release function (call it once, when the handler has settled) when a slot is free now;
   * otherwise a promise of one, rejected RESOURCE_EXHAUSTED when the queue is full (at once) or the
   * queue deadline passes first, or with the signal's reason when the call ends while waiting.
   */
  admit(method: string, signal: AbortSignal): (() => void) | Promise<() => void> {
    if (this.#active < this.limits.concurrency && this.#waiting.length === 0) {
      this.#active++;
      return this.#releaser();
    }
    const full = this.refusalIfFull(method);
    if (full) return Promise.reject(full);
    const { concurrency, queueTimeoutMs } = this.limits;
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = {
        admit: (release) => {
          waiter.cleanup();
          resolve(release);
        },
        refuse: (reason) => {
          waiter.cleanup();
          const at = this.#waiting.indexOf(waiter);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(reason);
        },
        cleanup: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        },
      };
      const onAbort = () => waiter.refuse(signal.reason);
      const timer = setTimeout(
        () =>
          waiter.refuse(
            this.#refusal(
              method,
              `no ${this.admissionClass} slot freed within the ${queueTimeoutMs} ms queue deadline (${concurrency} running)`,
            ),
          ),
        queueTimeoutMs,
      );
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  #refusal(method: string, why: string): LatticeError {
    // No stack: under overload a server refuses hundreds of calls a second, and capturing a stack
    // for each (which nobody reads: the refusal is expected) showed in its CPU profile.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return new LatticeError(
        'RESOURCE_EXHAUSTED',
        `${method}: ${this.serverName} is busy: ${why}; retry with backoff (settings grpc.admission.${this.admissionClass})`,
      );
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the first waiter: a call arriving meanwhile cannot take it.
      if (next) next.admit(this.#releaser());
      else this.#active--;
    };
  }
}

/** The gates of one server, one per class, and how its calls are classified. */
export class Admission {
  readonly #gates: Record<AdmissionClass, AdmissionGate>;

  constructor(serverName: string, limits: AdmissionLimits = DEFAULT_ADMISSION) {
    this.#gates = {
      light: new AdmissionGate(serverName, 'light', limits.light),
      heavy: new AdmissionGate(serverName, 'heavy', limits.heavy),
    };
  }

  gate(admissionClass: AdmissionClass): AdmissionGate {
    return this.#gates[admissionClass];
  }
}
