import {
  decodeMinifloat,
  type MinifloatEncoder,
  type MinifloatFormat,
  minifloatEncoder,
} from './minifloat.js';

/**
 * The two OCP 8-bit floating-point formats (OCP OFP8 specification, revision 1.0).
 *
 * E4M3 is the "FN" variant: bias 7, no infinities, NaN only at S.1111.111 (0x7F/0xFF), so
 * S.1111.000–110 are normal numbers and the largest is 0x7E = 1.75 × 2^8 = 448; the smallest
 * subnormal is 0x01 = 2^-9, the smallest normal 0x08 = 2^-6.
 *
 * E5M2 follows IEEE 754 conventions: bias 15, ±∞ at 0x7C/0xFC, NaN at 0x7D–0x7F/0xFD–0xFF, the
 * largest finite 0x7B = 1.75 × 2^15 = 57344, the smallest subnormal 0x01 = 2^-16.
 *
 * Encoding (from any double): round to nearest, ties to even, subnormals included, −0 kept.
 * Overflow means the magnitude after that rounding exceeds the largest finite value (E4M3:
 * above 464, the midpoint 464 itself rounds to the even 448; E5M2: 61440 and above, the midpoint
 * rounding to the even 2^16). The OCP specification defines two modes for converting into FP8:
 * - non-saturating (the default here, as the design asks): E4M3 overflow and ±∞ become NaN with the
 *   input's sign (0x7F/0xFF); E5M2 overflow becomes ±∞ (0x7C/0xFC) and ±∞ stays ±∞;
 * - saturating (`saturate = true`): overflow and ±∞ become the largest finite value with the input's
 *   sign (E4M3 0x7E/0xFE = ±448, E5M2 0x7B/0xFB = ±57344).
 * In both modes NaN encodes as 0x7F (E4M3) and 0x7E (E5M2, the quiet-NaN pattern).
 */
export const FP8E4M3: MinifloatFormat = {
  name: 'FP8E4M3',
  mantissaBits: 3,
  bias: 7,
  signMask: 0x80,
  maxFiniteCode: 0x7e,
  infinityCode: undefined,
  nanCode: 0x7f,
};

/** See {@link FP8E4M3} for both formats' rules. */
export const FP8E5M2: MinifloatFormat = {
  name: 'FP8E5M2',
  mantissaBits: 2,
  bias: 15,
  signMask: 0x80,
  maxFiniteCode: 0x7b,
  infinityCode: 0x7c,
  nanCode: 0x7e,
};

export const FP8E4M3_MAX = 448;
export const FP8E5M2_MAX = 57344;

function decodeTable(format: MinifloatFormat): Float32Array {
  const table = new Float32Array(256);
  for (let code = 0; code < 256; code++) table[code] = decodeMinifloat(code, format);
  return table;
}

/** The value of every E4M3 code, indexed by code (exact: every FP8 value is a float32). */
export const FP8E4M3_VALUES: Float32Array = decodeTable(FP8E4M3);
/** The value of every E5M2 code, indexed by code. */
export const FP8E5M2_VALUES: Float32Array = decodeTable(FP8E5M2);

export const decodeFp8E4M3 = (code: number): number => FP8E4M3_VALUES[code & 0xff]!;
export const decodeFp8E5M2 = (code: number): number => FP8E5M2_VALUES[code & 0xff]!;

/** The E4M3 code nearest to `x`; overflow is NaN unless `saturate` (then ±448). */
export const encodeFp8E4M3: MinifloatEncoder = minifloatEncoder(FP8E4M3);

/** The E5M2 code nearest to `x`; overflow is ±∞ unless `saturate` (then ±57344). */
export const encodeFp8E5M2: MinifloatEncoder = minifloatEncoder(FP8E5M2);
