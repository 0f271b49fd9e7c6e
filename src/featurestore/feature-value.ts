import { checkValueLength, DataType, dataTypeInfo, encodeValue, parseValue } from '../datatypes/index.js';
import { invalidArgument } from '../platform/errors.js';

/** What a feature's value bytes are: its data type and, for vectors, its dimension (0 = any). */
export interface FeatureType {
  readonly dataType: DataType;
  readonly vectorDim: number;
}

const utf8 = new TextEncoder();

/**
 * The value bytes of one feature from a value as files and documents hold it: JSON values (number,
 * string, boolean, array), text cells (a CSV field), Parquet values (numbers, bigints, lists, bytes).
 *
 * - `null` / `undefined` → `undefined`: no value (the caller applies the feature's default).
 * - text: a STRING as is; a vector as a JSON array (`[1, 2]`) or a comma list (`1,2`); anything else
 *   as decimal text, `true`/`false` for BOOL (see `parseValue`).
 * - numbers, bigints and booleans: scalars (a STRING takes their text).
 * - arrays: vectors, element by element.
 * - bytes (`Uint8Array`): already-encoded value bytes, checked against the type.
 *
 * Throws INVALID_ARGUMENT naming `field` when the value does not fit the type.
 */
export function encodeFeatureValue(type: FeatureType, raw: unknown, field: string): Uint8Array | undefined {
  const { dataType, vectorDim } = type;
  if (raw === null || raw === undefined) return undefined;
  const info = dataTypeInfo(dataType);
  if (raw instanceof Uint8Array) {
    checkValueLength(dataType, vectorDim, raw, field);
    return new Uint8Array(raw);
  }
  if (typeof raw === 'string') {
    if (dataType === DataType.STRING) return utf8.encode(raw);
    if (info.isVector && raw.trimStart().startsWith('['))
      return encodeArray(type, parseJsonArray(raw, field), field);
    return parseValue(dataType, raw, vectorDim, field);
  }
  if (typeof raw === 'number' || typeof raw === 'bigint' || typeof raw === 'boolean') {
    if (dataType === DataType.STRING) return utf8.encode(String(raw));
    if (info.isVector) {
      throw invalidArgument(`${field}: expected an array or a comma-separated list for ${info.name}`, field);
    }
    return encodeValue(dataType, raw, vectorDim, field);
  }
  if (Array.isArray(raw)) {
    if (!info.isVector) {
      throw invalidArgument(`${field}: expected a single value for ${info.name}, got an array`, field);
    }
    return encodeArray(type, raw, field);
  }
  throw invalidArgument(`${field}: expected a value for ${info.name}, got ${describe(raw)}`, field);
}

function parseJsonArray(text: string, field: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument(`${field}: ${JSON.stringify(shorten(text))} is not a JSON array`, field);
  }
  if (!Array.isArray(parsed)) throw invalidArgument(`${field}: expected a JSON array`, field);
  return parsed;
}

function encodeArray(type: FeatureType, items: readonly unknown[], field: string): Uint8Array {
  const { dataType, vectorDim } = type;
  items.forEach((item, i) => {
    if (
      !(
        typeof item === 'number' ||
        typeof item === 'string' ||
        typeof item === 'boolean' ||
        typeof item === 'bigint'
      )
    ) {
      throw invalidArgument(
        `${field}[${i}]: expected a scalar element, got ${describe(item)}`,
        `${field}[${i}]`,
      );
    }
  });
  if (dataType === DataType.STRING_VECTOR) {
    return encodeValue(
      dataType,
      items.map((item) => String(item)),
      vectorDim,
      field,
    );
  }
  // Text elements (e.g. "1.5", or 64-bit integers kept exact as strings) take the text parser.
  if (items.some((item) => typeof item === 'string')) {
    return parseValue(dataType, items.map((item) => String(item)).join(','), vectorDim, field);
  }
  return encodeValue(dataType, items as readonly (number | bigint | boolean)[], vectorDim, field);
}

const shorten = (text: string): string => (text.length > 40 ? `${text.slice(0, 40)}…` : text);

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof Date) return 'a date';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(value);
}
