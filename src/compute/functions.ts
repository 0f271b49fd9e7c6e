/**
 * Operator and function kernels: tight loops over typed arrays, no allocation. A kernel returns
 * `OK` or the first row at which its operation is undefined (division by zero, log of a
 * non-positive value, a non-0/1 operand of `&`/`|`); the caller turns that row into an error.
 * Kernels write each row only after checking it, so `out` may alias an input and, on failure, the
 * failing row's inputs are still intact for the message.
 *
 * Precision is the caller's choice of array type: a kernel computes each value in double and the
 * store into `out` rounds it (to fp32 when `out` is a Float32Array), once per operation.
 */

export type Vector = Float32Array | Float64Array;

export const BINARY_OPERATORS = [
  '+',
  '-',
  '*',
  '/',
  '^',
  'min',
  'max',
  '<',
  '<=',
  '>',
  '>=',
  '==',
  '&',
  '|',
] as const;
export type BinaryOperator = (typeof BINARY_OPERATORS)[number];

export const UNARY_FUNCTIONS = [
  'exp',
  'log',
  'abs',
  'sigmoid',
  'norm_min_max',
  'percentile_rank',
  'norm_percentile_0_99',
  'norm_percentile_5_95',
] as const;
export type UnaryFunction = (typeof UNARY_FUNCTIONS)[number];

/** Returned by a kernel that completed every row. */
export const OK = -1;

/** `x op s` over `n` rows. */
export function binaryVectorScalar(op: BinaryOperator, a: Vector, s: number, out: Vector, n: number): number {
  switch (op) {
    case '+':
      for (let i = 0; i < n; i++) out[i] = a[i]! + s;
      return OK;
    case '-':
      for (let i = 0; i < n; i++) out[i] = a[i]! - s;
      return OK;
    case '*':
      for (let i = 0; i < n; i++) out[i] = a[i]! * s;
      return OK;
    case '/':
      if (s === 0) return n > 0 ? 0 : OK;
      for (let i = 0; i < n; i++) out[i] = a[i]! / s;
      return OK;
    case '^':
      for (let i = 0; i < n; i++) out[i] = a[i]! ** s;
      return OK;
    case 'min':
      for (let i = 0; i < n; i++) out[i] = Math.min(a[i]!, s);
      return OK;
    case 'max':
      for (let i = 0; i < n; i++) out[i] = Math.max(a[i]!, s);
      return OK;
    case '<':
      for (let i = 0; i < n; i++) out[i] = a[i]! < s ? 1 : 0;
      return OK;
    case '<=':
      for (let i = 0; i < n; i++) out[i] = a[i]! <= s ? 1 : 0;
      return OK;
    case '>':
      for (let i = 0; i < n; i++) out[i] = a[i]! > s ? 1 : 0;
      return OK;
    case '>=':
      for (let i = 0; i < n; i++) out[i] = a[i]! >= s ? 1 : 0;
      return OK;
    case '==':
      for (let i = 0; i < n; i++) out[i] = a[i]! === s ? 1 : 0;
      return OK;
    case '&':
    case '|': {
      if (s !== 0 && s !== 1) return n > 0 ? 0 : OK;
      // With a boolean constant the result is either the (checked) vector or a constant.
      const absorbing = op === '&' ? 0 : 1;
      for (let i = 0; i < n; i++) {
        const x = a[i]!;
        if (x !== 0 && x !== 1) return i;
        out[i] = s === absorbing ? absorbing : x === 1 ? 1 : 0;
      }
      return OK;
    }
  }
}

/** `s op x` over `n` rows. */
export function binaryScalarVector(op: BinaryOperator, s: number, b: Vector, out: Vector, n: number): number {
  switch (op) {
    case '-':
      for (let i = 0; i < n; i++) out[i] = s - b[i]!;
      return OK;
    case '/':
      for (let i = 0; i < n; i++) {
        const d = b[i]!;
        if (d === 0) return i;
        out[i] = s / d;
      }
      return OK;
    case '^':
      for (let i = 0; i < n; i++) out[i] = s ** b[i]!;
      return OK;
    case '<':
      return binaryVectorScalar('>', b, s, out, n);
    case '<=':
      return binaryVectorScalar('>=', b, s, out, n);
    case '>':
      return binaryVectorScalar('<', b, s, out, n);
    case '>=':
      return binaryVectorScalar('<=', b, s, out, n);
    default:
      // The remaining operators are commutative; `&`/`|` report the same first bad row either way
      // because a bad constant fails at row 0.
      return binaryVectorScalar(op, b, s, out, n);
  }
}

/** `x op y` row by row over `n` rows. */
export function binaryVectorVector(op: BinaryOperator, a: Vector, b: Vector, out: Vector, n: number): number {
  switch (op) {
    case '+':
      for (let i = 0; i < n; i++) out[i] = a[i]! + b[i]!;
      return OK;
    case '-':
      for (let i = 0; i < n; i++) out[i] = a[i]! - b[i]!;
      return OK;
    case '*':
      for (let i = 0; i < n; i++) out[i] = a[i]! * b[i]!;
      return OK;
    case '/':
      for (let i = 0; i < n; i++) {
        const d = b[i]!;
        if (d === 0) return i;
        out[i] = a[i]! / d;
      }
      return OK;
    case '^':
      for (let i = 0; i < n; i++) out[i] = a[i]! ** b[i]!;
      return OK;
    case 'min':
      for (let i = 0; i < n; i++) out[i] = Math.min(a[i]!, b[i]!);
      return OK;
    case 'max':
      for (let i = 0; i < n; i++) out[i] = Math.max(a[i]!, b[i]!);
      return OK;
    case '<':
      for (let i = 0; i < n; i++) out[i] = a[i]! < b[i]! ? 1 : 0;
      return OK;
    case '<=':
      for (let i = 0; i < n; i++) out[i] = a[i]! <= b[i]! ? 1 : 0;
      return OK;
    case '>':
      for (let i = 0; i < n; i++) out[i] = a[i]! > b[i]! ? 1 : 0;
      return OK;
    case '>=':
      for (let i = 0; i < n; i++) out[i] = a[i]! >= b[i]! ? 1 : 0;
      return OK;
    case '==':
      for (let i = 0; i < n; i++) out[i] = a[i]! === b[i]! ? 1 : 0;
      return OK;
    case '&':
      for (let i = 0; i < n; i++) {
        const x = a[i]!;
        const y = b[i]!;
        if ((x !== 0 && x !== 1) || (y !== 0 && y !== 1)) return i;
        out[i] = x === 1 && y === 1 ? 1 : 0;
      }
      return OK;
    case '|':
      for (let i = 0; i < n; i++) {
        const x = a[i]!;
        const y = b[i]!;
        if ((x !== 0 && x !== 1) || (y !== 0 && y !== 1)) return i;
        out[i] = x === 1 || y === 1 ? 1 : 0;
      }
      return OK;
  }
}

/**
 * `fn(x)` over `n` rows. `sorted` is scratch of at least `n` elements for the ranking functions.
 * Column functions ignore NaN rows when computing their statistics and leave those rows NaN.
 */
export function unary(fn: UnaryFunction, a: Vector, out: Vector, n: number, sorted: Float64Array): number {
  switch (fn) {
    case 'exp':
      for (let i = 0; i < n; i++) out[i] = Math.exp(a[i]!);
      return OK;
    case 'log':
      for (let i = 0; i < n; i++) {
        const x = a[i]!;
        if (x <= 0) return i;
        out[i] = Math.log(x);
      }
      return OK;
    case 'abs':
      for (let i = 0; i < n; i++) out[i] = Math.abs(a[i]!);
      return OK;
    case 'sigmoid':
      for (let i = 0; i < n; i++) {
        // Two forms so that exp never overflows into Infinity/Infinity.
        const x = a[i]!;
        if (x >= 0) out[i] = 1 / (1 + Math.exp(-x));
        else {
          const e = Math.exp(x);
          out[i] = e / (1 + e);
        }
      }
      return OK;
    case 'norm_min_max': {
      let min = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < n; i++) {
        const x = a[i]!;
        if (x < min) min = x;
        if (x > max) max = x;
      }
      scaleClipped(a, out, n, min, max);
      return OK;
    }
    case 'percentile_rank':
      percentileRank(a, out, n, sorted);
      return OK;
    case 'norm_percentile_0_99':
      normPercentile(a, out, n, sorted, 0, 99);
      return OK;
    case 'norm_percentile_5_95':
      normPercentile(a, out, n, sorted, 5, 95);
      return OK;
  }
}

/**
 * `(clamp(x, lo, hi) − lo) / (hi − lo)`. When the range is empty (every value equal, a single
 * value, or no non-NaN value) every non-NaN row is 0: there is no spread to place it in.
 */
function scaleClipped(a: Vector, out: Vector, n: number, lo: number, hi: number): void {
  const range = hi - lo;
  if (!(range > 0)) {
    for (let i = 0; i < n; i++) out[i] = Number.isNaN(a[i]!) ? Number.NaN : 0;
    return;
  }
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    out[i] = (Math.min(Math.max(x, lo), hi) - lo) / range;
  }
}

/** Copies the non-NaN values of `a` into `sorted` in ascending order; returns how many. */
function sortValues(a: Vector, n: number, sorted: Float64Array): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    if (!Number.isNaN(x)) sorted[m++] = x;
  }
  // The view is the one allocation here; typed-array sort is numeric and much faster than a JS sort.
  sorted.subarray(0, m).sort();
  return m;
}

/**
 * Rank by value: `(less + (equal − 1) / 2) / (m − 1)`, where `less` and `equal` count the non-NaN
 * values below and equal to the row's value and `m` counts all non-NaN values. The smallest value
 * ranks 0, the largest 1, ties share their average position; a single value ranks 0.5 (the same as
 * a column of equal values).
 */
function percentileRank(a: Vector, out: Vector, n: number, sorted: Float64Array): void {
  const m = sortValues(a, n, sorted);
  const last = m - 1;
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    if (Number.isNaN(x)) {
      out[i] = Number.NaN;
      continue;
    }
    if (last === 0) {
      out[i] = 0.5;
      continue;
    }
    const less = lowerBound(sorted, m, x);
    const notGreater = upperBound(sorted, m, x);
    out[i] = (less + notGreater - 1) / (2 * last);
  }
}

/** Clips to the `lowPercent`–`highPercent` percentiles of the column and scales that span to [0, 1]. */
function normPercentile(
  a: Vector,
  out: Vector,
  n: number,
  sorted: Float64Array,
  lowPercent: number,
  highPercent: number,
): void {
  const m = sortValues(a, n, sorted);
  if (m === 0) {
    scaleClipped(a, out, n, 0, 0);
    return;
  }
  scaleClipped(a, out, n, percentile(sorted, m, lowPercent), percentile(sorted, m, highPercent));
}

/**
 * Linear interpolation between closest ranks (NumPy's default, Hyndman–Fan type 7): with the
 * values sorted as `s[0..m−1]`, `h = (m − 1) · p / 100` and the percentile is
 * `s[⌊h⌋] + (h − ⌊h⌋) · (s[⌊h⌋ + 1] − s[⌊h⌋])`. The 0th percentile is the minimum.
 */
export function percentile(sorted: Float64Array, m: number, p: number): number {
  const h = ((m - 1) * p) / 100;
  const k = Math.floor(h);
  const low = sorted[k]!;
  const fraction = h - k;
  // Exact ranks need no neighbour (and must not multiply 0 by an infinite difference).
  if (fraction === 0) return low;
  return low + fraction * (sorted[k + 1]! - low);
}

/** First index in `sorted[0..m)` whose value is not below `x`. */
function lowerBound(sorted: Float64Array, m: number, x: number): number {
  let lo = 0;
  let hi = m;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in `sorted[0..m)` whose value is above `x`. */
function upperBound(sorted: Float64Array, m: number, x: number): number {
  let lo = 0;
  let hi = m;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
