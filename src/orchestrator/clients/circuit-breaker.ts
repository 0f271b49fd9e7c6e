import { status } from '@grpc/grpc-js';
import {
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  ExponentialBackoff,
  handleWhen,
  noJitterGenerator,
} from 'cockatiel';
import type { GaugeMetric } from '../../platform/metrics/index.js';
import { isServiceError } from './call-errors.js';

export interface BreakerOptions {
  /** Consecutive endpoint failures (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN) that open the circuit. */
  consecutiveFailures: number;
  /** Cool-down before one half-open probe; doubles after each failed probe, up to `maxHalfOpenAfterMs`. */
  halfOpenAfterMs: number;
  maxHalfOpenAfterMs: number;
}

export const defaultBreakerOptions: BreakerOptions = {
  consecutiveFailures: 5,
  halfOpenAfterMs: 1_000,
  maxHalfOpenAfterMs: 30_000,
};

/** Statuses that say the endpoint itself is failing; only these count towards opening its circuit. */
const endpointFailures = new Set<number>([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.INTERNAL,
  status.UNKNOWN,
]);

/**
 * The circuit breaker of one endpoint (made once per target, never per call): it opens after
 * `consecutiveFailures` endpoint failures, except those in `uncounted` (deadline failures of attempts
 * that had almost no budget: the caller's fault, not the endpoint's), and reports its state on
 * `gauge` (0 closed, 1 open, 2 half-open).
 */
export function endpointBreaker(
  target: string,
  options: BreakerOptions,
  gauge: GaugeMetric,
  uncounted: WeakSet<Error>,
): CircuitBreakerPolicy {
  const { consecutiveFailures, halfOpenAfterMs, maxHalfOpenAfterMs } = options;
  const breaker = circuitBreaker(
    handleWhen((err) => isServiceError(err) && endpointFailures.has(err.code) && !uncounted.has(err)),
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
    gauge.set({ target }, state === CircuitState.HalfOpen ? 2 : state === CircuitState.Closed ? 0 : 1),
  );
  gauge.set({ target }, 0);
  return breaker;
}

/** A breaker's state in words; an endpoint never called has a closed circuit. */
export function circuitStateName(breaker: CircuitBreakerPolicy | undefined): 'closed' | 'open' | 'half-open' {
  const state = breaker?.state ?? CircuitState.Closed;
  return state === CircuitState.Closed ? 'closed' : state === CircuitState.HalfOpen ? 'half-open' : 'open';
}
