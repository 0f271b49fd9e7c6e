/**
 * When each component of one execution started and how long it ran, for a caller that asked (the
 * `lattice-timings` metadata of a Predict). The caller creates one and passes it in the execute
 * options; an execution without one records nothing beyond what it records anyway.
 */

/**
 * `ran` finished; `failed` threw or rejected; `skipped` never started (the execution ended first);
 * `cancelled` was still running when the execution ended.
 */
export type ComponentRunState = 'ran' | 'failed' | 'skipped' | 'cancelled';

export interface ComponentTiming {
  readonly name: string;
  /** What the component is, set by a caller that knows (the executor does not). */
  readonly kind?: string;
  readonly state: ComponentRunState;
  /** From the timeline's origin, in ms; 0 for a skipped component. */
  readonly startMs: number;
  /** 0 for a skipped component. */
  readonly durationMs: number;
}

export class ExecutionTimeline {
  /** `performance.now()` when the timeline was made: every offset counts from here. */
  readonly origin = performance.now();
  /** In topological order, filled when the execution settles (succeeds or is abandoned). */
  components: ComponentTiming[] = [];
  /** From the origin to when the execution settled, in ms; set by `end`. */
  totalMs = 0;

  /** Called by the executor once, when the execution settles. */
  record(components: ComponentTiming[]): void {
    this.components = components;
  }

  /** Replaces the entry of `name` (a step done outside the DAG, such as FeatureInit's work). */
  set(timing: ComponentTiming): void {
    const at = this.components.findIndex((c) => c.name === timing.name);
    if (at >= 0) this.components[at] = timing;
    else this.components.unshift(timing);
  }

  /** The request is over: the total runs up to now. */
  end(): void {
    this.totalMs = performance.now() - this.origin;
  }
}
