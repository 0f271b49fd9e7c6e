/**
 * Decimal text to numbers, rounded once. `Number(text)` rounds the decimal to a double; rounding
 * that double again into FP32, FP16 or FP8 is wrong in one case: when the double lands exactly on
 * a midpoint of the narrower format while the decimal was not (more than 17 significant digits).
 * {@link decimalFor} detects that case and settles it by an exact comparison.
 */

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const INFINITY = /^[+-]?inf(?:inity)?$/i;
const NAN = /^[+-]?nan$/i;

/**
 * The number a decimal text means (`12`, `-0.5`, `1e-7`, `.5`, `inf`, `-Infinity`, `NaN`,
 * case-insensitive names), or undefined when it is not one. Hex, underscores, and empty text are not.
 */
export function parseDecimal(text: string): number | undefined {
  if (DECIMAL.test(text)) return Number(text);
  if (INFINITY.test(text)) return text.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (NAN.test(text)) return Number.NaN;
  return undefined;
}

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** The adjacent double toward +∞ (`up`) or −∞; for finite non-zero `x`. */
function nextDouble(x: number, up: boolean): number {
  f64[0] = x;
  // Away from zero when the direction matches the sign, else toward zero.
  u64[0] = up === x > 0 ? u64[0]! + 1n : u64[0]! - 1n;
  return f64[0]!;
}

/**
 * A double whose rounding by `roundTo` (into some narrower format, giving the rounded value) is the
 * correctly rounded value of the decimal `text`, where `value` = parseDecimal(text).
 * `overflowMidpoint` is the format's boundary between its largest finite value and overflow.
 */
export function decimalFor(
  text: string,
  value: number,
  roundTo: (x: number) => number,
  overflowMidpoint: number,
): number {
  if (value === 0 || !Number.isFinite(value) || !DECIMAL.test(text)) return value;
  const below = roundTo(nextDouble(value, false));
  const above = roundTo(nextDouble(value, true));
  const midpoint = Math.abs(value) === overflowMidpoint || (below !== above && (below + above) / 2 === value);
  if (!midpoint) return value;
  const order = compareDecimal(text, value);
  return order === 0 ? value : nextDouble(value, order > 0);
}

/** Significant digits beyond any double's exact expansion (at most 767) only act as a sticky bit. */
const MAX_DIGITS = 800;

/** Sign of (decimal `text` − `value`), computed exactly; `text` matches DECIMAL, `value` finite. */
function compareDecimal(text: string, value: number): number {
  const negative = text.startsWith('-');
  const body = text.replace(/^[+-]/, '');
  const [mantissa = '', exponentText = '0'] = body.split(/[eE]/);
  const [whole = '', fraction = ''] = mantissa.split('.');
  let digits = (whole + fraction).replace(/^0+/, '');
  let exponent10 = Number(exponentText) - fraction.length;
  let sticky = false;
  if (digits.length > MAX_DIGITS) {
    sticky = /[1-9]/.test(digits.slice(MAX_DIGITS));
    exponent10 += digits.length - MAX_DIGITS;
    digits = digits.slice(0, MAX_DIGITS);
  }
  // |value| = significand × 2^exponent2, from its bits.
  f64[0] = Math.abs(value);
  const bits = u64[0]!;
  const field = Number(bits >> 52n);
  const fractionBits = bits & ((1n << 52n) - 1n);
  const significand = field === 0 ? fractionBits : fractionBits | (1n << 52n);
  const exponent2 = (field === 0 ? 1 : field) - 1075;
  let left = BigInt(digits || '0');
  let right = significand;
  if (exponent10 >= 0) left *= 10n ** BigInt(exponent10);
  else right *= 10n ** BigInt(-exponent10);
  if (exponent2 >= 0) right <<= BigInt(exponent2);
  else left <<= BigInt(-exponent2);
  let order = left > right ? 1 : left < right ? -1 : sticky ? 1 : 0;
  if (negative) order = -order;
  return order;
}
