/**
 * Foreground work in flight, and background work that runs only while there is none: the
 * orchestrator's shadow requests (issue 40) wait at each step until no caller's request is running,
 * so on a shared event loop a mirrored request takes idle turns instead of queueing its retrieval,
 * feature fetches and scoring ahead of callers'. Work already started is not preempted: at most one
 * background step (a component's synchronous part) runs ahead of a caller that arrives during it.
 */
export class IdleGate {
  private busy = 0;
  private waiting: (() => void)[] = [];
  private wakeScheduled = false;

  /** A foreground request starts. */
  enter(): void {
    this.busy++;
  }

  /** A foreground request ended (succeeded or not): once none runs, waiting background work goes on. */
  leave(): void {
    this.busy--;
    // On a later turn: the request that just ended still writes its answer first, and a caller that
    // arrives meanwhile keeps the background waiting.
    if (this.busy === 0 && this.waiting.length > 0 && !this.wakeScheduled) {
      this.wakeScheduled = true;
      setImmediate(this.wake);
    }
  }

  /** Foreground requests running now. */
  get inFlight(): number {
    return this.busy;
  }

  /**
   * Undefined when no foreground request runs (go on at once, nothing allocated); otherwise a promise
   * that resolves once none does.
   */
  idle(): Promise<void> | undefined {
    if (this.busy === 0) return undefined;
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Resumes every waiter once no foreground request runs (one closure per gate, not per wake). */
  private readonly wake = (): void => {
    this.wakeScheduled = false;
    if (this.busy > 0) return;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  };
}
