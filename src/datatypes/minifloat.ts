/**
 * Binary floating-point formats narrower than float32 (FP16, FP8 E4M3, FP8 E5M2), described by
 * their fields, with one encoder and one decoder for all of them. fp16.ts and fp8.ts give the
 * formats names; the rounding rules live here once.
 *
 * Encoding rounds the exact double to nearest, ties to even, in one step (never through float32,
 * which would round twice), subnormals included; −0 keeps its sign. A result whose magnitude after
 * rounding exceeds the format's largest finite value is an overflow; see {@link minifloatEncoder}.
 */
export interface MinifloatFormat {
  readonly name: string;
  readonly mantissaBits: number;
  readonly bias: number;
  /** The sign bit's mask (0x80 for FP8, 0x8000 for FP16). */
  readonly signMask: number;
  /** The largest finite magnitude's code (0x7E for E4M3 FN, 0x7B for E5M2, 0x7BFF for FP16). */
  readonly maxFiniteCode: number;
  /** The code of +∞, or undefined for a format without infinities (E4M3 FN). */
  readonly infinityCode: number | undefined;
  /** The NaN this library writes (positive; the sign of a JS NaN is not observable). */
  readonly nanCode: number;
}

/** 2^n for integer n in [-64, 64], each exact (built by doubling and halving, not Math.pow). */
const POW2 = new Float64Array(129);
POW2[64] = 1;
for (let n = 1; n <= 64; n++) {
  POW2[64 + n] = POW2[63 + n]! * 2;
  POW2[64 - n] = POW2[65 - n]! / 2;
}
const pow2 = (n: number): number => POW2[64 + n]!;

const TWO_52 = 4503599627370496;

/**
 * Rounds a number in [0, 2^52) to an integer, ties to even: adding 2^52 leaves no fraction bits,
 * so the double addition itself rounds (IEEE default, to nearest even), and subtracting is exact.
 */
export const roundHalfEven = (x: number): number => x + TWO_52 - TWO_52;

/** The value of a code: the format's sign/exponent/mantissa with its bias; NaN and ±∞ as JS values. */
export function decodeMinifloat(code: number, format: MinifloatFormat): number {
  const magnitude = code & (format.signMask - 1);
  const sign = code & format.signMask ? -1 : 1;
  if (magnitude > format.maxFiniteCode) {
    return magnitude === format.infinityCode ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  }
  const mb = format.mantissaBits;
  const exponent = magnitude >>> mb;
  const mantissa = magnitude & ((1 << mb) - 1);
  // Subnormals have the smallest normal's exponent and no implicit leading 1.
  if (exponent === 0) return sign * mantissa * pow2(1 - format.bias - mb);
  return sign * (mantissa + (1 << mb)) * pow2(exponent - format.bias - mb);
}

// The exponent of a normal double, from its high word (byte order of the host).
const f64 = new Float64Array(1);
const words = new Uint32Array(f64.buffer);
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** Encodes doubles into one format; see {@link minifloatEncoder}. */
export type MinifloatEncoder = (x: number, saturate?: boolean) => number;

/**
 * An encoder for `format`: the code nearest to `x` (ties to even). NaN gives the format's NaN.
 * Overflow (a magnitude that rounds above the largest finite value, and ±∞) gives, when `saturate`
 * is false, ±∞ where the format has infinities and otherwise NaN with the input's sign (E4M3 FN:
 * 0x7F/0xFF); when `saturate` is true, the largest finite value with the input's sign. These are the
 * non-saturating and saturating overflow modes of the OCP OFP8 specification's conversion rules.
 */
export function minifloatEncoder(format: MinifloatFormat): MinifloatEncoder {
  const { mantissaBits, bias, signMask, maxFiniteCode, nanCode } = format;
  const overflowCode = format.infinityCode ?? nanCode;
  const implicitBit = 1 << mantissaBits;
  const minNormal = pow2(1 - bias);
  const subnormalScale = pow2(bias - 1 + mantissaBits);
  // Any magnitude at or above 2^(emax+1) overflows whatever the rounding.
  const overflowFloor = pow2((maxFiniteCode >>> mantissaBits) - bias + 1);
  return (x, saturate = false) => {
    if (Number.isNaN(x)) return nanCode;
    let sign = 0;
    let a = x;
    if (x < 0 || (x === 0 && 1 / x < 0)) {
      sign = signMask;
      a = -x;
    }
    let magnitude: number;
    if (a < minNormal) {
      // Multiples of the smallest subnormal; rounding up to 2^mantissaBits lands exactly on the smallest normal's code.
      magnitude = roundHalfEven(a * subnormalScale);
    } else if (a >= overflowFloor) {
      magnitude = maxFiniteCode + 1;
    } else {
      f64[0] = a;
      const exponent = (words[HIGH]! >>> 20) - 1023;
      // The significand with its implicit bit, in [2^mb, 2^(mb+1)]; a carry to 2^(mb+1) moves into the exponent field.
      const significand = roundHalfEven(a * pow2(mantissaBits - exponent));
      magnitude = (exponent + bias - 1) * implicitBit + significand;
    }
    if (magnitude <= maxFiniteCode) return sign | magnitude;
    return sign | (saturate ? maxFiniteCode : overflowCode);
  };
}
