/** A seeded generator (mulberry32) so that failures reproduce; values in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Doubles spread over many binades (both signs), for round-trip and reference comparisons. */
export function randomDoubles(
  random: () => number,
  count: number,
  minExponent: number,
  maxExponent: number,
): number[] {
  return Array.from({ length: count }, () => {
    const exponent = Math.floor(minExponent + random() * (maxExponent - minExponent + 1));
    const sign = random() < 0.5 ? -1 : 1;
    return sign * (1 + random()) * 2 ** exponent;
  });
}

/**
 * Reference round-to-nearest-even onto `points`: the non-negative finite values of a format with
 * their codes, ascending, followed by the value one step past the largest (whose code is the next
 * one). Returns the nearest point's code, ties to the even code, or 'overflow' when that is the
 * point past the largest.
 */
export function nearestCode(
  magnitude: number,
  points: readonly { value: number; code: number }[],
): number | 'overflow' {
  const last = points.length - 1;
  if (magnitude >= points[last]!.value) return 'overflow';
  let lo = 0;
  let hi = last;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (points[mid]!.value <= magnitude) lo = mid;
    else hi = mid;
  }
  const below = points[lo]!;
  const above = points[hi]!;
  const down = magnitude - below.value;
  const up = above.value - magnitude;
  const pick = down < up ? lo : down > up ? hi : below.code % 2 === 0 ? lo : hi;
  return pick === last ? 'overflow' : points[pick]!.code;
}
