import { invalidArgument } from '../platform/errors.js';

/**
 * The 31 data types of the orchestrator, with the numbers shared by the wire protocol
 * (`orchestrator.v1.DataType`) and the feature store. Values are little-endian; see codecs.ts.
 */
export enum DataType {
  UNSPECIFIED = 0,
  FP8E5M2 = 1,
  FP8E4M3 = 2,
  FP16 = 3,
  FP32 = 4,
  FP64 = 5,
  INT8 = 6,
  INT16 = 7,
  INT32 = 8,
  INT64 = 9,
  UINT8 = 10,
  UINT16 = 11,
  UINT32 = 12,
  UINT64 = 13,
  STRING = 14,
  BOOL = 15,
  FP8E5M2_VECTOR = 16,
  FP8E4M3_VECTOR = 17,
  FP16_VECTOR = 18,
  FP32_VECTOR = 19,
  FP64_VECTOR = 20,
  INT8_VECTOR = 21,
  INT16_VECTOR = 22,
  INT32_VECTOR = 23,
  INT64_VECTOR = 24,
  UINT8_VECTOR = 25,
  UINT16_VECTOR = 26,
  UINT32_VECTOR = 27,
  UINT64_VECTOR = 28,
  STRING_VECTOR = 29,
  BOOL_VECTOR = 30,
}

export type DataTypeKind = 'float' | 'int' | 'uint' | 'string' | 'bool';

export interface DataTypeInfo {
  readonly type: DataType;
  /** Canonical name as written in model configs, e.g. `FP32`, `INT64_VECTOR`. */
  readonly name: string;
  readonly kind: DataTypeKind;
  readonly isVector: boolean;
  /** The element type: itself for scalars, e.g. FP32 for FP32_VECTOR. */
  readonly scalar: DataType;
  /** The vector type with this element type: itself for vectors. */
  readonly vector: DataType;
  /** Bytes of one element; 0 for strings (variable), and for BOOL 1 (a scalar bool is one byte). */
  readonly elementBytes: number;
  /** True for types with a numeric value (every float, int and uint type, and BOOL as 0/1). */
  readonly numeric: boolean;
}

const scalars: Array<[DataType, DataType, DataTypeKind, number]> = [
  [DataType.FP8E5M2, DataType.FP8E5M2_VECTOR, 'float', 1],
  [DataType.FP8E4M3, DataType.FP8E4M3_VECTOR, 'float', 1],
  [DataType.FP16, DataType.FP16_VECTOR, 'float', 2],
  [DataType.FP32, DataType.FP32_VECTOR, 'float', 4],
  [DataType.FP64, DataType.FP64_VECTOR, 'float', 8],
  [DataType.INT8, DataType.INT8_VECTOR, 'int', 1],
  [DataType.INT16, DataType.INT16_VECTOR, 'int', 2],
  [DataType.INT32, DataType.INT32_VECTOR, 'int', 4],
  [DataType.INT64, DataType.INT64_VECTOR, 'int', 8],
  [DataType.UINT8, DataType.UINT8_VECTOR, 'uint', 1],
  [DataType.UINT16, DataType.UINT16_VECTOR, 'uint', 2],
  [DataType.UINT32, DataType.UINT32_VECTOR, 'uint', 4],
  [DataType.UINT64, DataType.UINT64_VECTOR, 'uint', 8],
  [DataType.STRING, DataType.STRING_VECTOR, 'string', 0],
  [DataType.BOOL, DataType.BOOL_VECTOR, 'bool', 1],
];

const infos = new Map<DataType, DataTypeInfo>();
for (const [scalar, vector, kind, elementBytes] of scalars) {
  const numeric = kind !== 'string';
  infos.set(scalar, {
    type: scalar,
    name: DataType[scalar],
    kind,
    isVector: false,
    scalar,
    vector,
    elementBytes,
    numeric,
  });
  infos.set(vector, {
    type: vector,
    name: DataType[vector],
    kind,
    isVector: true,
    scalar,
    vector,
    elementBytes,
    numeric,
  });
}

/** Everything known about a data type; INVALID_ARGUMENT for UNSPECIFIED or a number outside 1..30. */
export function dataTypeInfo(type: DataType): DataTypeInfo {
  const info = infos.get(type);
  if (!info) throw invalidArgument(`unknown data type ${String(type)}`);
  return info;
}

/** Every valid data type, in protocol order. */
export const allDataTypes: readonly DataType[] = [...infos.keys()].sort((a, b) => a - b);

const byName = new Map<string, DataType>();
for (const type of allDataTypes) {
  const name = DataType[type];
  // Accepted spellings: FP32, fp32, DATA_TYPE_FP32, DataTypeFP32 (the original configs' form).
  for (const alias of [
    name,
    `DATA_TYPE_${name}`,
    `DataType${name}`,
    `DataType${name.replace('_VECTOR', 'Vector')}`,
  ]) {
    byName.set(alias.toUpperCase(), type);
  }
}

/** Parses a data type name in any accepted spelling; undefined when it names none. */
export function lookupDataType(name: string): DataType | undefined {
  return byName.get(name.trim().toUpperCase());
}

/** Parses a data type name; INVALID_ARGUMENT naming `field` when it names none. */
export function parseDataType(name: string, field?: string): DataType {
  const type = lookupDataType(name);
  if (type === undefined) {
    throw invalidArgument(`unknown data type "${name}"${field ? ` at ${field}` : ''}`, field);
  }
  return type;
}

/**
 * Bytes one value takes: element size × `vectorDim` for fixed-width vectors, the element size for
 * scalars, ceil(dim/8) for BOOL_VECTOR (bit-packed), and undefined for variable-width values
 * (strings, string vectors, and vectors whose dimension is not fixed: `vectorDim` 0).
 */
export function fixedWidth(type: DataType, vectorDim = 0): number | undefined {
  const info = dataTypeInfo(type);
  if (info.kind === 'string') return undefined;
  if (!info.isVector) return info.elementBytes;
  if (vectorDim <= 0) return undefined;
  return type === DataType.BOOL_VECTOR ? Math.ceil(vectorDim / 8) : info.elementBytes * vectorDim;
}
