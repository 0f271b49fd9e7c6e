import { invalidArgument, type LatticeError } from '../platform/errors.js';
import { DataType, dataTypeInfo } from './data-type.js';
import { encodeFp8E4M3, encodeFp8E5M2, FP8E4M3_VALUES, FP8E5M2_VALUES } from './fp8.js';
import { decodeFp16, encodeFp16 } from './fp16.js';

/**
 * One numeric element at a byte offset, as a double (columns.ts reads and writes whole runs with the
 * same results). The conversion rules from a double into each numeric type live here:
 *
 * - FP64: as is. FP32: IEEE round to nearest even (overflow ±∞). FP16, FP8: see fp16.ts / fp8.ts;
 *   `saturate` selects the OCP saturating overflow mode for FP8 targets only.
 * - Integer types: truncation toward zero, then saturation to the type's range; NaN becomes 0 and
 *   ±∞ the range's ends. (Truncation is what Go and C conversions, and hence the original
 *   service, do; saturation replaces their undefined or wrapping out-of-range results.)
 * - BOOL: 1 for any value other than ±0 (NaN included, as in C and NumPy), else 0.
 * - Reading INT64/UINT64 as a double rounds to nearest even beyond 2^53, so nothing that must keep
 *   them exact goes through a double: convertNumbers (convert.ts) converts INT64 ↔ UINT64 word by
 *   word (saturating what does not fit) and copies same-type runs as bytes; codecs.ts uses bigints.
 */

// Enum members as module constants: the per-element switches below then compare plain integers
// (members of an enum imported from another module are read through a getter under the TS loader).
const { FP8E5M2, FP8E4M3, FP16, FP32, FP64, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, BOOL } =
  DataType;

const TWO_32 = 4294967296;
const TWO_63 = Number(2n ** 63n);
const TWO_64 = Number(2n ** 64n);

/** Truncates toward zero and clamps to [min, max]; NaN is 0. */
export function saturateToInteger(x: number, min: number, max: number): number {
  if (Number.isNaN(x)) return 0;
  const t = Math.trunc(x);
  return t < min ? min : t > max ? max : t + 0; // + 0 turns −0 into 0
}

/** One element of `scalar` (an element type) at `offset`, as a double. */
export function readNumberAt(view: DataView, offset: number, scalar: DataType): number {
  switch (scalar) {
    case FP8E5M2:
      return FP8E5M2_VALUES[view.getUint8(offset)]!;
    case FP8E4M3:
      return FP8E4M3_VALUES[view.getUint8(offset)]!;
    case FP16:
      return decodeFp16(view.getUint16(offset, true));
    case FP32:
      return view.getFloat32(offset, true);
    case FP64:
      return view.getFloat64(offset, true);
    case INT8:
      return view.getInt8(offset);
    case INT16:
      return view.getInt16(offset, true);
    case INT32:
      return view.getInt32(offset, true);
    case INT64:
      return view.getInt32(offset + 4, true) * TWO_32 + view.getUint32(offset, true);
    case UINT8:
      return view.getUint8(offset);
    case UINT16:
      return view.getUint16(offset, true);
    case UINT32:
      return view.getUint32(offset, true);
    case UINT64:
      return view.getUint32(offset + 4, true) * TWO_32 + view.getUint32(offset, true);
    case BOOL:
      return view.getUint8(offset) === 0 ? 0 : 1;
    default:
      throw notNumeric(scalar);
  }
}

/** Writes `x` as one element of `scalar` at `offset`, by the rules above. */
export function writeNumberAt(
  view: DataView,
  offset: number,
  scalar: DataType,
  x: number,
  saturate = false,
): void {
  switch (scalar) {
    case FP8E5M2:
      view.setUint8(offset, encodeFp8E5M2(x, saturate));
      return;
    case FP8E4M3:
      view.setUint8(offset, encodeFp8E4M3(x, saturate));
      return;
    case FP16:
      view.setUint16(offset, encodeFp16(x), true);
      return;
    case FP32:
      view.setFloat32(offset, x, true);
      return;
    case FP64:
      view.setFloat64(offset, x, true);
      return;
    case INT8:
      view.setInt8(offset, saturateToInteger(x, -128, 127));
      return;
    case INT16:
      view.setInt16(offset, saturateToInteger(x, -32768, 32767), true);
      return;
    case INT32:
      view.setInt32(offset, saturateToInteger(x, -2147483648, 2147483647), true);
      return;
    case INT64:
      writeInt64Words(view, offset, x);
      return;
    case UINT8:
      view.setUint8(offset, saturateToInteger(x, 0, 255));
      return;
    case UINT16:
      view.setUint16(offset, saturateToInteger(x, 0, 65535), true);
      return;
    case UINT32:
      view.setUint32(offset, saturateToInteger(x, 0, 4294967295), true);
      return;
    case UINT64:
      writeUint64Words(view, offset, x);
      return;
    case BOOL:
      view.setUint8(offset, x === 0 ? 0 : 1);
      return;
    default:
      throw notNumeric(scalar);
  }
}

// 64-bit integers from doubles as two 32-bit words: exact (an integral double splits exactly at
// 2^32) and free of per-element bigint allocation.
export function writeInt64Words(view: DataView, offset: number, x: number): void {
  const t = Number.isNaN(x) ? 0 : Math.trunc(x);
  if (t >= TWO_63) {
    view.setUint32(offset, 0xffffffff, true);
    view.setUint32(offset + 4, 0x7fffffff, true);
    return;
  }
  const v = t < -TWO_63 ? -TWO_63 : t;
  const high = Math.floor(v / TWO_32);
  view.setUint32(offset, v - high * TWO_32, true);
  view.setInt32(offset + 4, high, true);
}

export function writeUint64Words(view: DataView, offset: number, x: number): void {
  const t = Number.isNaN(x) || x <= 0 ? 0 : Math.trunc(x);
  if (t >= TWO_64) {
    view.setUint32(offset, 0xffffffff, true);
    view.setUint32(offset + 4, 0xffffffff, true);
    return;
  }
  const high = Math.floor(t / TWO_32);
  view.setUint32(offset, t - high * TWO_32, true);
  view.setUint32(offset + 4, high, true);
}

export function notNumeric(type: DataType): LatticeError {
  return invalidArgument(`${dataTypeInfo(type).name} is not a numeric type`);
}
