export { seededRandom } from '../../src/platform/random.js';

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

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const nextFloat32 = (x: number, step: number) => {
  f32[0] = x;
  u32[0] = u32[0]! + step;
  return f32[0]!;
};

/** The float32 nearest to an integer, ties to even, by exact comparison of candidates (test reference). */
export function nearestFloat32(b: bigint): number {
  const guess = Math.fround(Number(b));
  if (!Number.isFinite(guess)) return guess;
  const candidates = [nextFloat32(guess, -1), guess, nextFloat32(guess, 1)].filter(Number.isFinite);
  let best = candidates[0]!;
  for (const c of candidates.slice(1)) {
    const d = BigInt(c) - b;
    const e = BigInt(best) - b;
    const dist = d < 0n ? -d : d;
    const bestDist = e < 0n ? -e : e;
    f32[0] = c;
    if (dist < bestDist || (dist === bestDist && (u32[0]! & 1) === 0)) best = c;
  }
  return best;
}

const TWO_64 = 2n ** 64n;
/** Values near the edges where a double stops holding 64-bit integers exactly, and the ranges' ends. */
const EDGES = [
  0n,
  1n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 53n + 3n,
  2n ** 62n + 1n,
  2n ** 63n - 1n,
];

/**
 * `count` random INT64 (`signed`) or UINT64 values: a quarter near ±2^53 and the ranges' ends (where
 * doubles round), the rest uniform over all 64 bits (so most need more than 53 bits).
 */
export function random64(random: () => number, count: number, signed: boolean): bigint[] {
  const word = () => BigInt(Math.floor(random() * 4294967296));
  return Array.from({ length: count }, () => {
    let value: bigint;
    if (random() < 0.25) {
      const edge = EDGES[Math.floor(random() * EDGES.length)]! + BigInt(Math.floor(random() * 5)) - 2n;
      value = signed && random() < 0.5 ? -edge : edge;
    } else {
      value = (word() << 32n) | word();
    }
    // Wrap into the type's range.
    value = ((value % TWO_64) + TWO_64) % TWO_64;
    return signed ? BigInt.asIntN(64, value) : value;
  });
}
