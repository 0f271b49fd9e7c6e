/**
 * How the graph build worker (graph-build-worker.ts) shares the cores with writes, decided after
 * each time slice of inserts.
 *
 * The build is background work: searches scan what is not indexed yet, and the writes it competes
 * with are what a consumer waits on before acknowledging. On the 2-core target machine an ingestion
 * keeps the event loop, PGlite's thread and V8's collector threads busy, and every share of a core
 * the build takes meanwhile comes off the acknowledged rate; the build's work is the same whenever
 * it runs, and the cores fall idle once the writes stop. So while writes arrive the build waits for
 * them to stop ("defer"), out of a credit of waiting time; it earns the credit back by running while
 * none arrive. A write stream that outlasts the credit gets the older rule: after each slice the
 * build waits `writerShare` slices' time ("share"), so it keeps at least about a third of a core
 * and a backlog is never starved by writes that never stop (bench/RESULTS.md, "vss-ingest").
 */

export interface BuildPacingOptions {
  /** Waiting time the build may spend deferring to writes before it takes its share, ms. */
  creditMs: number;
  /** A write within this long counts as "writes arriving", ms. */
  recentMs: number;
  /** Slices of waiting per slice of building once the credit is spent. */
  writerShare: number;
  /** How often a deferring build looks again whether the writes stopped, ms. */
  pollMs: number;
}

export const DEFAULT_BUILD_PACING: BuildPacingOptions = {
  creditMs: 30_000,
  recentMs: 250,
  writerShare: 2,
  pollMs: 20,
};

/**
 * A wait before the next slice: `defer` waits for the writes to stop (looked at again after it),
 * `share` is the writers' share once the credit is spent (the build goes on after it).
 */
export interface PacingWait {
  kind: 'defer' | 'share';
  ms: number;
}

export class BuildPacing {
  #credit: number;
  readonly #options: BuildPacingOptions;

  constructor(options: BuildPacingOptions = DEFAULT_BUILD_PACING) {
    this.#options = options;
    this.#credit = options.creditMs;
  }

  /** How long after a write (or, for the parallel builder, a search) the process counts as busy, ms. */
  get recentMs(): number {
    return this.#options.recentMs;
  }

  /** Waiting time left before the build takes its share while writes arrive, ms. */
  get creditMs(): number {
    return this.#credit;
  }

  /**
   * After a slice of `sliceMs`: waits through `wait` as long as the rule says, reading the time
   * and the last write (both Date.now()) from `now` and `lastWrite`. `wait` answers false when a
   * cancel ended a wait early; so does this.
   */
  afterSlice(
    sliceMs: number,
    now: () => number,
    lastWrite: () => number,
    wait: (step: PacingWait) => boolean,
  ): boolean {
    this.#ran(sliceMs, now(), lastWrite());
    let waited = 0;
    for (;;) {
      const step = this.#next(now(), lastWrite(), sliceMs, waited);
      if (step === undefined) return true;
      const from = now();
      if (!wait(step)) return false;
      if (step.kind === 'share') return true;
      waited = now() - from;
    }
  }

  /** Time run while no writes arrive earns credit back, up to the whole credit. */
  #ran(ranMs: number, now: number, lastWrite: number): void {
    if (now - lastWrite >= this.#options.recentMs) {
      this.#credit = Math.min(this.#options.creditMs, this.#credit + ranMs);
    }
  }

  /** The next wait (none: go on), the credit having paid `waitedMs` for the last `defer`. */
  #next(now: number, lastWrite: number, sliceMs: number, waitedMs: number): PacingWait | undefined {
    const { recentMs, writerShare, pollMs } = this.#options;
    this.#credit = Math.max(0, this.#credit - waitedMs);
    if (now - lastWrite >= recentMs) return undefined;
    if (this.#credit > 0) return { kind: 'defer', ms: Math.min(pollMs, this.#credit) };
    return { kind: 'share', ms: sliceMs * writerShare };
  }
}
