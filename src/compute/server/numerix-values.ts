/**
 * Numerix values on the wire: decimal text or little-endian fp32/fp64 bytes. Text is read strictly
 * (no blanks, hex or empty strings, which `Number()` would turn into numbers) and written as the
 * shortest text that reads back to the same value in the request's precision.
 */
import type { Precision } from '../index.js';

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
/** What Rust's float parser (the original server) accepts besides decimals. */
const SPECIAL = /^([+-]?)(?:inf|infinity|nan)$/i;

/** The number `text` spells, or undefined when it is not a decimal, `inf`/`infinity` or `nan`. */
export function parseDecimal(text: string): number | undefined {
  if (DECIMAL.test(text)) return Number(text);
  const special = SPECIAL.exec(text);
  if (special === null) return undefined;
  if (/nan$/i.test(text)) return Number.NaN;
  return special[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
}

/** Bytes in one value of `precision`. */
export function valueBytes(precision: Precision): 4 | 8 {
  return precision === 'fp32' ? 4 : 8;
}

/**
 * The shortest text that reads back to `value` in `precision` (`value` must already be an fp32 value
 * for fp32). Non-finite values are `NaN`, `Infinity`, `-Infinity`, which Go, Rust, Python and JS all read.
 */
export function formatScore(value: number, precision: Precision): string {
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  if (precision === 'fp64' || !Number.isFinite(value)) return String(value);
  // JS prints doubles shortest-first; for fp32 search the fewest significant digits that read back
  // (9 always do). Binary search: if p digits read back, so do p + 1, except at rare power-of-two
  // boundaries, where the answer may be a digit longer than needed but still reads back.
  let low = 1;
  let high = 9;
  while (low < high) {
    const digits = (low + high) >>> 1;
    if (Math.fround(Number(value.toPrecision(digits))) === value) high = digits;
    else low = digits + 1;
  }
  return String(Number(value.toPrecision(high)));
}

/** One buffer holding `scores` as little-endian values, cut into one slice per row. */
export function encodeScores(scores: Float32Array | Float64Array): Buffer[] {
  const size = scores instanceof Float32Array ? 4 : 8;
  const bytes = Buffer.allocUnsafe(scores.length * size);
  const slices = new Array<Buffer>(scores.length);
  for (let row = 0; row < scores.length; row++) {
    const offset = row * size;
    if (size === 4) bytes.writeFloatLE(scores[row]!, offset);
    else bytes.writeDoubleLE(scores[row]!, offset);
    slices[row] = bytes.subarray(offset, offset + size);
  }
  return slices;
}
