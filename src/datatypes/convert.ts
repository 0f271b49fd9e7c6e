import { invalidArgument, LatticeError } from '../platform/errors.js';
import { checkValueLength } from './codecs.js';
import { DataType, dataTypeInfo } from './data-type.js';
import { type NumberWriteOptions, readNumbers, runBytes, writeNumbers } from './number-runs.js';

export { readNumberAt, saturateToInteger, writeNumberAt } from './element.js';
export { type NumberArray, type NumberWriteOptions, readNumbers, writeNumbers } from './number-runs.js';

/**
 * Conversions between numeric value bytes: every float, int and uint type and BOOL (as 0/1), scalar
 * or vector, element by element. The per-element rules (truncation toward zero and saturation into
 * integers, NaN → 0, round to nearest even into floats, FP8 overflow modes, BOOL = value ≠ 0) are
 * written down in element.ts. Values of INT64/UINT64 convert exactly: into another integer type by
 * saturation, into a float by a single rounding to nearest even (see {@link convertNumbers}).
 */
export interface ConvertOptions extends NumberWriteOptions {
  /** The field named in INVALID_ARGUMENT errors; `value` when omitted. */
  readonly field?: string;
}

/**
 * Converts the value `bytes` of type `from` into the bytes of type `to`. `vectorDim` is the vector
 * dimension (0 = whatever the bytes hold); a vector converts to a scalar, and a scalar to a vector,
 * only when it has exactly one element. Checks `bytes` with {@link checkValueLength} first. When
 * `from === to` the input is returned as is (not copied).
 */
export function convertValue(
  bytes: Uint8Array,
  from: DataType,
  to: DataType,
  vectorDim = 0,
  options: ConvertOptions = {},
): Uint8Array {
  const field = options.field ?? 'value';
  const source = dataTypeInfo(from);
  const target = dataTypeInfo(to);
  if (!source.numeric || !target.numeric) {
    throw invalidArgument(
      `${field}: cannot convert ${source.name} to ${target.name}: only numeric types convert`,
      field,
    );
  }
  const count = checkValueLength(from, vectorDim, bytes, field);
  if (source.isVector !== target.isVector) {
    const dimension = source.isVector ? count : vectorDim;
    if (dimension > 1 || (source.isVector && count !== 1)) {
      throw invalidArgument(
        `${field}: cannot convert ${source.name} of dimension ${dimension} to ${target.name}: vectors and scalars convert only at dimension 1`,
        field,
      );
    }
  }
  if (from === to) return bytes;
  const out = new Uint8Array(runBytes(to, count));
  convertNumbers(from, bytes, count, to, out, 0, options);
  return out;
}

const { INT64, UINT64, FP32, BOOL, BOOL_VECTOR } = DataType;

/** A run's element layout: the element type, except that BOOL_VECTOR is bit-packed. */
const layoutOf = (type: DataType): DataType => (type === BOOL_VECTOR ? type : dataTypeInfo(type).scalar);

/** Elements converted per pass through the staging buffer (a multiple of 8, for bit-packed runs). */
const CHUNK = 4096;

/**
 * Converts a run of `count` elements of `from` at the start of `bytes` into `to` at
 * `out[outOffset…]`; both types name a layout as for readNumbers (an element type or its vector
 * type; BOOL_VECTOR bit-packed). Each element converts by the rules of element.ts, and:
 *
 * - the same layout is a byte copy (FP8/FP16/FP32/FP64 NaN payloads included), except BOOL, which
 *   is normalised to 0/1;
 * - INT64 ↔ UINT64 is exact, saturating what the target cannot hold (negative → 0, ≥ 2^63 → 2^63−1),
 *   word by word, without a bigint per element;
 * - every other conversion goes through a double, which is exact for every source but INT64/UINT64
 *   beyond 2^53; those round once (into FP32 from the exact value, see readNumbers), and an integer
 *   target saturates them anyway.
 *
 * INVALID_ARGUMENT when a type is not numeric or `bytes` is too short; INTERNAL when `out` is.
 */
export function convertNumbers(
  from: DataType,
  bytes: Uint8Array,
  count: number,
  to: DataType,
  out: Uint8Array,
  outOffset = 0,
  options: NumberWriteOptions = {},
): void {
  const need = runBytes(from, count);
  const write = runBytes(to, count);
  if (bytes.length < need) {
    throw invalidArgument(
      `${count} ${dataTypeInfo(from).name} elements take ${need} bytes, got ${bytes.length}`,
    );
  }
  if (out.length - outOffset < write) {
    throw new LatticeError(
      'INTERNAL',
      `buffer too small: ${write} needed, ${out.length - outOffset} available`,
    );
  }
  const source = layoutOf(from);
  const target = layoutOf(to);
  if (source === target && source !== BOOL && source !== BOOL_VECTOR) {
    out.set(bytes.subarray(0, need), outOffset);
    return;
  }
  if ((source === INT64 || source === UINT64) && (target === INT64 || target === UINT64)) {
    convert64Words(
      source === INT64,
      new DataView(bytes.buffer, bytes.byteOffset, need),
      new DataView(out.buffer, out.byteOffset + outOffset, write),
      count,
    );
    return;
  }
  // An FP32 target stages in float32: readNumbers then rounds each element once, from the exact value.
  const staging = target === FP32 ? stagingF32(count) : stagingF64(count);
  const bytesAt = (type: DataType, elements: number) =>
    type === BOOL_VECTOR ? elements / 8 : runBytes(type, elements);
  for (let done = 0; done < count; done += CHUNK) {
    const n = Math.min(CHUNK, count - done);
    readNumbers(from, bytes.subarray(bytesAt(from, done)), n, staging);
    writeNumbers(to, staging, n, out, outOffset + bytesAt(to, done), options);
  }
}

/**
 * INT64 → UINT64 (`signed`) or UINT64 → INT64 as two 32-bit words: a value with the top bit set is
 * out of the other type's range (negative, or ≥ 2^63) and saturates; any other is the same bits.
 */
function convert64Words(signed: boolean, input: DataView, output: DataView, count: number): void {
  for (let i = 0; i < count; i++) {
    let low = input.getUint32(i * 8, true);
    let high = input.getUint32(i * 8 + 4, true);
    if (high >= 0x80000000) {
      low = signed ? 0 : 0xffffffff;
      high = signed ? 0 : 0x7fffffff;
    }
    output.setUint32(i * 8, low, true);
    output.setUint32(i * 8 + 4, high, true);
  }
}

let staging64 = new Float64Array(64);
let staging32 = new Float32Array(64);

/** Reusable staging buffers (conversions are synchronous, so one of each suffices). */
function stagingF64(count: number): Float64Array {
  const n = Math.min(count, CHUNK);
  if (staging64.length < n) staging64 = new Float64Array(Math.max(n, staging64.length * 2));
  return staging64;
}

function stagingF32(count: number): Float32Array {
  const n = Math.min(count, CHUNK);
  if (staging32.length < n) staging32 = new Float32Array(Math.max(n, staging32.length * 2));
  return staging32;
}
