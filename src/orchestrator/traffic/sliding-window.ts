/**
 * Calls, errors and latencies of the last minute, kept in process for the console's live numbers.
 * Prometheus histograms only count since the process started (a scraper takes differences); the
 * console asks this process directly, so each series keeps one slot per second of the last 60: a
 * count, an error count and a log-scale latency histogram (4 % wide buckets from 10 µs), which give
 * rates and quantiles over the window within the bucket width. Memory is bounded: 60 slots of 2 KiB
 * per series at most, allocated only for seconds that saw a call.
 */

const SLOTS = 60;
const BUCKETS = 512;
const RATIO = 1.04;
const MIN_MS = 0.01;
const LOG_RATIO = Math.log(RATIO);

interface Slot {
  /** Which second (epoch s) the slot holds; an older one is cleared before reuse. */
  second: number;
  calls: number;
  errors: number;
  histogram: Uint32Array | undefined;
}

/** What a window says of its series. */
export interface WindowSummary {
  calls: number;
  errors: number;
  /** Latency quantiles in ms over the calls of the window; undefined when there were none. */
  p50Ms: number | undefined;
  p99Ms: number | undefined;
}

function bucketOf(ms: number): number {
  if (!(ms > MIN_MS)) return 0;
  return Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / MIN_MS) / LOG_RATIO));
}

/** A bucket's representative value: the geometric middle of its bounds. */
function representative(bucket: number): number {
  if (bucket === 0) return MIN_MS;
  return MIN_MS * RATIO ** (bucket - 0.5);
}

export class SlidingWindow {
  static readonly SECONDS = SLOTS;
  private readonly slots: Slot[] = Array.from({ length: SLOTS }, () => ({
    second: -1,
    calls: 0,
    errors: 0,
    histogram: undefined,
  }));

  constructor(private readonly now: () => number = Date.now) {}

  record(ms: number, failed: boolean): void {
    const second = Math.floor(this.now() / 1000);
    const slot = this.slots[second % SLOTS]!;
    if (slot.second !== second) {
      slot.second = second;
      slot.calls = 0;
      slot.errors = 0;
      slot.histogram?.fill(0);
    }
    slot.calls++;
    if (failed) slot.errors++;
    slot.histogram ??= new Uint32Array(BUCKETS);
    slot.histogram[bucketOf(ms)]!++;
  }

  /** The calls of the last `SECONDS` seconds (the current one included). */
  summary(): WindowSummary {
    const newest = Math.floor(this.now() / 1000);
    const merged = new Float64Array(BUCKETS);
    let calls = 0;
    let errors = 0;
    for (const slot of this.slots) {
      if (slot.second <= newest - SLOTS || slot.second > newest || slot.histogram === undefined) continue;
      calls += slot.calls;
      errors += slot.errors;
      for (let b = 0; b < BUCKETS; b++) merged[b]! += slot.histogram[b]!;
    }
    return { calls, errors, p50Ms: quantile(merged, calls, 0.5), p99Ms: quantile(merged, calls, 0.99) };
  }
}

function quantile(histogram: Float64Array, total: number, q: number): number | undefined {
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let b = 0; b < histogram.length; b++) {
    seen += histogram[b]!;
    if (seen >= rank) return representative(b);
  }
  return representative(histogram.length - 1);
}
