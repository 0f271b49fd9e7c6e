import { setMaxListeners } from 'node:events';
import {
  type Client,
  type ClientUnaryCall,
  Metadata,
  type MethodDefinition,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  ExponentialBackoff,
  handleWhen,
  noJitterGenerator,
} from 'cockatiel';
import { describeError, type ErrorCode, LatticeError } from '../../platform/errors.js';
import type { BoundCounter, BoundTiming, Labels, Metrics } from '../../platform/metrics/index.js';
import type { ChannelPool } from './channel-pool.js';

/** The external services the orchestrator calls; a metric label. */
export type ExternalService = 'feature_store' | 'model_server' | 'numerix';

const serviceNames: Record<ExternalService, string> = {
  feature_store: 'feature store',
  model_server: 'model server',
  numerix: 'numerix',
};

/** One outbound call: which service, which endpoint (`host:port`), which RPC (e.g. `ModelInfer`). */
export interface CallTarget {
  service: ExternalService;
  target: string;
  method: string;
}

export interface OutboundCallOptions {
  /** Aborting it cancels the gRPC call (the server sees the cancellation). */
  signal?: AbortSignal;
  /** Epoch ms: the earlier of the component's and the request's deadline. Absent or Infinity = `maxCallMs`. */
  deadline?: number;
  metadata?: Metadata;
}

export interface RetryOptions {
  /** Attempts in all, the first included; 1 disables retries. */
  maxAttempts: number;
  /** Bound of the first backoff, doubled per retry up to `maxDelayMs`; the delay is uniform in [0, bound). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A retry is sent only if at least this much of the deadline remains after its backoff. */
  minAttemptMs: number;
}

export interface BreakerOptions {
  /** Consecutive endpoint failures (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN) that open the circuit. */
  consecutiveFailures: number;
  /** Cool-down before one half-open probe; doubles after each failed probe, up to `maxHalfOpenAfterMs`. */
  halfOpenAfterMs: number;
  maxHalfOpenAfterMs: number;
}

export interface CallPolicyOptions {
  pool: ChannelPool;
  metrics: Metrics;
  retry?: Partial<RetryOptions>;
  breaker?: Partial<BreakerOptions>;
  /** Upper bound of any call's duration, for calls made without a deadline (probes, tooling). */
  maxCallMs?: number;
}

export const defaultRetryOptions: RetryOptions = {
  maxAttempts: 2,
  baseDelayMs: 10,
  maxDelayMs: 50,
  minAttemptMs: 10,
};

export const defaultBreakerOptions: BreakerOptions = {
  consecutiveFailures: 5,
  halfOpenAfterMs: 1_000,
  maxHalfOpenAfterMs: 30_000,
};

/** Failure kinds, as the errors metric labels them. */
export type FailureKind = 'deadline' | 'unavailable' | 'circuit_open' | 'cancelled' | 'server_error';

/** Statuses that say the endpoint itself is failing; only these count towards opening its circuit. */
const endpointFailures = new Set<number>([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.INTERNAL,
  status.UNKNOWN,
]);

const grpcToLattice: Partial<Record<status, ErrorCode>> = {
  [status.CANCELLED]: 'UNAVAILABLE', // cancelled by the server or a proxy; our own cancellation is mapped first
  [status.INVALID_ARGUMENT]: 'INVALID_ARGUMENT',
  [status.OUT_OF_RANGE]: 'INVALID_ARGUMENT',
  [status.NOT_FOUND]: 'NOT_FOUND',
  [status.ALREADY_EXISTS]: 'ALREADY_EXISTS',
  [status.FAILED_PRECONDITION]: 'FAILED_PRECONDITION',
  [status.UNIMPLEMENTED]: 'FAILED_PRECONDITION', // the target does not serve this API: a configuration error
  [status.ABORTED]: 'ABORTED',
  [status.UNAUTHENTICATED]: 'UNAUTHENTICATED',
  [status.PERMISSION_DENIED]: 'PERMISSION_DENIED',
  [status.RESOURCE_EXHAUSTED]: 'RESOURCE_EXHAUSTED',
  [status.UNAVAILABLE]: 'UNAVAILABLE',
  [status.DEADLINE_EXCEEDED]: 'DEADLINE_EXCEEDED',
};

export function isServiceError(err: unknown): err is ServiceError {
  if (!(err instanceof Error)) return false;
  const candidate = err as Partial<ServiceError>;
  return typeof candidate.code === 'number' && typeof candidate.details === 'string';
}

/**
 * How every outbound gRPC call is made: deadline = min(caller's deadline, `maxCallMs`), cancellation
 * from the AbortSignal, a circuit breaker per endpoint (open: fail fast with UNAVAILABLE "circuit
 * open for <target>"; after a cool-down one probe goes through while other calls keep failing fast),
 * a retry of UNAVAILABLE only (the three RPCs are side-effect free, and UNAVAILABLE carries no
 * response) while the deadline leaves room, and metrics per call. Errors come out as LatticeErrors
 * naming the target. Retries use their own loop rather than cockatiel's retry policy, whose backoff
 * sleep cannot be aborted and which knows no deadline.
 */
export class CallPolicy {
  private readonly pool: ChannelPool;
  private readonly retry: RetryOptions;
  private readonly breakerOptions: BreakerOptions;
  private readonly maxCallMs: number;
  private readonly breakers = new Map<string, CircuitBreakerPolicy>();
  /** Series per service, target and method, bound once: the metrics of a call allocate nothing. */
  private readonly series = new Map<string, CallSeries>();
  /** Deadline failures of attempts that had almost no budget: the caller's fault, not the endpoint's. */
  private readonly uncounted = new WeakSet<Error>();
  private readonly requests;
  private readonly latency;
  private readonly errors;
  private readonly retries;
  private readonly circuit;

  constructor(options: CallPolicyOptions) {
    this.pool = options.pool;
    this.retry = { ...defaultRetryOptions, ...options.retry };
    this.breakerOptions = { ...defaultBreakerOptions, ...options.breaker };
    this.maxCallMs = options.maxCallMs ?? 30_000;
    if (this.retry.maxAttempts < 1)
      throw new LatticeError('INVALID_ARGUMENT', 'retry.maxAttempts must be ≥ 1');
    if (this.breakerOptions.consecutiveFailures < 1)
      throw new LatticeError('INVALID_ARGUMENT', 'breaker.consecutiveFailures must be ≥ 1');
    const { metrics } = options;
    const labels = ['service', 'target', 'method'];
    this.requests = metrics.counter(
      'orchestrator_external_requests_total',
      'Outbound calls to feature stores, model servers and numerix, by outcome (ok, error)',
      [...labels, 'outcome'],
    );
    this.latency = metrics.timing(
      'orchestrator_external_request_seconds',
      'Outbound call latency, retries included',
      labels,
    );
    this.errors = metrics.counter(
      'orchestrator_external_errors_total',
      'Failed outbound calls by kind (deadline, unavailable, circuit_open, cancelled, server_error)',
      [...labels, 'kind'],
    );
    this.retries = metrics.counter('orchestrator_external_retries_total', 'Outbound call retries', labels);
    this.circuit = metrics.gauge(
      'orchestrator_external_circuit_state',
      'Circuit breaker state per endpoint: 0 closed, 1 open, 2 half-open',
      ['target'],
    );
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
    try {
      // Serialised once for every attempt; grpc-js gets the bytes (see unaryCall).
      const body = method.requestSerialize(request);
      const result = await this.withRetries(call, method, body, options, read, series);
      series.ok.inc();
      return result;
    } catch (err) {
      const error = this.toLatticeError(err, call, options.signal);
      series.error.inc();
      this.errors.inc({ ...series.labels, kind: failureKind(error) });
      throw error;
    } finally {
      series.latency.observeMs(performance.now() - started);
    }
  }

  private seriesOf(call: CallTarget): CallSeries {
    const key = `${call.service}\u0000${call.target}\u0000${call.method}`;
    let series = this.series.get(key);
    if (!series) {
      const labels = { service: call.service, target: call.target, method: call.method };
      series = {
        labels,
        ok: this.requests.bind({ ...labels, outcome: 'ok' }),
        error: this.requests.bind({ ...labels, outcome: 'error' }),
        latency: this.latency.bind(labels),
      };
      this.series.set(key, series);
    }
    return series;
  }

  /** The breaker of an endpoint, for tests and status pages. */
  circuitState(target: string): 'closed' | 'open' | 'half-open' {
    const state = this.breakers.get(target)?.state ?? CircuitState.Closed;
    return state === CircuitState.Closed ? 'closed' : state === CircuitState.HalfOpen ? 'half-open' : 'open';
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
    const deadline = Math.min(options.deadline ?? Number.POSITIVE_INFINITY, Date.now() + this.maxCallMs);
    const metadata = options.metadata ?? new Metadata();
    const breaker = this.breaker(call.target);
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
              budget < this.retry.minAttemptMs
            )
              this.uncounted.add(err);
            throw err;
          }
        });
      } catch (err) {
        if (!isServiceError(err) || err.code !== status.UNAVAILABLE || signal.aborted) throw err;
        if (attempt >= this.retry.maxAttempts) throw err;
        const bound = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
        const delay = Math.floor(Math.random() * bound);
        if (deadline - Date.now() - delay < this.retry.minAttemptMs) throw err;
        this.retries.inc(series.labels);
        await pause(delay, signal);
      }
    }
  }

  private breaker(target: string): CircuitBreakerPolicy {
    let breaker = this.breakers.get(target);
    if (!breaker) {
      const { consecutiveFailures, halfOpenAfterMs, maxHalfOpenAfterMs } = this.breakerOptions;
      breaker = circuitBreaker(
        handleWhen(
          (err) => isServiceError(err) && endpointFailures.has(err.code) && !this.uncounted.has(err),
        ),
        {
          breaker: new ConsecutiveBreaker(consecutiveFailures),
          halfOpenAfter: new ExponentialBackoff({
            generator: noJitterGenerator,
            initialDelay: halfOpenAfterMs,
            maxDelay: Math.max(halfOpenAfterMs, maxHalfOpenAfterMs),
          }),
        },
      );
      breaker.onStateChange((state) =>
        this.circuit.set(
          { target },
          state === CircuitState.HalfOpen ? 2 : state === CircuitState.Closed ? 0 : 1,
        ),
      );
      this.circuit.set({ target }, 0);
      this.breakers.set(target, breaker);
    }
    return breaker;
  }

  /** Maps whatever a call threw to a LatticeError whose message names the endpoint. */
  private toLatticeError(err: unknown, call: CallTarget, signal: AbortSignal | undefined): LatticeError {
    const where = `${serviceNames[call.service]} ${call.target}`;
    if (err instanceof BrokenCircuitError) {
      return new CircuitOpen(call.target, `${serviceNames[call.service]} ${call.method} not sent`);
    }
    if (err instanceof CallerCancelled || (isServiceError(err) && signal?.aborted)) {
      const reason = signal?.reason === undefined ? '' : `: ${describeError(signal.reason)}`;
      return new LatticeError('CANCELLED', `${where}: ${call.method} cancelled by the caller${reason}`, {
        cause: err,
      });
    }
    if (err instanceof NoBudget) {
      return new LatticeError(
        'DEADLINE_EXCEEDED',
        `${where}: ${call.method} not sent, the deadline had passed`,
      );
    }
    if (isServiceError(err)) {
      const name = status[err.code] ?? String(err.code);
      if (err.code === status.DEADLINE_EXCEEDED) {
        return new LatticeError('DEADLINE_EXCEEDED', `${where}: ${call.method} exceeded its deadline`, {
          cause: err,
        });
      }
      const code = grpcToLattice[err.code as status] ?? 'INTERNAL';
      return new LatticeError(code, `${where}: ${call.method} failed with ${name}: ${err.details}`);
    }
    if (err instanceof LatticeError) {
      return err.message.includes(call.target)
        ? err
        : new LatticeError(err.code, `${where}: ${err.message}`, { field: err.field, cause: err.cause });
    }
    return new LatticeError('INTERNAL', `${where}: ${call.method} failed: ${describeError(err)}`, {
      cause: err,
    });
  }
}

interface CallSeries {
  labels: Labels;
  ok: BoundCounter;
  error: BoundCounter;
  latency: BoundTiming;
}

/** The signal of calls made without one; never aborts, so listeners on it are never kept. */
const neverAborted = new AbortController().signal;
setMaxListeners(0, neverAborted);

/** UNAVAILABLE raised without calling because the endpoint's circuit is open. */
export class CircuitOpen extends LatticeError {
  constructor(
    readonly target: string,
    detail: string,
  ) {
    super('UNAVAILABLE', `circuit open for ${target} (${detail})`);
  }
}

class CallerCancelled extends Error {
  constructor(readonly reason: unknown) {
    super('cancelled by the caller');
  }
}

class NoBudget extends Error {
  constructor(readonly deadline: number) {
    super('deadline passed before the call');
  }
}

function failureKind(error: LatticeError): FailureKind {
  if (error instanceof CircuitOpen) return 'circuit_open';
  switch (error.code) {
    case 'DEADLINE_EXCEEDED':
      return 'deadline';
    case 'UNAVAILABLE':
      return 'unavailable';
    case 'CANCELLED':
      return 'cancelled';
    default:
      return 'server_error';
  }
}

/** grpc-js moves our bytes as they are: serialising and parsing happen in unaryCall, outside its call. */
export const passThrough = (bytes: Buffer): Buffer => bytes;

/**
 * One unary call of an already serialised request; aborting `signal` cancels it (RST_STREAM: the
 * server's handler sees `cancelled`). The response is parsed here, and what grpc-js keeps of the call
 * (its callback) reaches only a Completion that forgets its promise, signal and call once settled:
 * Node 20 keeps each finished client HTTP/2 stream, and the call objects hung on it, alive through
 * young-generation collections until the next full one, so every message, promise or request context
 * still reachable from there would be copied by each scavenge meanwhile (5–9 ms pauses in
 * bench/predict).
 */
function unaryCall<Req, Res>(
  client: Client,
  method: MethodDefinition<Req, Res>,
  body: Buffer,
  metadata: Metadata,
  deadline: number,
  signal: AbortSignal,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const completion = new Completion(method.path, method.responseDeserialize, signal, resolve, reject);
    // grpc-js captures the caller's stack (`new Error()`) on every call, for the messages of failed
    // ones; ours name the endpoint instead, and the capture was the costliest step of a call.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      completion.call = client.makeUnaryRequest(
        method.path,
        passThrough,
        passThrough,
        body,
        metadata,
        { deadline },
        callbackOf(completion),
      );
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    signal.addEventListener('abort', completion, { once: true });
  });
}

/** A closure over nothing but `completion` (a closure made in unaryCall would hold its whole scope). */
function callbackOf<Res>(completion: Completion<Res>) {
  return (err: ServiceError | null, bytes?: Buffer) => completion.settle(err, bytes);
}

class Completion<Res> {
  call: ClientUnaryCall | undefined = undefined;

  constructor(
    private readonly path: string,
    private parse: ((bytes: Buffer) => Res) | undefined,
    private signal: AbortSignal | undefined,
    private resolve: ((response: Res) => void) | undefined,
    private reject: ((reason: unknown) => void) | undefined,
  ) {}

  /** The caller's signal aborted (EventListenerObject: no closure per call). */
  handleEvent(): void {
    this.call?.cancel();
  }

  settle(err: ServiceError | null, bytes: Buffer | undefined): void {
    const { parse, resolve, reject } = this;
    if (!parse || !resolve || !reject) return;
    this.signal?.removeEventListener('abort', this);
    this.parse = this.signal = this.resolve = this.reject = this.call = undefined;
    if (err) reject(err);
    else if (bytes === undefined) reject(new LatticeError('INTERNAL', `${this.path}: empty response`));
    else {
      let response: Res;
      try {
        response = parse(bytes);
      } catch (cause) {
        const why = `${this.path}: the response cannot be parsed: ${describeError(cause)}`;
        reject(new LatticeError('INTERNAL', why, { cause }));
        return;
      }
      resolve(response);
    }
  }
}

/** Waits `ms`, or less when `signal` aborts (the caller checks it next). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
