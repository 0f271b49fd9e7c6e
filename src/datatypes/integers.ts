import { DataType } from './data-type.js';

/** The range of an integer element type (INT8…UINT64), as bigints; undefined for other types. */
export function integerRange(scalar: DataType): { min: bigint; max: bigint } | undefined {
  return RANGES.get(scalar);
}

const RANGES = new Map<DataType, { min: bigint; max: bigint }>([
  [DataType.INT8, { min: -(2n ** 7n), max: 2n ** 7n - 1n }],
  [DataType.INT16, { min: -(2n ** 15n), max: 2n ** 15n - 1n }],
  [DataType.INT32, { min: -(2n ** 31n), max: 2n ** 31n - 1n }],
  [DataType.INT64, { min: -(2n ** 63n), max: 2n ** 63n - 1n }],
  [DataType.UINT8, { min: 0n, max: 2n ** 8n - 1n }],
  [DataType.UINT16, { min: 0n, max: 2n ** 16n - 1n }],
  [DataType.UINT32, { min: 0n, max: 2n ** 32n - 1n }],
  [DataType.UINT64, { min: 0n, max: 2n ** 64n - 1n }],
]);

export const clampBigInt = (value: bigint, min: bigint, max: bigint): bigint =>
  value < min ? min : value > max ? max : value;

const TWO_53 = 2n ** 53n;

/**
 * A double near `value` for rounding on into a narrower float (FP32, FP16, FP8): exact below 2^53,
 * otherwise the top 53 bits rounded to odd (the lowest kept bit set when any dropped bit is). A
 * second round-to-nearest-even from a round-to-odd value with at least two spare bits equals one
 * direct rounding, which `Number(value)` followed by a narrower rounding would not.
 */
export function roundToOddDouble(value: bigint): number {
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  if (magnitude < TWO_53) return Number(value);
  const shift = BigInt(magnitude.toString(2).length - 53);
  let kept = magnitude >> shift;
  if (kept << shift !== magnitude) kept |= 1n;
  // Both factors are exact doubles (a power of two beyond 2^1023 is Infinity, the right overflow).
  const result = Number(kept) * Number(1n << shift);
  return negative ? -result : result;
}
