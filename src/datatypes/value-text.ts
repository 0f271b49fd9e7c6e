import { invalidArgument } from '../platform/errors.js';
import { checkValueLength, joinStrings, splitStrings } from './codecs.js';
import { DataType, type DataTypeInfo, dataTypeInfo } from './data-type.js';
import { decimalFor, parseDecimal } from './decimal.js';
import { readNumberAt, writeNumberAt } from './element.js';
import { decodeFp8E4M3, decodeFp8E5M2, encodeFp8E4M3, encodeFp8E5M2 } from './fp8.js';
import { roundToFp16 } from './fp16.js';
import { integerRange } from './integers.js';

/**
 * Values as text, for the legacy API (which renders matrix values as strings) and for legacy inline
 * features (which arrive as strings).
 *
 * formatValue: numbers in the shortest text that reads back to the same value — FP64 as JS prints a
 * double; FP32, FP16 and FP8 as the shortest text that reads back to the same float32 (their values
 * are float32s; this matches the original, which printed them as float32) — with `NaN`, `Infinity`,
 * `-Infinity` and `-0`; INT64/UINT64 exactly; BOOL `true`/`false`; STRING as is; vector elements
 * joined with `,` (an empty vector is empty text).
 *
 * parseValue: decimal text (surrounding whitespace ignored) rounded once into the type by the same
 * rules as encoding numbers (round to nearest even; FP8/FP16 overflow as in fp8.ts / fp16.ts).
 * Integer types take integer text only (`12`, `-3`, `+7`), within range. BOOL takes `true`/`false`
 * (any case) or `1`/`0`. Vector elements are separated by `,` — or `:`, the original service's input
 * separator — except STRING_VECTOR, split on `,` only (its elements cannot contain a comma).
 * Empty text is an empty vector, an empty STRING, and an error for a numeric or BOOL scalar.
 */

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8');

/** The value `bytes` of `type` as text (see the top of this file); checks the length first. */
export function formatValue(type: DataType, bytes: Uint8Array, vectorDim = 0, field = 'value'): string {
  const info = dataTypeInfo(type);
  const count = checkValueLength(type, vectorDim, bytes, field);
  if (type === DataType.STRING) return utf8Decoder.decode(bytes);
  if (type === DataType.STRING_VECTOR) return splitStrings(bytes, count).join(',');
  if (type === DataType.BOOL_VECTOR) {
    const parts = new Array<string>(count);
    for (let i = 0; i < count; i++) parts[i] = (bytes[i >>> 3]! >>> (i & 7)) & 1 ? 'true' : 'false';
    return parts.join(',');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = dataTypeInfo(info.scalar).elementBytes;
  if (!info.isVector) return formatElement(view, 0, info.scalar);
  const parts = new Array<string>(count);
  for (let i = 0; i < count; i++) parts[i] = formatElement(view, i * size, info.scalar);
  return parts.join(',');
}

function formatElement(view: DataView, offset: number, scalar: DataType): string {
  switch (scalar) {
    case DataType.INT64:
      return String(view.getBigInt64(offset, true));
    case DataType.UINT64:
      return String(view.getBigUint64(offset, true));
    case DataType.BOOL:
      return view.getUint8(offset) === 0 ? 'false' : 'true';
    case DataType.FP64:
      return formatDouble(view.getFloat64(offset, true));
    case DataType.FP32:
    case DataType.FP16:
    case DataType.FP8E4M3:
    case DataType.FP8E5M2:
      return formatFloat32(readNumberAt(view, offset, scalar));
    default:
      return String(readNumberAt(view, offset, scalar));
  }
}

const formatDouble = (x: number): string => (Object.is(x, -0) ? '-0' : String(x));

const FP32_OVERFLOW_MIDPOINT = 3.4028235677973366e38; // 2^128 − 2^103

/** The shortest text (by significant digits) that parseValue reads back as the float32 `x`. */
export function formatFloat32(x: number): string {
  if (!Number.isFinite(x) || x === 0) return formatDouble(x);
  for (let digits = 1; digits < 9; digits++) {
    const text = String(Number(x.toPrecision(digits)));
    // Read back the way parseValue reads (one rounding from the decimal), not Math.fround(Number(text)).
    if (Math.fround(decimalFor(text, Number(text), Math.fround, FP32_OVERFLOW_MIDPOINT)) === x) return text;
  }
  return String(Number(x.toPrecision(9)));
}

/** Rounds a parsed double into a narrow float type, as a value; and where that rounding overflows. */
const NARROW: ReadonlyMap<DataType, [(x: number) => number, number]> = new Map([
  [DataType.FP32, [Math.fround, FP32_OVERFLOW_MIDPOINT]],
  [DataType.FP16, [roundToFp16, 65520]],
  [DataType.FP8E4M3, [(x: number) => decodeFp8E4M3(encodeFp8E4M3(x)), 464]],
  [DataType.FP8E5M2, [(x: number) => decodeFp8E5M2(encodeFp8E5M2(x)), 61440]],
]);

/** The bytes of `text` read as a `type` value (see the top of this file); INVALID_ARGUMENT naming `field` on bad text. */
export function parseValue(type: DataType, text: string, vectorDim = 0, field = 'value'): Uint8Array {
  const info = dataTypeInfo(type);
  if (type === DataType.STRING) return utf8Encoder.encode(text);
  if (type === DataType.STRING_VECTOR) {
    const items = text === '' ? [] : text.split(',');
    checkDimension(info, items.length, vectorDim, field);
    const parts = items.map((item) => utf8Encoder.encode(item));
    return joinStrings(
      parts,
      parts.reduce((total, part) => total + 4 + part.length, 0),
    );
  }
  if (!info.isVector) {
    const out = new Uint8Array(info.elementBytes);
    parseElement(new DataView(out.buffer), 0, info.scalar, text, field);
    return out;
  }
  const items = text.trim() === '' ? [] : text.split(/[,:]/);
  checkDimension(info, items.length, vectorDim, field);
  const element = dataTypeInfo(info.scalar);
  if (type === DataType.BOOL_VECTOR) {
    const out = new Uint8Array(Math.ceil(items.length / 8));
    items.forEach((item, i) => {
      if (parseBool(item, `${field}[${i}]`)) out[i >>> 3]! |= 1 << (i & 7);
    });
    return out;
  }
  const out = new Uint8Array(items.length * element.elementBytes);
  const view = new DataView(out.buffer);
  items.forEach((item, i) => {
    parseElement(view, i * element.elementBytes, element.type, item, `${field}[${i}]`);
  });
  return out;
}

function checkDimension(info: DataTypeInfo, count: number, vectorDim: number, field: string): void {
  if (!Number.isInteger(vectorDim) || vectorDim < 0) {
    throw invalidArgument(`${field}: vector dimension must be a whole number ≥ 0, got ${vectorDim}`, field);
  }
  if (vectorDim > 0 && count !== vectorDim) {
    throw invalidArgument(
      `${field}: a ${info.name} of dimension ${vectorDim} needs ${vectorDim} elements, the text has ${count}`,
      field,
    );
  }
}

function parseElement(view: DataView, offset: number, scalar: DataType, raw: string, field: string): void {
  const text = raw.trim();
  const info = dataTypeInfo(scalar);
  if (info.kind === 'bool') {
    view.setUint8(offset, parseBool(text, field) ? 1 : 0);
    return;
  }
  const range = integerRange(scalar);
  if (range !== undefined) {
    if (!/^[+-]?\d+$/.test(text)) throw badText(field, raw, `an integer for ${info.name}`);
    const value = BigInt(text);
    if (value < range.min || value > range.max) {
      throw badText(field, raw, `an integer in [${range.min}, ${range.max}] for ${info.name}`);
    }
    if (scalar === DataType.INT64) {
      view.setBigInt64(offset, value, true);
      return;
    }
    if (scalar === DataType.UINT64) {
      view.setBigUint64(offset, value, true);
      return;
    }
    writeNumberAt(view, offset, scalar, Number(value));
    return;
  }
  const parsed = parseDecimal(text);
  if (parsed === undefined) throw badText(field, raw, `a number for ${info.name}`);
  const narrow = NARROW.get(scalar);
  const value = narrow === undefined ? parsed : decimalFor(text, parsed, narrow[0], narrow[1]);
  writeNumberAt(view, offset, scalar, value);
}

function parseBool(raw: string, field: string): boolean {
  const text = raw.trim().toLowerCase();
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw badText(field, raw, 'true or false');
}

function badText(field: string, raw: string, expected: string) {
  const shown = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return invalidArgument(`${field}: expected ${expected}, got ${JSON.stringify(shown)}`, field);
}
