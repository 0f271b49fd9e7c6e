import { invalidArgument, LatticeError } from '../platform/errors.js';
import { DataType, dataTypeInfo } from './data-type.js';
import {
  notNumeric,
  readNumberAt,
  saturateToInteger,
  writeInt64Words,
  writeNumberAt,
  writeUint64Words,
} from './element.js';
import { encodeFp8E4M3, encodeFp8E5M2, FP8E4M3_VALUES, FP8E5M2_VALUES } from './fp8.js';
import { encodeFp16, fp16Values } from './fp16.js';
import { roundToOddDouble } from './integers.js';
import type { MinifloatEncoder } from './minifloat.js';

export { readNumberAt, saturateToInteger, writeNumberAt } from './element.js';

/**
 * Runs of numeric elements as doubles: readNumbers / writeNumbers, the hot path that builds model
 * tensors from matrix columns and writes scores back. On little-endian hosts they work on typed-array
 * views (a run at an unaligned offset goes once through an aligned scratch buffer), elsewhere through
 * a DataView; nothing is allocated per element. Each element converts exactly as element.ts converts
 * one (the rules are written down there).
 */

export type NumberArray = Float64Array | Float32Array;

export interface NumberWriteOptions {
  /** FP8 targets only: overflow and ±∞ become ±max instead of NaN (E4M3) / ±∞ (E5M2). */
  readonly saturate?: boolean;
}

const {
  FP8E5M2,
  FP8E4M3,
  FP16,
  FP32,
  FP64,
  INT8,
  INT16,
  INT32,
  INT64,
  UINT8,
  UINT16,
  UINT32,
  UINT64,
  BOOL,
  BOOL_VECTOR,
} = DataType;

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const TWO_32 = 4294967296;
const TWO_53 = 9007199254740992;

type HostView = {
  View: new (buffer: ArrayBufferLike, byteOffset: number, length: number) => NumberArray | IntegerArray;
  /** An integer type's range, which a write saturates (or rejects) to. */
  range?: readonly [min: number, max: number];
};

/**
 * The element types a TypedArray over the buffer reads and writes as they are, on a little-endian
 * host and an aligned offset; indexed by DataType.
 */
const HOST_VIEWS: ReadonlyArray<HostView | undefined> = (() => {
  const views: (HostView | undefined)[] = [];
  views[FP32] = { View: Float32Array };
  views[FP64] = { View: Float64Array };
  views[INT16] = { View: Int16Array, range: [-32768, 32767] };
  views[UINT16] = { View: Uint16Array, range: [0, 65535] };
  views[INT32] = { View: Int32Array, range: [-2147483648, 2147483647] };
  views[UINT32] = { View: Uint32Array, range: [0, 4294967295] };
  return views;
})();

const dataViewOf = (bytes: Uint8Array): DataView =>
  new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** Bytes that `count` elements of `type` take in one run (BOOL_VECTOR: bit-packed). */
export function runBytes(type: DataType, count: number): number {
  const info = dataTypeInfo(type);
  if (!info.numeric) throw notNumeric(type);
  return type === BOOL_VECTOR ? Math.ceil(count / 8) : count * info.elementBytes;
}

/**
 * Decodes `count` elements of `type` from the start of `bytes` into `out[outOffset…]`. `type` names
 * the layout: an element type or its vector type (the same bytes), except that BOOL is one byte per
 * element and BOOL_VECTOR one bit, least significant first, the run starting at bit 0 of `bytes[0]`.
 * Integers convert exactly up to 2^53 and round to nearest beyond; storing into a Float32Array rounds
 * once (to nearest even). INVALID_ARGUMENT when `bytes` is too short or `type` is not numeric.
 */
export function readNumbers(
  type: DataType,
  bytes: Uint8Array,
  count: number,
  out: NumberArray,
  outOffset = 0,
): void {
  const need = runBytes(type, count);
  if (bytes.length < need) {
    throw invalidArgument(
      `${count} ${dataTypeInfo(type).name} elements take ${need} bytes, got ${bytes.length}`,
    );
  }
  checkCapacity(out.length - outOffset, count);
  const scalar = dataTypeInfo(type).scalar;
  const size = dataTypeInfo(scalar).elementBytes;
  const aligned = LITTLE_ENDIAN_HOST && bytes.byteOffset % size === 0;
  if (LITTLE_ENDIAN_HOST && !aligned) {
    // One copy to an aligned scratch buffer beats element-wise DataView reads.
    const copy = scratchBytes(need);
    copy.set(bytes.subarray(0, need));
    readNumbers(type, copy, count, out, outOffset);
    return;
  }
  const { buffer, byteOffset } = bytes;
  const host = aligned ? HOST_VIEWS[scalar] : undefined;
  if (host !== undefined) {
    // TypedArray.set converts element-wise (exactly, or rounding once into a Float32Array).
    out.set(new host.View(buffer, byteOffset, count), outOffset);
    return;
  }
  // Each loop is its own small function: it gets optimized on its own, whatever happens to this
  // dispatcher, and a million-element run never stays in the interpreter.
  switch (type === BOOL_VECTOR ? type : scalar) {
    case FP8E5M2:
      readTable(FP8E5M2_VALUES, bytes, count, out, outOffset);
      return;
    case FP8E4M3:
      readTable(FP8E4M3_VALUES, bytes, count, out, outOffset);
      return;
    case FP16:
      if (aligned) {
        readFp16(fp16Values(), new Uint16Array(buffer, byteOffset, count), count, out, outOffset);
        return;
      }
      break;
    case INT8:
      out.set(new Int8Array(buffer, byteOffset, count), outOffset);
      return;
    case UINT8:
      out.set(bytes.subarray(0, count), outOffset);
      return;
    case INT64:
    case UINT64:
      readInt64Run(scalar === INT64, dataViewOf(bytes), count, out, outOffset);
      return;
    case BOOL:
      readBytesAsBool(bytes, count, out, outOffset);
      return;
    case BOOL_VECTOR:
      readBits(bytes, count, out, outOffset);
      return;
  }
  readWithView(dataViewOf(bytes), size, scalar, count, out, outOffset);
}

function readTable(
  table: Float32Array,
  bytes: Uint8Array,
  count: number,
  out: NumberArray,
  at: number,
): void {
  for (let i = 0; i < count; i++) out[at + i] = table[bytes[i]!]!;
}

function readFp16(
  table: Float32Array,
  codes: Uint16Array,
  count: number,
  out: NumberArray,
  at: number,
): void {
  for (let i = 0; i < count; i++) out[at + i] = table[codes[i]!]!;
}

function readBytesAsBool(bytes: Uint8Array, count: number, out: NumberArray, at: number): void {
  for (let i = 0; i < count; i++) out[at + i] = bytes[i] === 0 ? 0 : 1;
}

function readBits(bytes: Uint8Array, count: number, out: NumberArray, at: number): void {
  for (let i = 0; i < count; i++) out[at + i] = (bytes[i >>> 3]! >>> (i & 7)) & 1;
}

function readWithView(
  view: DataView,
  size: number,
  scalar: DataType,
  count: number,
  out: NumberArray,
  at: number,
): void {
  for (let i = 0; i < count; i++) out[at + i] = readNumberAt(view, i * size, scalar);
}

function readInt64Run(signed: boolean, view: DataView, count: number, out: NumberArray, at: number): void {
  const narrow = out instanceof Float32Array;
  for (let i = 0; i < count; i++) {
    const high = signed ? view.getInt32(i * 8 + 4, true) : view.getUint32(i * 8 + 4, true);
    const x = high * TWO_32 + view.getUint32(i * 8, true);
    // Beyond 2^53 the double is already rounded; a second rounding into float32 could land on the
    // wrong side of a tie, so round once from the exact value (rare: |x| ≥ 2^53).
    if (narrow && (x >= TWO_53 || x <= -TWO_53)) {
      out[at + i] = roundToOddDouble(signed ? view.getBigInt64(i * 8, true) : view.getBigUint64(i * 8, true));
    } else {
      out[at + i] = x;
    }
  }
}

/**
 * Encodes `values[0…count)` as elements of `type` into `out[outOffset…]` (the byte layout as for
 * readNumbers; a BOOL_VECTOR run writes whole bytes, its padding bits 0), converting each value by
 * the rules in element.ts. INVALID_ARGUMENT when `type` is not numeric; INTERNAL when `out` or
 * `values` is too short (a sizing bug in the caller).
 */
export function writeNumbers(
  type: DataType,
  values: NumberArray,
  count: number,
  out: Uint8Array,
  outOffset = 0,
  options: NumberWriteOptions = {},
): void {
  const need = runBytes(type, count);
  checkCapacity(out.length - outOffset, need);
  checkCapacity(values.length, count);
  const scalar = dataTypeInfo(type).scalar;
  const size = dataTypeInfo(scalar).elementBytes;
  const start = out.byteOffset + outOffset;
  const aligned = LITTLE_ENDIAN_HOST && start % size === 0;
  if (LITTLE_ENDIAN_HOST && !aligned) {
    const staged = scratchBytes(need);
    writeNumbers(type, values, count, staged, 0, options);
    out.set(staged, outOffset);
    return;
  }
  const { buffer } = out;
  const saturate = options.saturate === true;
  const host = aligned ? HOST_VIEWS[scalar] : undefined;
  if (host !== undefined) {
    const view = new host.View(buffer, start, count);
    if (host.range === undefined) view.set(values.length === count ? values : values.subarray(0, count));
    else saturateRun(view as IntegerArray, values, count, host.range[0], host.range[1]);
    return;
  }
  switch (type === BOOL_VECTOR ? type : scalar) {
    case FP8E5M2:
      writeFp8(encodeFp8E5M2, saturate, values, count, out, outOffset);
      return;
    case FP8E4M3:
      writeFp8(encodeFp8E4M3, saturate, values, count, out, outOffset);
      return;
    case FP16:
      if (aligned) {
        writeFp16(new Uint16Array(buffer, start, count), values, count);
        return;
      }
      break;
    case INT8:
      saturateRun(new Int8Array(buffer, start, count), values, count, -128, 127);
      return;
    case UINT8:
      saturateRun(out.subarray(outOffset, outOffset + count), values, count, 0, 255);
      return;
    case INT64:
    case UINT64:
      writeInt64Run(scalar === INT64, new DataView(buffer, start, need), values, count);
      return;
    case BOOL:
      writeBool(values, count, out, outOffset);
      return;
    case BOOL_VECTOR:
      writeBits(values, count, out, outOffset);
      return;
  }
  writeWithView(new DataView(buffer, start, need), size, scalar, values, count, saturate);
}

function writeFp8(
  encode: MinifloatEncoder,
  saturate: boolean,
  values: NumberArray,
  count: number,
  out: Uint8Array,
  at: number,
): void {
  for (let i = 0; i < count; i++) out[at + i] = encode(values[i]!, saturate);
}

function writeFp16(codes: Uint16Array, values: NumberArray, count: number): void {
  for (let i = 0; i < count; i++) codes[i] = encodeFp16(values[i]!);
}

type IntegerArray = Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array;

function saturateRun(dst: IntegerArray, values: NumberArray, count: number, min: number, max: number): void {
  for (let i = 0; i < count; i++) dst[i] = saturateToInteger(values[i]!, min, max);
}

function writeBool(values: NumberArray, count: number, out: Uint8Array, at: number): void {
  for (let i = 0; i < count; i++) out[at + i] = values[i] === 0 ? 0 : 1;
}

function writeBits(values: NumberArray, count: number, out: Uint8Array, at: number): void {
  const bytes = Math.ceil(count / 8);
  for (let b = 0; b < bytes; b++) {
    let byte = 0;
    const end = Math.min(8, count - b * 8);
    for (let bit = 0; bit < end; bit++) if (values[b * 8 + bit] !== 0) byte |= 1 << bit;
    out[at + b] = byte;
  }
}

function writeInt64Run(signed: boolean, view: DataView, values: NumberArray, count: number): void {
  if (signed) for (let i = 0; i < count; i++) writeInt64Words(view, i * 8, values[i]!);
  else for (let i = 0; i < count; i++) writeUint64Words(view, i * 8, values[i]!);
}

function writeWithView(
  view: DataView,
  size: number,
  scalar: DataType,
  values: NumberArray,
  count: number,
  saturate: boolean,
): void {
  for (let i = 0; i < count; i++) writeNumberAt(view, i * size, scalar, values[i]!, saturate);
}

let scratch = new Uint8Array(new ArrayBuffer(4096));

/** A reusable, 8-byte aligned staging area of `bytes` bytes (runs are synchronous, one suffices). */
function scratchBytes(bytes: number): Uint8Array {
  if (scratch.length < bytes) scratch = new Uint8Array(Math.max(bytes, scratch.length * 2));
  return scratch.subarray(0, bytes);
}

function checkCapacity(available: number, needed: number): void {
  if (available < needed) {
    throw new LatticeError('INTERNAL', `buffer too small: ${needed} needed, ${available} available`);
  }
}
