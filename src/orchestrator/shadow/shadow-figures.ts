/**
 * The current figures of each (primary, shadow) pair, kept in process for `lattice models compare`
 * (GET /api/v1/models/:id/shadows/:shadow) and exported as Prometheus metrics: counts since the
 * process started, and the mean of each comparison figure over the last {@link WINDOW} comparisons.
 */
import type { Metrics } from '../../platform/metrics/index.js';
import type { RankingComparison } from './ranking-comparison.js';

/** Comparisons the recent figures average over. */
export const WINDOW = 100;

export type DropReason = 'queue_full' | 'unknown_shadow';

export interface ShadowComparison extends RankingComparison {
  /** Shadow minus primary ms per component both ran, and `(total)`. */
  latencyDiffMs: Record<string, number>;
}

/** What GET /api/v1/models/:id/shadows/:shadow answers; a figure no comparison defined is null. */
export interface PairFigures {
  primary: string;
  shadow: string;
  /** Requests sampled for mirroring, dropped or not. */
  sampled: number;
  dropped: Record<DropReason, number>;
  /** Shadow executions that failed (nothing compared). */
  failed: number;
  compared: number;
  /** Means over the last `window` comparisons (max_abs_diff: the max). */
  window: number;
  overlap_at_k: number | null;
  kendall_tau: number | null;
  mean_abs_diff: number | null;
  max_abs_diff: number | null;
  /** Shadow minus primary, mean ms per component over the window, `(total)` for the whole execution. */
  latency_diff_ms: Record<string, number>;
  /** The latest comparison, as is. */
  last: {
    overlap_at_k: number | null;
    kendall_tau: number | null;
    mean_abs_diff: number | null;
    max_abs_diff: number | null;
    /** Targets both answers scored. */
    shared: number;
    latency_diff_ms: Record<string, number>;
  } | null;
}

const finite = (v: number) => (Number.isFinite(v) ? v : null);

/** Mean of the finite values; null when none is. */
function mean(values: readonly number[]): number | null {
  let sum = 0;
  let n = 0;
  for (const v of values)
    if (Number.isFinite(v)) {
      sum += v;
      n++;
    }
  return n === 0 ? null : sum / n;
}

class Pair {
  sampled = 0;
  failed = 0;
  compared = 0;
  readonly dropped: Record<DropReason, number> = { queue_full: 0, unknown_shadow: 0 };
  readonly recent: ShadowComparison[] = [];

  constructor(
    readonly primary: string,
    readonly shadow: string,
  ) {}

  figures(): PairFigures {
    const r = this.recent;
    const maxes = r.map((c) => c.maxAbsDiff).filter(Number.isFinite);
    const latency: Record<string, number[]> = {};
    for (const c of r)
      for (const [name, ms] of Object.entries(c.latencyDiffMs)) {
        latency[name] ??= [];
        latency[name].push(ms);
      }
    const last = r.at(-1);
    return {
      primary: this.primary,
      shadow: this.shadow,
      sampled: this.sampled,
      dropped: { ...this.dropped },
      failed: this.failed,
      compared: this.compared,
      window: r.length,
      overlap_at_k: mean(r.map((c) => c.overlapAtK)),
      kendall_tau: mean(r.map((c) => c.kendallTau)),
      mean_abs_diff: mean(r.map((c) => c.meanAbsDiff)),
      max_abs_diff: maxes.length === 0 ? null : Math.max(...maxes),
      latency_diff_ms: Object.fromEntries(Object.entries(latency).map(([name, v]) => [name, mean(v)!])),
      last:
        last === undefined
          ? null
          : {
              overlap_at_k: finite(last.overlapAtK),
              kendall_tau: finite(last.kendallTau),
              mean_abs_diff: finite(last.meanAbsDiff),
              max_abs_diff: finite(last.maxAbsDiff),
              shared: last.shared,
              latency_diff_ms: last.latencyDiffMs,
            },
    };
  }
}

/** Every pair's figures, and their metrics (labels `primary`, `shadow`). */
export class ShadowFigures {
  private readonly pairs = new Map<string, Pair>();
  private readonly metrics;

  constructor(metrics?: Metrics) {
    this.metrics =
      metrics === undefined
        ? undefined
        : {
            sampled: metrics.counter(
              'orchestrator_shadow_sampled_total',
              'Requests sampled for mirroring to a shadow config, dropped or not',
              ['primary', 'shadow'],
            ),
            dropped: metrics.counter(
              'orchestrator_shadow_dropped_total',
              'Mirrored requests dropped: queue_full (the bounded shadow queue was full) or unknown_shadow (no such config loaded)',
              ['primary', 'shadow', 'reason'],
            ),
            failed: metrics.counter(
              'orchestrator_shadow_failed_total',
              'Mirrored requests whose shadow execution failed',
              ['primary', 'shadow'],
            ),
            compared: metrics.counter(
              'orchestrator_shadow_compared_total',
              'Mirrored requests whose two answers were compared',
              ['primary', 'shadow'],
            ),
            overlap: metrics.gauge(
              'orchestrator_shadow_overlap_at_k',
              `Overlap of the top k targets of primary and shadow, mean of the last ${WINDOW} comparisons`,
              ['primary', 'shadow'],
            ),
            tau: metrics.gauge(
              'orchestrator_shadow_kendall_tau',
              `Kendall's tau-b of primary and shadow scores over shared targets, mean of the last ${WINDOW} comparisons`,
              ['primary', 'shadow'],
            ),
            meanDiff: metrics.gauge(
              'orchestrator_shadow_score_diff_mean',
              `Mean absolute score difference over shared targets, mean of the last ${WINDOW} comparisons`,
              ['primary', 'shadow'],
            ),
            maxDiff: metrics.gauge(
              'orchestrator_shadow_score_diff_max',
              `Max absolute score difference over shared targets in the last ${WINDOW} comparisons`,
              ['primary', 'shadow'],
            ),
            latency: metrics.gauge(
              'orchestrator_shadow_latency_diff_ms',
              `Shadow minus primary duration per component ("(total)": the whole execution), ms, mean of the last ${WINDOW} comparisons`,
              ['primary', 'shadow', 'component'],
            ),
          };
  }

  private pair(primary: string, shadow: string): Pair {
    const key = `${primary}\u0000${shadow}`;
    let pair = this.pairs.get(key);
    if (pair === undefined) {
      pair = new Pair(primary, shadow);
      this.pairs.set(key, pair);
    }
    return pair;
  }

  sampled(primary: string, shadow: string): void {
    this.pair(primary, shadow).sampled++;
    this.metrics?.sampled.inc({ primary, shadow });
  }

  dropped(primary: string, shadow: string, reason: DropReason): void {
    this.pair(primary, shadow).dropped[reason]++;
    this.metrics?.dropped.inc({ primary, shadow, reason });
  }

  failed(primary: string, shadow: string): void {
    this.pair(primary, shadow).failed++;
    this.metrics?.failed.inc({ primary, shadow });
  }

  compared(primary: string, shadow: string, comparison: ShadowComparison): void {
    const pair = this.pair(primary, shadow);
    pair.compared++;
    pair.recent.push(comparison);
    if (pair.recent.length > WINDOW) pair.recent.shift();
    const m = this.metrics;
    if (m === undefined) return;
    const labels = { primary, shadow };
    m.compared.inc(labels);
    const f = pair.figures();
    // A figure no recent comparison defined (e.g. τ of one target) is exported as NaN.
    m.overlap.set(labels, f.overlap_at_k ?? Number.NaN);
    m.tau.set(labels, f.kendall_tau ?? Number.NaN);
    m.meanDiff.set(labels, f.mean_abs_diff ?? Number.NaN);
    m.maxDiff.set(labels, f.max_abs_diff ?? Number.NaN);
    for (const [component, ms] of Object.entries(f.latency_diff_ms))
      m.latency.set({ ...labels, component }, ms);
  }

  /** The pair's figures; undefined when the primary never sampled a request for this shadow. */
  get(primary: string, shadow: string): PairFigures | undefined {
    return this.pairs.get(`${primary}\u0000${shadow}`)?.figures();
  }
}
