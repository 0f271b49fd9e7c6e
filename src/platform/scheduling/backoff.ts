/**
 * Exponential backoff, the one formula behind every retry and reconnect loop of the platform and the
 * services: the delay after the first failure is `initialMs`, doubled after each further one up to
 * `maxMs`, optionally jittered so that processes which failed together do not retry in lockstep.
 * cockatiel computes the delays (its `ExponentialBackoff` and jitter generators); the loops keep
 * their own control flow (deadlines, abort signals, what counts as retryable), which cockatiel's
 * retry policy does not know.
 */
import {
  ExponentialBackoff,
  fullJitterGenerator,
  type GeneratorFn,
  halfJitterGenerator,
  type IBackoff,
  type IExponentialBackoffOptions,
  noJitterGenerator,
} from 'cockatiel';

/**
 * How a delay is drawn from the exponential value `d`: `none` is `d` itself, `full` uniform in
 * [0, d) (the most spread, for many callers hitting one server), `half` in [d/2, d) (spread, yet a
 * recovering dependency always gets at least half the nominal pause).
 */
export type BackoffJitter = 'none' | 'full' | 'half';

export interface BackoffOptions {
  /** Delay after the first failure, ms. */
  initialMs: number;
  /** Cap on the delay, ms; none by default. */
  maxMs?: number;
  /** Default `none`. */
  jitter?: BackoffJitter;
}

const GENERATORS: Record<BackoffJitter, GeneratorFn<number>> = {
  none: noJitterGenerator,
  full: fullJitterGenerator,
  half: halfJitterGenerator,
};

function cockatielOptions(options: BackoffOptions): IExponentialBackoffOptions<number> {
  return {
    initialDelay: options.initialMs,
    maxDelay: options.maxMs ?? Number.POSITIVE_INFINITY,
    exponent: 2,
    generator: GENERATORS[options.jitter ?? 'none'],
  };
}

/**
 * The delays of one run of failures, in order: `next()` after each failure, `reset()` after a
 * success so that the next failure waits `initialMs` again.
 */
export class Backoff {
  readonly #factory: ExponentialBackoff<number>;
  #current: IBackoff<unknown> | undefined;
  #failures = 0;

  constructor(options: BackoffOptions) {
    this.#factory = new ExponentialBackoff(cockatielOptions(options));
  }

  /** The delay before the attempt that follows one more failure. */
  next(): number {
    this.#current = this.#current ? this.#current.next(undefined) : this.#factory.next();
    this.#failures++;
    return this.#current.duration;
  }

  reset(): void {
    this.#current = undefined;
    this.#failures = 0;
  }

  /** Failures since the last reset. */
  get failures(): number {
    return this.#failures;
  }
}

/** The delay after `failures` consecutive failures (1-based), for loops that count them themselves. */
export function backoffDelay(options: BackoffOptions, failures: number): number {
  const settings = cockatielOptions(options);
  // The generators' state is the number of failures before this one.
  return settings.generator(Math.max(0, failures - 1), settings)[0];
}
