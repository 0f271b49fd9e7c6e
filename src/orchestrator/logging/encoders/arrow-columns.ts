import { isUtf8 } from 'node:buffer';
import {
  type DataType as ArrowType,
  Bool,
  type Data,
  Field,
  FixedSizeList,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  List,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
  type Vector,
} from 'apache-arrow';
import {
  checkValueLength,
  defaultValue,
  type EncodableValue,
  encodeValue,
} from '../../../datatypes/codecs.js';
import { DataType, dataTypeInfo } from '../../../datatypes/data-type.js';
import { readNumbers } from '../../../datatypes/number-runs.js';
import { invalidArgument } from '../../../platform/errors.js';
import type { ColumnSpec } from '../../matrix/component-matrix.js';
import type { LogColumn } from '../log-batch.js';

/**
 * Logged columns as typed Arrow columns, and back. The mapping (logged data type → Arrow type):
 *
 * | logged type                    | Arrow type                                              |
 * |--------------------------------|---------------------------------------------------------|
 * | FP8E5M2, FP8E4M3, FP16, FP32   | Float32 (every FP8/FP16 value is exactly a float32)     |
 * | FP64                           | Float64                                                 |
 * | INT8, INT16, INT32, INT64      | Int8, Int16, Int32, Int64                               |
 * | UINT8, UINT16, UINT32, UINT64  | Uint8, Uint16, Uint32, Uint64                           |
 * | BOOL                           | Bool                                                    |
 * | STRING                         | Utf8 (invalid UTF-8 sequences become U+FFFD)            |
 * | `<T>_VECTOR`, vector_dim n > 0 | FixedSizeList[n]<T's type> (child field `item`)         |
 * | `<T>_VECTOR`, vector_dim 0     | List<T's type> (a BOOL_VECTOR lists 8 bits per byte)    |
 *
 * A defaulted cell is null. Each field carries metadata `lattice.data_type` (e.g. `FP16`) and
 * `lattice.vector_dim`, so a file read on its own still says what was logged. Reading back, a value
 * is re-encoded into its logged type, which gives the served bytes again (FP8/FP16 values survive
 * the float32 trip exactly; a NaN comes back as the type's canonical NaN).
 */

const { FP8E5M2, FP8E4M3, FP16, FP32, FP64, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 } =
  DataType;

function elementType(scalar: DataType): ArrowType {
  switch (scalar) {
    case FP8E5M2:
    case FP8E4M3:
    case FP16:
    case FP32:
      return new Float32();
    case FP64:
      return new Float64();
    case INT8:
      return new Int8();
    case INT16:
      return new Int16();
    case INT32:
      return new Int32();
    case INT64:
      return new Int64();
    case UINT8:
      return new Uint8();
    case UINT16:
      return new Uint16();
    case UINT32:
      return new Uint32();
    case UINT64:
      return new Uint64();
    case DataType.BOOL:
      return new Bool();
    default:
      return new Utf8();
  }
}

/** The Arrow type of a logged column (see the table above). */
export function arrowTypeOf(spec: ColumnSpec): ArrowType {
  const info = dataTypeInfo(spec.dataType);
  const element = elementType(info.scalar);
  if (!info.isVector) return element;
  const item = new Field('item', element, false);
  return spec.vectorDim > 0 ? new FixedSizeList(spec.vectorDim, item) : new List(item);
}

/** The Arrow field of a logged column, with its logged type in the field metadata. */
export function arrowFieldOf(name: string, spec: ColumnSpec, nullable = true): Field {
  const metadata = new Map([
    ['lattice.data_type', DataType[spec.dataType]],
    ['lattice.vector_dim', String(spec.vectorDim)],
  ]);
  return new Field(name, arrowTypeOf(spec), nullable, metadata);
}

/** A named column of a table to build. */
export interface NamedLogColumn {
  readonly name: string;
  readonly column: LogColumn;
  /** False for columns that are never defaulted (ids); default true. */
  readonly nullable?: boolean;
}

/** An Arrow table of rows `[start, end)` of the given columns, in order. */
export function buildArrowTable(columns: readonly NamedLogColumn[], start: number, end: number): Table {
  const fields = columns.map(({ name, column, nullable }) => arrowFieldOf(name, column.spec, nullable));
  const children = columns.map(({ column }) => buildColumnData(column, start, end));
  const rows = end - start;
  const struct = makeData({ type: new Struct(fields), length: rows, nullCount: 0, children });
  return new Table(new RecordBatch(new Schema(fields), struct));
}

/** The Arrow data of rows `[start, end)` of one column. */
export function buildColumnData(column: LogColumn, start: number, end: number): Data {
  const { spec } = column;
  const info = dataTypeInfo(spec.dataType);
  const rows = end - start;
  const { bitmap: nullBitmap, nulls: nullCount } = validity(column, start, end);
  const type = arrowTypeOf(spec);
  const fallback = defaultValue(spec.dataType, spec.vectorDim);
  const cell = (row: number): Uint8Array => (column.isDefaulted(row) ? fallback : column.value(row));

  if (!info.isVector) {
    if (info.kind === 'string') {
      const strings = rowsOf(rows, (i) => cleanUtf8(cell(start + i)));
      return utf8Data(strings, nullBitmap, nullCount);
    }
    if (info.kind === 'bool') {
      const bits = new Uint8Array(Math.ceil(rows / 8));
      for (let i = 0; i < rows; i++) if (cell(start + i)[0]! !== 0) bits[i >>> 3]! |= 1 << (i & 7);
      return makeData({ type: new Bool(), length: rows, nullCount, nullBitmap, data: bits });
    }
    return numericData(info.scalar, gatherFixed(column, start, end, cell), rows, nullBitmap, nullCount);
  }

  // Vectors: one child of all elements, then a FixedSizeList or a List over it.
  let child: Data;
  let offsets: Int32Array | undefined;
  if (info.kind === 'string') {
    const perRow = rowsOf(rows, (i) => splitCell(spec, cell(start + i)));
    offsets = offsetsOf(perRow.map((strings) => strings.length));
    child = utf8Data(perRow.flat(), undefined, 0);
  } else if (info.kind === 'bool') {
    const counts = rowsOf(rows, (i) => elementCount(spec, cell(start + i)));
    offsets = offsetsOf(counts);
    const total = offsets[rows]!;
    const bits = new Uint8Array(Math.ceil(total / 8));
    for (let i = 0; i < rows; i++) {
      const bytes = cell(start + i);
      const at = offsets[i]!;
      for (let k = 0; k < counts[i]!; k++) {
        if ((bytes[k >>> 3]! >>> (k & 7)) & 1) bits[(at + k) >>> 3]! |= 1 << ((at + k) & 7);
      }
    }
    child = makeData({ type: new Bool(), length: total, nullCount: 0, data: bits });
  } else {
    const bytes = gatherFixed(column, start, end, cell);
    const size = dataTypeInfo(info.scalar).elementBytes;
    if (spec.vectorDim === 0) {
      offsets = offsetsOf(rowsOf(rows, (i) => elementCount(spec, cell(start + i))));
    }
    child = numericData(info.scalar, bytes, bytes.length / size, undefined, 0);
  }
  if (type instanceof FixedSizeList) return makeData({ type, length: rows, nullCount, nullBitmap, child });
  const valueOffsets = offsets ?? offsetsOf(new Array<number>(rows).fill(spec.vectorDim));
  return makeData({ type: type as List, length: rows, nullCount, nullBitmap, valueOffsets, child });
}

function rowsOf<T>(rows: number, get: (i: number) => T): T[] {
  const out = new Array<T>(rows);
  for (let i = 0; i < rows; i++) out[i] = get(i);
  return out;
}

/** Arrow's validity bitmap (bit set = value present); none when no cell is defaulted. */
function validity(
  column: LogColumn,
  start: number,
  end: number,
): { bitmap: Uint8Array | undefined; nulls: number } {
  const rows = end - start;
  const bitmap = new Uint8Array(Math.ceil(rows / 8));
  let nulls = 0;
  for (let i = 0; i < rows; i++) {
    if (column.isDefaulted(start + i)) nulls++;
    else bitmap[i >>> 3]! |= 1 << (i & 7);
  }
  return { bitmap: nulls === 0 ? undefined : bitmap, nulls };
}

/** Elements in one non-string cell, checking the cell against its type and dimension. */
function elementCount(spec: ColumnSpec, bytes: Uint8Array): number {
  return checkValueLength(spec.dataType, spec.vectorDim, bytes, spec.name);
}

/** The cells of a numeric column back to back, in a fresh 8-byte aligned buffer. */
function gatherFixed(
  column: LogColumn,
  start: number,
  end: number,
  cell: (row: number) => Uint8Array,
): Uint8Array {
  const fixed = column.fixed;
  if (fixed) return fixed.data.slice(start * fixed.width, end * fixed.width);
  let total = 0;
  const cells = new Array<Uint8Array>(end - start);
  for (let row = start; row < end; row++) {
    const bytes = cell(row);
    elementCount(column.spec, bytes);
    cells[row - start] = bytes;
    total += bytes.length;
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const bytes of cells) {
    out.set(bytes, offset);
    offset += bytes.length;
  }
  return out;
}

function numericData(
  scalar: DataType,
  bytes: Uint8Array,
  length: number,
  nullBitmap: Uint8Array | undefined,
  nullCount: number,
): Data {
  const { buffer, byteOffset } = bytes;
  const base = { length, nullCount, nullBitmap };
  switch (scalar) {
    case FP8E5M2:
    case FP8E4M3:
    case FP16: {
      const data = new Float32Array(length);
      readNumbers(scalar, bytes, length, data);
      return makeData({ type: new Float32(), ...base, data });
    }
    case FP32:
      return makeData({ type: new Float32(), ...base, data: new Float32Array(buffer, byteOffset, length) });
    case FP64:
      return makeData({ type: new Float64(), ...base, data: new Float64Array(buffer, byteOffset, length) });
    case INT8:
      return makeData({ type: new Int8(), ...base, data: new Int8Array(buffer, byteOffset, length) });
    case INT16:
      return makeData({ type: new Int16(), ...base, data: new Int16Array(buffer, byteOffset, length) });
    case INT32:
      return makeData({ type: new Int32(), ...base, data: new Int32Array(buffer, byteOffset, length) });
    case INT64:
      return makeData({ type: new Int64(), ...base, data: new BigInt64Array(buffer, byteOffset, length) });
    case UINT8:
      return makeData({ type: new Uint8(), ...base, data: new Uint8Array(buffer, byteOffset, length) });
    case UINT16:
      return makeData({ type: new Uint16(), ...base, data: new Uint16Array(buffer, byteOffset, length) });
    case UINT32:
      return makeData({ type: new Uint32(), ...base, data: new Uint32Array(buffer, byteOffset, length) });
    case UINT64:
      return makeData({ type: new Uint64(), ...base, data: new BigUint64Array(buffer, byteOffset, length) });
    default:
      throw invalidArgument(`${DataType[scalar]} is not a numeric element type`);
  }
}

function utf8Data(
  strings: readonly Uint8Array[],
  nullBitmap: Uint8Array | undefined,
  nullCount: number,
): Data {
  const valueOffsets = offsetsOf(strings.map((s) => s.length));
  const data = new Uint8Array(valueOffsets[strings.length]!);
  strings.forEach((s, i) => {
    data.set(s, valueOffsets[i]!);
  });
  return makeData({ type: new Utf8(), length: strings.length, nullCount, nullBitmap, valueOffsets, data });
}

function offsetsOf(counts: readonly number[]): Int32Array {
  const offsets = new Int32Array(counts.length + 1);
  for (let i = 0; i < counts.length; i++) {
    const next = offsets[i]! + counts[i]!;
    if (next > 0x7fffffff) throw invalidArgument('a logged column exceeds 2^31 elements in one record');
    offsets[i + 1] = next;
  }
  return offsets;
}

const utf8Decoder = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

/** Arrow's Utf8 must hold valid UTF-8; anything else is replaced (U+FFFD) rather than refused. */
function cleanUtf8(bytes: Uint8Array): Uint8Array {
  return isUtf8(bytes) ? bytes : utf8Encoder.encode(utf8Decoder.decode(bytes));
}

/** The UTF-8 elements of a STRING_VECTOR cell, as views. */
function splitCell(spec: ColumnSpec, bytes: Uint8Array): Uint8Array[] {
  const count = checkValueLength(spec.dataType, spec.vectorDim, bytes, spec.name);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<Uint8Array>(count);
  let offset = 0;
  for (let i = 0; i < count; i++) {
    const length = view.getUint32(offset, true);
    out[i] = cleanUtf8(bytes.subarray(offset + 4, offset + 4 + length));
    offset += 4 + length;
  }
  return out;
}

/**
 * The cell bytes of `row` of an Arrow column read back, re-encoded into the logged type, or
 * undefined for null (a defaulted cell). INVALID_ARGUMENT when the value does not fit the type.
 */
export function cellFromArrow(spec: ColumnSpec, vector: Vector, row: number): Uint8Array | undefined {
  if (!vector.isValid(row)) return undefined;
  const value: unknown = vector.get(row);
  const info = dataTypeInfo(spec.dataType);
  if (info.isVector) {
    if (!isArrowVector(value)) throw invalidArgument(`column "${spec.name}" row ${row}: expected a list`);
    return encodeValue(spec.dataType, value.toArray() as EncodableValue, spec.vectorDim, spec.name);
  }
  if (info.kind === 'string') {
    if (typeof value !== 'string') throw invalidArgument(`column "${spec.name}" row ${row}: expected text`);
    return utf8Encoder.encode(value);
  }
  if (typeof value !== 'number' && typeof value !== 'bigint' && typeof value !== 'boolean') {
    throw invalidArgument(`column "${spec.name}" row ${row}: expected a ${info.name} value`);
  }
  return encodeValue(spec.dataType, value, 0, spec.name);
}

function isArrowVector(value: unknown): value is Vector {
  return typeof value === 'object' && value !== null && typeof (value as Vector).toArray === 'function';
}

/** Checks that a table read back has the Arrow type the mapping gives `spec` at column `index`. */
export function checkArrowColumn(table: Table, index: number, spec: ColumnSpec): Vector {
  const field = table.schema.fields[index];
  const vector = table.getChildAt(index);
  const expected = arrowTypeOf(spec);
  if (!field || !vector) {
    throw invalidArgument(`payload has no column ${index} for schema entry "${spec.name}"`);
  }
  if (String(field.type) !== String(expected)) {
    throw invalidArgument(
      `payload column ${index} ("${field.name}") is ${String(field.type)}, but "${spec.name}" (${DataType[spec.dataType]}) logs as ${String(expected)}`,
    );
  }
  return vector;
}
