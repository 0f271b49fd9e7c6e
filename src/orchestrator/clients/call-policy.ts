import { setMaxListeners } from 'node:events';
import { Metadata, type MethodDefinition, status } from '@grpc/grpc-js';
import { BrokenCircuitError, type CircuitBreakerPolicy, CircuitState } from 'cockatiel';
import { LatticeError } from '../../platform/errors.js';
import type { Metrics } from '../../platform/metrics/index.js';
import { FairGates, pause } from '../../platform/scheduling/index.js';
import { CallerCancelled, failureKind, isServiceError, NoBudget, toLatticeError } from './call-errors.js';
import { bindCallSeries, type CallInstruments, type CallSeries, callInstruments } from './call-metrics.js';
import type { CallTarget } from './call-target.js';
import type { ChannelPool } from './channel-pool.js';
import {
  type BreakerOptions,
  circuitStateName,
  defaultBreakerOptions,
  endpointBreaker,
} from './circuit-breaker.js';
import { backoffDelay, defaultRetryOptions, type RetryOptions } from './retry-backoff.js';
import { unaryCall } from './unary-call.js';

// The transport's pass-through serialiser, for the clients that import it from here (numerix-client).
export { passThrough } from './unary-call.js';

export interface OutboundCallOptions {
  /** Aborting it cancels the gRPC call (the server sees the cancellation). */
  signal?: AbortSignal;
  /** Epoch ms: the caller's (request's) deadline. Absent or Infinity = `maxCallMs`. */
  deadline?: number;
  /**
   * The call's own timeout (a component's `deadline_ms`), counted from when the call is made; the
   * call ends at the earlier of it and `deadline`. Absent: `deadline` is the call's own timeout.
   */
  timeoutMs?: number;
  metadata?: Metadata;
}

export interface CallPolicyOptions {
  pool: ChannelPool;
  metrics: Metrics;
  retry?: Partial<RetryOptions>;
  breaker?: Partial<BreakerOptions>;
  /** Upper bound of any call's duration, for calls made without a deadline (probes, tooling). */
  maxCallMs?: number;
  /**
   * Calls in flight to one endpoint from this process, shared fairly by the requests (FairGate);
   * default {@link DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT}.
   */
  maxInFlightPerEndpoint?: number;
}

/**
 * Enough to keep a model server busy (each request also keeps at most 8 batches of a component in
 * flight), few enough that a small request's call waits for a handful of batches, not hundreds.
 */
export const DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT = 16;

/** The fairness key of calls made without a signal (probes, tooling): one shared caller. */
const NO_CALLER = {};

/**
 * How every outbound gRPC call is made: deadline = min(caller's deadline, own timeout, `maxCallMs`), cancellation
 * from the AbortSignal, a circuit breaker per endpoint (open: fail fast with UNAVAILABLE "circuit
 * open for <target>"; after a cool-down one probe goes through while other calls keep failing fast),
 * a retry of UNAVAILABLE only (the three RPCs are side-effect free, and UNAVAILABLE carries no
 * response) while the deadline leaves room, and metrics per call. Errors come out as LatticeErrors
 * naming the target. Retries use their own loop rather than cockatiel's retry policy, whose backoff
 * sleep cannot be aborted and which knows no deadline.
 *
 * What counts against an endpoint's circuit: UNAVAILABLE, INTERNAL and UNKNOWN, each time: the
 * endpoint says it is failing. A DEADLINE_EXCEEDED is evidence about the endpoint *and* the load its
 * caller put on it, so it counts only when it is the endpoint's own slowness: the call had its own
 * full timeout (not cut short by the caller's deadline, nor left with almost no budget), and it is
 * the first timeout of its caller on that endpoint. Calls made with the same AbortSignal are one
 * caller's (the orchestrator gives every call of a request the request's signal): the batches of one
 * oversized request time out together for one reason, and count once, so one caller cannot open an
 * endpoint's circuit for everyone. Cancellation by the caller never counts. A timeout of a server of
 * this very process (a LocalChannel target) never counts either: it shares the caller's CPU and event
 * loop, so its slowness is the process's own load, which admission control answers; an open circuit
 * would only turn a busy moment into seconds of UNAVAILABLE for every request.
 *
 * Each concept has its own file: the transport (unary-call.ts), the breakers (circuit-breaker.ts),
 * the backoff (retry-backoff.ts), error mapping (call-errors.ts) and the metrics (call-metrics.ts).
 * This class composes them; the per-endpoint breakers and per-target series are made once and looked
 * up here, so a call adds no allocation or indirection to what the transport itself costs.
 */
export class CallPolicy {
  private readonly pool: ChannelPool;
  private readonly retry: RetryOptions;
  private readonly breakerOptions: BreakerOptions;
  private readonly maxCallMs: number;
  private readonly breakers = new Map<string, CircuitBreakerPolicy>();
  /** Series per service, target and method, bound once: the metrics of a call allocate nothing. */
  private readonly series = new Map<string, CallSeries>();
  /** Deadline failures that are the caller's doing, not the endpoint's (see the class comment). */
  private readonly uncounted = new WeakSet<Error>();
  /** Per caller (signal): the endpoints where one of its calls already counted a timeout. */
  private readonly timedOut = new WeakMap<AbortSignal, Set<string>>();
  private readonly instruments: CallInstruments;
  private readonly gates: FairGates;

  constructor(options: CallPolicyOptions) {
    this.pool = options.pool;
    this.retry = { ...defaultRetryOptions, ...options.retry };
    this.breakerOptions = { ...defaultBreakerOptions, ...options.breaker };
    this.maxCallMs = options.maxCallMs ?? 30_000;
    this.gates = new FairGates(options.maxInFlightPerEndpoint ?? DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT);
    if (this.retry.maxAttempts < 1)
      throw new LatticeError('INVALID_ARGUMENT', 'retry.maxAttempts must be ≥ 1');
    if (this.breakerOptions.consecutiveFailures < 1)
      throw new LatticeError('INVALID_ARGUMENT', 'breaker.consecutiveFailures must be ≥ 1');
    this.instruments = callInstruments(options.metrics);
  }

  /**
   * Calls a unary RPC under the policy; `read` turns the response into the result (a LatticeError it
   * throws counts as a server error, never against the circuit).
   */
  async unary<Req, Res, T>(
    call: CallTarget,
    method: MethodDefinition<Req, Res>,
    request: Req,
    options: OutboundCallOptions,
    read: (response: Res) => T,
  ): Promise<T> {
    const started = performance.now();
    const series = this.seriesOf(call);
    let release: (() => void) | undefined;
    try {
      // Serialised once for every attempt; grpc-js gets the bytes (see unaryCall).
      const body = method.requestSerialize(request);
      // A slot of the endpoint first: the call's own timeout starts once it is sent.
      release = await this.gates
        .for(call.target)
        .acquire(options.signal ?? NO_CALLER, options.signal)
        .catch((reason: unknown) => {
          throw new CallerCancelled(reason);
        });
      const result = await this.withRetries(call, method, body, options, read, series);
      series.ok.inc();
      return result;
    } catch (err) {
      const error = toLatticeError(err, call, options.signal);
      series.error.inc();
      this.instruments.errors.inc({ ...series.labels, kind: failureKind(error) });
      throw error;
    } finally {
      release?.();
      series.latency.observeMs(performance.now() - started);
    }
  }

  private seriesOf(call: CallTarget): CallSeries {
    const key = `${call.service}\u0000${call.target}\u0000${call.method}`;
    let series = this.series.get(key);
    if (!series) {
      series = bindCallSeries(this.instruments, call);
      this.series.set(key, series);
    }
    return series;
  }

  /** The breaker of an endpoint, for tests and status pages. */
  circuitState(target: string): 'closed' | 'open' | 'half-open' {
    return circuitStateName(this.breakers.get(target));
  }

  private async withRetries<Req, Res, T>(
    call: CallTarget,
    method: MethodDefinition<Req, Res>,
    body: Buffer,
    options: OutboundCallOptions,
    read: (response: Res) => T,
    series: CallSeries,
  ): Promise<T> {
    const signal = options.signal ?? neverAborted;
    const callerDeadline = options.deadline ?? Number.POSITIVE_INFINITY;
    const own = Date.now() + Math.min(options.timeoutMs ?? Number.POSITIVE_INFINITY, this.maxCallMs);
    const deadline = Math.min(callerDeadline, own);
    // The caller's deadline comes first: a timeout is then the caller's (a late or oversized request).
    const cutByCaller = options.timeoutMs !== undefined && callerDeadline < own;
    const metadata = options.metadata ?? new Metadata();
    const breaker = this.breaker(call.target);
    const local = this.pool.isLocal(call.target);
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw new CallerCancelled(signal.reason);
      const budget = deadline - Date.now();
      if (budget <= 0) throw new NoBudget(deadline);
      // While the one half-open probe is in flight, everyone else fails fast instead of queueing.
      if (breaker.state === CircuitState.HalfOpen) throw new BrokenCircuitError();
      try {
        return await breaker.execute(async () => {
          try {
            const client = this.pool.client(call.target); // round-robin: a retry takes another channel
            // grpc-js copies the metadata when a call starts, so one object serves every attempt.
            return read(await unaryCall(client, method, body, metadata, deadline, signal));
          } catch (err) {
            if (
              isServiceError(err) &&
              err.code === status.DEADLINE_EXCEEDED &&
              (budget < this.retry.minAttemptMs ||
                cutByCaller ||
                local ||
                // A half-open probe that timed out on its own is the answer the probe was for.
                (breaker.state !== CircuitState.HalfOpen && this.timedOutBefore(signal, call.target)))
            )
              this.uncounted.add(err);
            throw err;
          }
        });
      } catch (err) {
        if (!isServiceError(err) || err.code !== status.UNAVAILABLE || signal.aborted) throw err;
        if (attempt >= this.retry.maxAttempts) throw err;
        const delay = backoffDelay(this.retry, attempt);
        if (deadline - Date.now() - delay < this.retry.minAttemptMs) throw err;
        this.instruments.retries.inc(series.labels);
        await pause(delay, signal);
      }
    }
  }

  /** Whether this caller already counted a timeout on `target`; records this one if not. */
  private timedOutBefore(signal: AbortSignal, target: string): boolean {
    if (signal === neverAborted) return false; // calls without a signal are each their own caller
    let targets = this.timedOut.get(signal);
    if (targets === undefined) {
      targets = new Set();
      this.timedOut.set(signal, targets);
    }
    if (targets.has(target)) return true;
    targets.add(target);
    return false;
  }

  private breaker(target: string): CircuitBreakerPolicy {
    let breaker = this.breakers.get(target);
    if (!breaker) {
      breaker = endpointBreaker(target, this.breakerOptions, this.instruments.circuit, this.uncounted);
      this.breakers.set(target, breaker);
    }
    return breaker;
  }
}

/** The signal of calls made without one; never aborts, so listeners on it are never kept. */
const neverAborted = new AbortController().signal;
setMaxListeners(0, neverAborted);
