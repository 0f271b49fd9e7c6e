/**
 * How two answers to the same request differ (orchestrator.md "Shadow configs"): pure functions over
 * each answer's scores per target, so they are tested on hand-made numbers and run off the request
 * path on real answers.
 */
import type { ComponentTiming } from '../dag/index.js';

/** One answer's scores: `keys[i]` (a target id) scored `scores[i]`; higher ranks first when `descending`. */
export interface Ranking {
  readonly keys: readonly string[];
  readonly scores: ArrayLike<number>;
  readonly descending: boolean;
}

export interface RankingComparison {
  /** |top k of the primary ∩ top k of the shadow| ÷ the longer of the two tops; NaN when both are empty. */
  overlapAtK: number;
  /**
   * Kendall's τ-b of the two scores over the targets both answers hold (an evenly spaced sample of
   * {@link TAU_MAX_PAIRS} past that many); NaN under two such targets or when one side is constant.
   */
  kendallTau: number;
  /** Mean and max |primary score − shadow score| over the shared targets; NaN when none is shared. */
  meanAbsDiff: number;
  maxAbsDiff: number;
  /** Targets both answers scored. */
  shared: number;
}

/**
 * The keys of the `k` best-ranked entries, best first; ties are broken by key so the top is
 * deterministic. One pass keeping the best `k` in order: O(n·log k) compares for the usual small
 * k, not a sort of every target.
 */
export function topK(ranking: Ranking, k: number): string[] {
  const { keys, scores } = ranking;
  const sign = ranking.descending ? -1 : 1;
  /** Negative when entry a ranks before entry b. */
  const compare = (a: number, b: number) => {
    const d = sign * (scores[a]! - scores[b]!);
    if (d !== 0 && !Number.isNaN(d)) return d;
    const ka = keys[a]!;
    const kb = keys[b]!;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
  const size = Math.min(Math.max(0, Math.floor(k)), keys.length);
  const best: number[] = [];
  for (let i = 0; i < keys.length && size > 0; i++) {
    if (best.length === size && compare(i, best[size - 1]!) >= 0) continue;
    // Binary search for its place among the best so far.
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(best[mid]!, i) <= 0) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, i);
    if (best.length > size) best.pop();
  }
  return best.map((i) => keys[i]!);
}

/** |a ∩ b| ÷ max(|a|, |b|): 1 when the two tops hold the same targets, whatever their order. */
export function overlapAtK(a: readonly string[], b: readonly string[]): number {
  const size = Math.max(a.length, b.length);
  if (size === 0) return Number.NaN;
  const inA = new Set(a);
  let common = 0;
  for (const key of new Set(b)) if (inA.has(key)) common++;
  return common / size;
}

/**
 * Kendall's τ-b of paired observations, ties corrected:
 * (concordant − discordant) ÷ √((n₀ − n₁)(n₀ − n₂)), with n₀ = n(n−1)/2 and n₁, n₂ the pairs tied in
 * x and in y. Knight's O(n log n) method: sort by (x, y), then count the swaps a merge sort of y
 * makes (each swap is one discordant pair). 1 for the same order, −1 for the reversed one; NaN for
 * fewer than two pairs or a constant side, where τ is undefined.
 */
export function kendallTauB(x: ArrayLike<number>, y: ArrayLike<number>): number {
  const n = x.length;
  if (n !== y.length) throw new RangeError(`kendallTauB: ${n} x values but ${y.length} y values`);
  if (n < 2) return Number.NaN;
  const order = argsortByXThenY(x, y);
  const n0 = (n * (n - 1)) / 2;
  // Pairs tied in x (n1), and tied in both x and y (n3).
  let n1 = 0;
  let n3 = 0;
  for (let i = 0, xRun = 1, xyRun = 1; i < n; i++) {
    const last = i === n - 1;
    const a = order[i]!;
    const b = last ? -1 : order[i + 1]!;
    const sameX = !last && x[a] === x[b];
    const sameXY = sameX && y[a] === y[b];
    if (sameXY) xyRun++;
    else {
      n3 += (xyRun * (xyRun - 1)) / 2;
      xyRun = 1;
    }
    if (sameX) xRun++;
    else {
      n1 += (xRun * (xRun - 1)) / 2;
      xRun = 1;
    }
  }
  const ys = Float64Array.from(order, (i) => y[i]!);
  const swaps = mergeSortSwaps(ys);
  // ys is now sorted: pairs tied in y (n2).
  let n2 = 0;
  for (let i = 0, run = 1; i < n; i++) {
    if (i < n - 1 && ys[i] === ys[i + 1]) run++;
    else {
      n2 += (run * (run - 1)) / 2;
      run = 1;
    }
  }
  const denominator = Math.sqrt((n0 - n1) * (n0 - n2));
  if (denominator === 0) return Number.NaN;
  return (n0 - n1 - n2 + n3 - 2 * swaps) / denominator;
}

/** The indices of the pairs ordered by x, then y (stable). */
function argsortByXThenY(x: ArrayLike<number>, y: ArrayLike<number>): Uint32Array {
  const order = Uint32Array.from({ length: x.length }, (_, i) => i);
  mergeSort(order, (a, b) => x[a]! < x[b]! || (x[a] === x[b] && y[a]! <= y[b]!));
  return order;
}

/** Sorts `values` ascending in place; returns how many inversions (i < j, v[i] > v[j]) it had. */
function mergeSortSwaps(values: Float64Array): number {
  // Equal values are not an inversion: the left one is taken first.
  return mergeSort(values, (a, b) => a <= b);
}

/**
 * A bottom-up merge sort of `items` in place: `inOrder(a, b)` says the left item `a` may come
 * before the right item `b` (false for a NaN on either side: the right one is taken). Returns the
 * inversions it undid (each right item taken ahead of the left ones still waiting).
 */
function mergeSort<T extends Uint32Array | Float64Array>(
  items: T,
  inOrder: (a: number, b: number) => boolean,
): number {
  const n = items.length;
  let from: Uint32Array | Float64Array = items;
  let to: Uint32Array | Float64Array =
    items instanceof Uint32Array ? new Uint32Array(n) : new Float64Array(n);
  let swaps = 0;
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        if (inOrder(from[i]!, from[j]!)) to[k++] = from[i++]!;
        else {
          swaps += mid - i;
          to[k++] = from[j++]!;
        }
      }
      while (i < mid) to[k++] = from[i++]!;
      while (j < hi) to[k++] = from[j++]!;
    }
    [from, to] = [to, from];
  }
  if (from !== items) items.set(from);
  return swaps;
}

/**
 * Pairs τ is computed over at most: past it, an evenly spaced sample of the shared targets (in the
 * primary's row order), so one comparison of a 100,000-target answer stays a few ms of the event
 * loop rather than a hundred.
 */
export const TAU_MAX_PAIRS = 10_000;

function sample(values: number[]): number[] {
  if (values.length <= TAU_MAX_PAIRS) return values;
  const step = values.length / TAU_MAX_PAIRS;
  return Array.from({ length: TAU_MAX_PAIRS }, (_, i) => values[Math.floor(i * step)]!);
}

/** Compares the primary's answer with the shadow's: overlap@k, τ-b and score differences on the shared targets. */
export function compareRankings(primary: Ranking, shadow: Ranking, k: number): RankingComparison {
  const shadowAt = new Map<string, number>();
  shadow.keys.forEach((key, i) => {
    if (!shadowAt.has(key)) shadowAt.set(key, i);
  });
  const xs: number[] = [];
  const ys: number[] = [];
  primary.keys.forEach((key, i) => {
    const j = shadowAt.get(key);
    if (j === undefined) return;
    shadowAt.delete(key); // a key counts once
    xs.push(primary.scores[i]!);
    ys.push(shadow.scores[j]!);
  });
  let sum = 0;
  let max = 0;
  for (let i = 0; i < xs.length; i++) {
    const d = Math.abs(xs[i]! - ys[i]!);
    sum += d;
    if (d > max) max = d;
  }
  // τ compares orders, so a ranking ascending is compared on negated scores.
  const tx = sample(primary.descending ? xs : xs.map((v) => -v));
  const ty = sample(shadow.descending ? ys : ys.map((v) => -v));
  return {
    overlapAtK: overlapAtK(topK(primary, k), topK(shadow, k)),
    kendallTau: kendallTauB(tx, ty),
    meanAbsDiff: xs.length === 0 ? Number.NaN : sum / xs.length,
    maxAbsDiff: xs.length === 0 ? Number.NaN : max,
    shared: xs.length,
  };
}

/** The key of the whole execution's difference (parenthesised: no component name can clash). */
export const TOTAL = '(total)';

/**
 * Shadow minus primary duration, in ms, of each component both executions ran (by name), and of the
 * whole execution as {@link TOTAL}.
 */
export function latencyDiffs(
  primary: { totalMs: number; components: readonly ComponentTiming[] },
  shadow: { totalMs: number; components: readonly ComponentTiming[] },
): Record<string, number> {
  const diffs: Record<string, number> = {};
  const ran = new Map(primary.components.filter((c) => c.state === 'ran').map((c) => [c.name, c]));
  for (const c of shadow.components) {
    const p = ran.get(c.name);
    if (p !== undefined && c.state === 'ran') diffs[c.name] = c.durationMs - p.durationMs;
  }
  diffs[TOTAL] = shadow.totalMs - primary.totalMs;
  return diffs;
}
