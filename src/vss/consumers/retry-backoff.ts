/**
 * How long the consumer runner waits between attempts at a batch whose `apply` threw (a transient
 * failure: SQL or the vector DB unavailable). Exponential from `baseMs`, capped at `maxMs`, with
 * half jitter (each delay drawn between half and all of the exponential value): replicas that failed together do not retry in lockstep, and a recovering
 * database always gets at least half the nominal pause.
 */
import { Backoff } from '../../platform/scheduling/index.js';

export interface RetrySettings {
  /** Attempts at a batch, the first included, before its failing events are dead-lettered. */
  attempts: number;
  /** Nominal delay after the first failure, ms; doubles after each further one. */
  baseMs: number;
  /** Cap on the nominal delay, ms. */
  maxMs: number;
}

/** The delays of one batch's retries, in order: `attempts - 1` of them. */
export class RetryBackoff {
  readonly #settings: RetrySettings;

  constructor(settings: RetrySettings) {
    this.#settings = settings;
  }

  get attempts(): number {
    return this.#settings.attempts;
  }

  /** A fresh schedule for one batch: call `next()` after each failed attempt. */
  schedule(): { next(): number } {
    return new Backoff({ initialMs: this.#settings.baseMs, maxMs: this.#settings.maxMs, jitter: 'half' });
  }
}
