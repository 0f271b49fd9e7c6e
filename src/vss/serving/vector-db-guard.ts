/**
 * Resilience around vector DB calls: a timeout and a circuit breaker (cockatiel). Failures that say
 * the database is unhealthy (UNAVAILABLE, INTERNAL, timeouts, unexpected errors) count towards the
 * breaker; caller mistakes (INVALID_ARGUMENT, NOT_FOUND, …) do not. An open breaker rejects at once
 * with UNAVAILABLE: load is shed, not queued.
 */
import {
  BrokenCircuitError,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
  type IPolicy,
  IsolatedCircuitError,
  TaskCancelledError,
  TimeoutStrategy,
  timeout,
  wrap,
} from 'cockatiel';
import { isLatticeError, LatticeError } from '../../platform/errors.js';

export interface VectorDbGuardOptions {
  /** Per-call timeout, ms; default 2,000. */
  timeoutMs?: number;
  /** Consecutive failures that open the breaker; default 5. */
  consecutiveFailures?: number;
  /** How long the breaker stays open before letting one trial call through, ms; default 5,000. */
  halfOpenAfterMs?: number;
}

const countsAsFailure = (err: Error) =>
  !isLatticeError(err) ||
  err.code === 'UNAVAILABLE' ||
  err.code === 'INTERNAL' ||
  err.code === 'DEADLINE_EXCEEDED';

export class VectorDbGuard {
  private readonly policy: IPolicy;
  private readonly timeoutMs: number;

  constructor(options: VectorDbGuardOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 2000;
    const breaker = circuitBreaker(handleWhen(countsAsFailure), {
      halfOpenAfter: options.halfOpenAfterMs ?? 5000,
      breaker: new ConsecutiveBreaker(options.consecutiveFailures ?? 5),
    });
    // abortOnReturn off: the call ignores the policy's signal, and aborting it after every call made
    // a DOMException per search (measured in bench/vss-search).
    this.policy = wrap(
      breaker,
      timeout(this.timeoutMs, { strategy: TimeoutStrategy.Aggressive, abortOnReturn: false }),
    );
  }

  /** Runs `call` under the breaker and the timeout; errors come out as LatticeErrors. */
  async run<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await this.policy.execute(() => call(), signal);
    } catch (err) {
      if (err instanceof BrokenCircuitError || err instanceof IsolatedCircuitError) {
        throw new LatticeError('UNAVAILABLE', 'vector database circuit is open: shedding load', {
          cause: err,
        });
      }
      if (err instanceof TaskCancelledError) {
        if (signal?.aborted && isLatticeError(signal.reason)) throw signal.reason;
        throw new LatticeError(
          'DEADLINE_EXCEEDED',
          `vector database did not answer within ${this.timeoutMs} ms`,
        );
      }
      if (isLatticeError(err)) throw err;
      throw new LatticeError('UNAVAILABLE', 'vector database call failed', { cause: err });
    }
  }
}
