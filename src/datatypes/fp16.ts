import { decodeMinifloat, type MinifloatFormat, minifloatEncoder } from './minifloat.js';

/**
 * IEEE 754 binary16 ("half"): bias 15, 10 mantissa bits, ±∞ at 0x7C00/0xFC00, NaN above; the largest
 * finite value 0x7BFF = 65504, the smallest subnormal 0x0001 = 2^-24. Node 20 has no Math.f16round
 * or Float16Array, hence this codec.
 *
 * Encoding rounds the double to nearest, ties to even, in one step (subnormals included, −0 kept);
 * overflow (65520 and above after rounding: the midpoint 65520 rounds to the even 2^16) is ±∞; NaN
 * encodes as 0x7E00.
 */
export const FP16: MinifloatFormat = {
  name: 'FP16',
  mantissaBits: 10,
  bias: 15,
  signMask: 0x8000,
  maxFiniteCode: 0x7bff,
  infinityCode: 0x7c00,
  nanCode: 0x7e00,
};

export const FP16_MAX = 65504;

const encode = minifloatEncoder(FP16);

/** The half-precision code nearest to `x` (ties to even; overflow ±∞). */
export const encodeFp16 = (x: number): number => encode(x);

/** 2^(e−25) for each exponent field e: a normal code's value is (1024 + mantissa) × SCALE[e]. */
const SCALE = new Float64Array(32);
SCALE[0] = 1 / 33554432; // 2^-25
for (let e = 1; e < 32; e++) SCALE[e] = SCALE[e - 1]! * 2;

/** The value of a half-precision code. */
export function decodeFp16(code: number): number {
  const exponent = (code >>> 10) & 0x1f;
  const mantissa = code & 0x3ff;
  const sign = code & 0x8000 ? -1 : 1;
  // The common cases inline (this runs per element on tensor paths); the rest as the generic decoder.
  if (exponent === 0) return sign * mantissa * SCALE[1]!;
  if (exponent === 0x1f) return decodeMinifloat(code, FP16);
  return sign * (mantissa + 1024) * SCALE[exponent]!;
}

let table: Float32Array | undefined;

/** The value of every code, indexed by code (256 KiB, built on first use, for bulk decoding). */
export function fp16Values(): Float32Array {
  if (table === undefined) {
    table = new Float32Array(65536);
    for (let code = 0; code < 65536; code++) table[code] = decodeFp16(code);
  }
  return table;
}

/** `x` rounded to the nearest half-precision value (the value, not the code). */
export const roundToFp16 = (x: number): number => decodeFp16(encodeFp16(x));
