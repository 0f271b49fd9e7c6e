/**
 * Resilience around vector DB calls: a timeout and a circuit breaker (cockatiel). Failures that say
 * the database is unhealthy (UNAVAILABLE, INTERNAL, timeouts, unexpected errors) count towards the
 * breaker; caller mistakes (INVALID_ARGUMENT, NOT_FOUND, …) do not. An open breaker rejects at once
 * with UNAVAILABLE: load is shed, not queued.
 */
import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
  IsolatedCircuitError,
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
  private readonly breaker: CircuitBreakerPolicy;
  private readonly timeoutMs: number;

  constructor(options: VectorDbGuardOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.breaker = circuitBreaker(handleWhen(countsAsFailure), {
      halfOpenAfter: options.halfOpenAfterMs ?? 5000,
      breaker: new ConsecutiveBreaker(options.consecutiveFailures ?? 5),
    });
  }

  /** Runs `call` under the breaker and the timeout; errors come out as LatticeErrors. */
  async run<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await this.breaker.execute(() => this.bounded(call, signal));
    } catch (err) {
      if (err instanceof BrokenCircuitError || err instanceof IsolatedCircuitError) {
        throw new LatticeError('UNAVAILABLE', 'vector database circuit is open: shedding load', {
          cause: err,
        });
      }
      if (isLatticeError(err)) throw err;
      throw new LatticeError('UNAVAILABLE', 'vector database call failed', { cause: err });
    }
  }

  /**
   * `call` raced against the timeout and the caller's signal. One timer and one listener per call:
   * cockatiel's timeout policy derived two AbortControllers and their listeners per search, about
   * 8 % of a serving process's CPU in bench/vss-search. The call itself is not interrupted (the
   * port's calls take no signal); its late result is dropped.
   */
  private bounded<T>(call: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    if (signal?.aborted) return Promise.reject(this.cancelled(signal));
    const pending = call();
    return new Promise<T>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        settle();
        reject(this.cancelled(signal!));
      };
      const timer = setTimeout(() => {
        settle();
        reject(
          new LatticeError('DEADLINE_EXCEEDED', `vector database did not answer within ${this.timeoutMs} ms`),
        );
      }, this.timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      pending.then(
        (value) => {
          settle();
          resolve(value);
        },
        (err: unknown) => {
          settle();
          reject(err);
        },
      );
    });
  }

  /** The caller's own reason (its deadline or cancellation) when it is one of ours. */
  private cancelled(signal: AbortSignal): LatticeError {
    return isLatticeError(signal.reason)
      ? signal.reason
      : new LatticeError('CANCELLED', 'vector database call cancelled by the caller');
  }
}
