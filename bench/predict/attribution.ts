/**
 * How the predict benchmark attributes a request's time inside the orchestrator: its server-side
 * handling window (from the gRPC metrics interceptor) against the wall time during which at least one
 * downstream call was in flight (timing decorators around the FeatureFetcher, ModelInferer and
 * RemoteCompute given to `createComponentBuilder`; intervals merged, since feature calls run
 * concurrently). Overhead = handling − downstream waiting.
 */
import { Metrics, type TimingMetric } from '../../src/platform/metrics/index.js';

export interface Window {
  start: number;
  end: number;
}

/** Metrics that also keep each orchestrator call's handling window (start, end in performance.now ms). */
export class WindowMetrics extends Metrics {
  readonly windows: Window[] = [];
  override timing(...args: Parameters<Metrics['timing']>): TimingMetric {
    const inner = super.timing(...args);
    if (args[0] !== 'grpc_server_handling_seconds') return inner;
    const keep = (ms: number) => {
      const end = performance.now();
      this.windows.push({ start: end - ms, end });
    };
    return {
      observeMs: (labels, ms) => {
        keep(ms);
        inner.observeMs(labels, ms);
      },
      bind: (labels) => {
        const series = inner.bind(labels);
        return {
          observeMs: (ms) => {
            keep(ms);
            series.observeMs(ms);
          },
        };
      },
    };
  }
}

/** Wall time during which at least one downstream call was in flight, as merged intervals. */
export class DownstreamTimer {
  readonly intervals: Window[] = [];
  private inFlight = 0;
  private since = 0;

  /** Summed call durations (not merged) and call counts by kind, for the breakdown. */
  readonly byKind = new Map<string, { ms: number; calls: number }>();
  /** Whether `byKind` counts now (only during the unlogged sequential runs). */
  countKinds = false;

  track<T>(kind: string, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    if (this.inFlight++ === 0) this.since = started;
    const finish = () => {
      if (!this.countKinds) return this.done();
      const k = this.byKind.get(kind) ?? { ms: 0, calls: 0 };
      k.ms += performance.now() - started;
      k.calls++;
      this.byKind.set(kind, k);
      this.done();
    };
    return call().then(
      (value) => {
        finish();
        return value;
      },
      (err: unknown) => {
        finish();
        throw err;
      },
    );
  }

  private done(): void {
    if (--this.inFlight === 0) this.intervals.push({ start: this.since, end: performance.now() });
  }
}

/**
 * Per window: its length, the part of it covered by downstream intervals (both sorted by start), and
 * where the rest lies: before the first downstream call (`lead`: request decoding up to the first
 * call), after the last (`tail`: response building and sending), and between calls (`gaps`).
 */
/** Per call, in ms: see attribute. */
export interface Attribution {
  handling: number[];
  waiting: number[];
  lead: number[];
  gaps: number[];
  tail: number[];
  /** Garbage-collection pause time inside the call's overhead (not under a downstream call). */
  gc: number[];
}

export function attribute(
  windows: readonly Window[],
  intervals: readonly Window[],
  pauses: readonly Window[] = [],
): Attribution {
  const handling: number[] = [];
  const waiting: number[] = [];
  const lead: number[] = [];
  const gaps: number[] = [];
  const tail: number[] = [];
  const gc: number[] = [];
  let j = 0;
  for (const w of windows) {
    while (j < intervals.length && intervals[j]!.end <= w.start) j++;
    let busy = 0;
    let first = w.end;
    let last = w.start;
    // GC pauses inside the window, less their parts inside downstream intervals: GC in the overhead.
    let paused = covered(pauses, w);
    for (let k = j; k < intervals.length && intervals[k]!.start < w.end; k++) {
      const start = Math.max(w.start, intervals[k]!.start);
      const end = Math.min(w.end, intervals[k]!.end);
      busy += Math.max(0, end - start);
      if (end > start) paused -= covered(pauses, { start, end });
      first = Math.min(first, start);
      last = Math.max(last, end);
    }
    gc.push(Math.max(0, paused));
    handling.push(w.end - w.start);
    waiting.push(busy);
    const before = Math.max(0, first - w.start);
    const after = Math.max(0, w.end - Math.max(last, first));
    lead.push(before);
    tail.push(after);
    gaps.push(Math.max(0, w.end - w.start - busy - before - after));
  }
  return { handling, waiting, lead, gaps, tail, gc };
}

/** How much of `span` the (sorted, disjoint) `pauses` cover. */
function covered(pauses: readonly Window[], span: Window): number {
  let total = 0;
  for (const p of pauses) {
    if (p.start >= span.end) break;
    total += Math.max(0, Math.min(span.end, p.end) - Math.max(span.start, p.start));
  }
  return total;
}

export function pct(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
