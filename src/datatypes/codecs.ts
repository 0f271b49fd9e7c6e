import { invalidArgument, type LatticeError } from '../platform/errors.js';
import { DataType, type DataTypeInfo, dataTypeInfo, fixedWidth } from './data-type.js';
import { readNumberAt, writeNumberAt } from './element.js';
import { integerRange, roundToOddDouble } from './integers.js';
import { readNumbers } from './number-runs.js';

/**
 * Value bytes of every data type, to and from JS values. The layout (design, "Value bytes"):
 * little-endian; numeric vectors are their elements back to back; a scalar BOOL is one byte 0/1;
 * BOOL_VECTOR is bit-packed, least significant bit first, ceil(n/8) bytes; STRING is UTF-8;
 * STRING_VECTOR is each element as a 4-byte little-endian length and then its bytes.
 *
 * JS values: FP*, INT8–INT32 and UINT8–UINT32 are numbers; INT64/UINT64 bigints; BOOL booleans;
 * STRING strings. Decoded vectors are fresh typed arrays (Float32Array for FP8/FP16/FP32, whose values
 * float32 holds exactly; Float64Array; Int8Array … BigUint64Array), boolean[] and string[].
 */
export type ScalarValue = number | bigint | boolean | string;

export type EncodableValue =
  | ScalarValue
  | readonly ScalarValue[]
  | ArrayLike<number>
  | ArrayLike<bigint>
  | ArrayLike<boolean>
  | ArrayLike<string>;

export type DecodedValue =
  | ScalarValue
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | boolean[]
  | string[];

const utf8Encoder = new TextEncoder();
// Invalid UTF-8 decodes with U+FFFD rather than failing: a stored feature value is still shown.
const utf8Decoder = new TextDecoder('utf-8');

const readUint32LE = (bytes: Uint8Array, offset: number): number =>
  (bytes[offset]! | (bytes[offset + 1]! << 8) | (bytes[offset + 2]! << 16)) + bytes[offset + 3]! * 0x1000000;

/**
 * Checks that `bytes` is a well-formed value of `type` with `vectorDim` and returns its number of
 * elements (1 for a scalar). Scalars take exactly their width (STRING any length); a vector takes
 * `vectorDim` elements (BOOL_VECTOR ceil(vectorDim/8) bytes; STRING_VECTOR well-formed length
 * prefixes covering the bytes exactly, `vectorDim` of them); `vectorDim` 0 on a vector type accepts
 * any whole number of elements (a BOOL_VECTOR then counts 8 per byte, its length not being
 * recoverable). `vectorDim` is ignored for scalar types. Otherwise INVALID_ARGUMENT naming `field`.
 */
export function checkValueLength(
  type: DataType,
  vectorDim: number,
  bytes: Uint8Array,
  field: string,
): number {
  const info = dataTypeInfo(type);
  if (!Number.isInteger(vectorDim) || vectorDim < 0) {
    throw invalidArgument(`${field}: vector dimension must be a whole number ≥ 0, got ${vectorDim}`, field);
  }
  const length = bytes.length;
  if (!info.isVector) {
    if (info.kind !== 'string' && length !== info.elementBytes) {
      throw wrongLength(field, `a ${info.name} value takes ${plural(info.elementBytes, 'byte')}`, length);
    }
    return 1;
  }
  if (type === DataType.STRING_VECTOR) return countStrings(bytes, vectorDim, field);
  if (vectorDim > 0) {
    const width = fixedWidth(type, vectorDim)!;
    if (length !== width) {
      throw wrongLength(
        field,
        `a ${info.name} of dimension ${vectorDim} takes ${plural(width, 'byte')}`,
        length,
      );
    }
    return vectorDim;
  }
  if (type === DataType.BOOL_VECTOR) return length * 8;
  if (length % info.elementBytes !== 0) {
    throw wrongLength(
      field,
      `a ${info.name} takes a multiple of ${plural(info.elementBytes, 'byte')}`,
      length,
    );
  }
  return length / info.elementBytes;
}

function countStrings(bytes: Uint8Array, vectorDim: number, field: string): number {
  let offset = 0;
  let count = 0;
  while (offset < bytes.length) {
    if (bytes.length - offset < 4) {
      throw invalidArgument(`${field}: STRING_VECTOR element ${count} has a cut-off length prefix`, field);
    }
    const length = readUint32LE(bytes, offset);
    offset += 4;
    if (length > bytes.length - offset) {
      throw invalidArgument(
        `${field}: STRING_VECTOR element ${count} declares ${plural(length, 'byte')} but ${bytes.length - offset} remain`,
        field,
      );
    }
    offset += length;
    count++;
  }
  if (vectorDim > 0 && count !== vectorDim) {
    throw invalidArgument(
      `${field}: a STRING_VECTOR of dimension ${vectorDim} holds ${count} elements`,
      field,
    );
  }
  return count;
}

const plural = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? '' : 's'}`;

function wrongLength(field: string, expected: string, got: number): LatticeError {
  return invalidArgument(`${field}: ${expected}, got ${plural(got, 'byte')}`, field);
}

/** The type's zero value: all-zero bytes (0, false, ""; a STRING_VECTOR of `vectorDim` empty strings). */
export function defaultValue(type: DataType, vectorDim: number): Uint8Array {
  if (type === DataType.STRING_VECTOR) return new Uint8Array(4 * vectorDim);
  return new Uint8Array(fixedWidth(type, vectorDim) ?? 0);
}

/**
 * The bytes of a JS value. Integer types take integral numbers or bigints within range; float types
 * numbers or bigints (rounded to nearest even); BOOL booleans or 0/1; STRING strings; vector types
 * arrays of those, with `vectorDim` elements when it is > 0. INVALID_ARGUMENT naming `field` (and the
 * element index) otherwise; never a silent zero.
 */
export function encodeValue(
  type: DataType,
  value: EncodableValue,
  vectorDim = 0,
  field = 'value',
): Uint8Array {
  const info = dataTypeInfo(type);
  if (!info.isVector) {
    if (info.kind === 'string') {
      if (typeof value !== 'string') throw wrongValue(field, info, value);
      return utf8Encoder.encode(value);
    }
    const out = new Uint8Array(info.elementBytes);
    writeElement(new DataView(out.buffer), 0, info, value, field);
    return out;
  }
  if (typeof value !== 'object') throw wrongValue(field, info, value);
  const n = value.length;
  if (vectorDim > 0 && n !== vectorDim) {
    throw invalidArgument(
      `${field}: a ${info.name} of dimension ${vectorDim} needs ${vectorDim} elements, got ${n}`,
      field,
    );
  }
  const element = dataTypeInfo(info.scalar);
  if (type === DataType.STRING_VECTOR) {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (let i = 0; i < n; i++) {
      const item = value[i];
      if (typeof item !== 'string') throw wrongValue(`${field}[${i}]`, element, item);
      const part = utf8Encoder.encode(item);
      parts.push(part);
      total += 4 + part.length;
    }
    return joinStrings(parts, total);
  }
  if (type === DataType.BOOL_VECTOR) {
    const out = new Uint8Array(Math.ceil(n / 8));
    for (let i = 0; i < n; i++) if (boolElement(value[i], `${field}[${i}]`)) out[i >>> 3]! |= 1 << (i & 7);
    return out;
  }
  const size = element.elementBytes;
  const out = new Uint8Array(n * size);
  const view = new DataView(out.buffer);
  for (let i = 0; i < n; i++) writeElement(view, i * size, element, value[i], `${field}[${i}]`);
  return out;
}

/** Encodes already-encoded UTF-8 strings as a STRING_VECTOR value (`total` = 4 × count + their bytes). */
export function joinStrings(parts: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const part of parts) {
    view.setUint32(offset, part.length, true);
    out.set(part, offset + 4);
    offset += 4 + part.length;
  }
  return out;
}

function writeElement(
  view: DataView,
  offset: number,
  info: DataTypeInfo,
  value: unknown,
  field: string,
): void {
  const scalar = info.scalar;
  if (info.kind === 'bool') {
    view.setUint8(offset, boolElement(value, field) ? 1 : 0);
    return;
  }
  if (info.kind === 'float') {
    if (typeof value === 'number') {
      writeNumberAt(view, offset, scalar, value);
      return;
    }
    if (typeof value === 'bigint') {
      const x = scalar === DataType.FP64 ? Number(value) : roundToOddDouble(value);
      writeNumberAt(view, offset, scalar, x);
      return;
    }
    throw wrongValue(field, info, value);
  }
  // Integers: exact, in range, or an error (no truncation of 2.5, no saturation of 300 into UINT8).
  const range = integerRange(scalar)!;
  let integer: bigint;
  if (typeof value === 'bigint') integer = value;
  else if (typeof value === 'number' && Number.isInteger(value)) integer = BigInt(value);
  else throw wrongValue(field, info, value);
  if (integer < range.min || integer > range.max) throw wrongValue(field, info, value);
  if (scalar === DataType.INT64) {
    view.setBigInt64(offset, integer, true);
    return;
  }
  if (scalar === DataType.UINT64) {
    view.setBigUint64(offset, integer, true);
    return;
  }
  writeNumberAt(view, offset, scalar, Number(integer));
}

function boolElement(value: unknown, field: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  throw invalidArgument(`${field}: expected a boolean (or 0/1), got ${describe(value)}`, field);
}

function wrongValue(field: string, info: DataTypeInfo, value: unknown): LatticeError {
  const range = integerRange(info.scalar);
  const expected = info.isVector
    ? `an array for ${info.name}`
    : range
      ? `an integer in [${range.min}, ${range.max}] for ${info.name}`
      : `a ${info.kind === 'string' ? 'string' : 'number'} for ${info.name}`;
  return invalidArgument(`${field}: expected ${expected}, got ${describe(value)}`, field);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}

/**
 * The JS value of `bytes` (see the top of this file for the types), after {@link checkValueLength}.
 * A BOOL byte other than 0 reads as true.
 */
export function decodeValue(type: DataType, bytes: Uint8Array, vectorDim = 0, field = 'value'): DecodedValue {
  const info = dataTypeInfo(type);
  const count = checkValueLength(type, vectorDim, bytes, field);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (type) {
    case DataType.STRING:
      return utf8Decoder.decode(bytes);
    case DataType.BOOL:
      return bytes[0] !== 0;
    case DataType.INT64:
      return view.getBigInt64(0, true);
    case DataType.UINT64:
      return view.getBigUint64(0, true);
    case DataType.STRING_VECTOR:
      return splitStrings(bytes, count);
    case DataType.BOOL_VECTOR:
      return Array.from({ length: count }, (_, i) => ((bytes[i >>> 3]! >>> (i & 7)) & 1) === 1);
    case DataType.FP8E5M2_VECTOR:
    case DataType.FP8E4M3_VECTOR:
    case DataType.FP16_VECTOR:
    case DataType.FP32_VECTOR: {
      const out = new Float32Array(count);
      readNumbers(type, bytes, count, out);
      return out;
    }
    case DataType.FP64_VECTOR: {
      const out = new Float64Array(count);
      readNumbers(type, bytes, count, out);
      return out;
    }
    case DataType.INT64_VECTOR:
      return BigInt64Array.from({ length: count }, (_, i) => view.getBigInt64(i * 8, true));
    case DataType.UINT64_VECTOR:
      return BigUint64Array.from({ length: count }, (_, i) => view.getBigUint64(i * 8, true));
    case DataType.INT8_VECTOR:
      return Int8Array.from({ length: count }, (_, i) => view.getInt8(i));
    case DataType.INT16_VECTOR:
      return Int16Array.from({ length: count }, (_, i) => view.getInt16(i * 2, true));
    case DataType.INT32_VECTOR:
      return Int32Array.from({ length: count }, (_, i) => view.getInt32(i * 4, true));
    case DataType.UINT8_VECTOR:
      return bytes.slice();
    case DataType.UINT16_VECTOR:
      return Uint16Array.from({ length: count }, (_, i) => view.getUint16(i * 2, true));
    case DataType.UINT32_VECTOR:
      return Uint32Array.from({ length: count }, (_, i) => view.getUint32(i * 4, true));
    default:
      return readNumberAt(view, 0, info.scalar);
  }
}

/** The UTF-8 elements of a STRING_VECTOR value already checked by {@link checkValueLength}. */
export function splitStrings(bytes: Uint8Array, count: number): string[] {
  const out = new Array<string>(count);
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const length = readUint32LE(bytes, offset);
    out[i] = utf8Decoder.decode(bytes.subarray(offset + 4, offset + 4 + length));
    offset += 4 + length;
  }
  return out;
}
