import { backoffDelay as exponentialDelay } from '../../platform/scheduling/index.js';

export interface RetryOptions {
  /** Attempts in all, the first included; 1 disables retries. */
  maxAttempts: number;
  /** Bound of the first backoff, doubled per retry up to `maxDelayMs`; the delay is uniform in [0, bound). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A retry is sent only if at least this much of the deadline remains after its backoff. */
  minAttemptMs: number;
}

export const defaultRetryOptions: RetryOptions = {
  maxAttempts: 2,
  baseDelayMs: 10,
  maxDelayMs: 50,
  minAttemptMs: 10,
};

/** The backoff before the retry that follows attempt `attempt` (1-based): full jitter, capped. */
export function backoffDelay(retry: RetryOptions, attempt: number): number {
  return exponentialDelay({ initialMs: retry.baseDelayMs, maxMs: retry.maxDelayMs, jitter: 'full' }, attempt);
}
