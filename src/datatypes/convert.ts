import { invalidArgument } from '../platform/errors.js';
import { checkValueLength } from './codecs.js';
import { DataType, dataTypeInfo } from './data-type.js';
import { clampBigInt, integerRange, roundToOddDouble } from './integers.js';
import { readNumbers, runBytes, writeNumbers } from './number-runs.js';

export { readNumberAt, saturateToInteger, writeNumberAt } from './element.js';
export { type NumberArray, type NumberWriteOptions, readNumbers, writeNumbers } from './number-runs.js';

/**
 * Conversions between numeric value bytes: every float, int and uint type and BOOL (as 0/1), scalar
 * or vector, element by element. The per-element rules (truncation toward zero and saturation into
 * integers, NaN → 0, round to nearest even into floats, FP8 overflow modes, BOOL = value ≠ 0) are
 * written down in element.ts. Values of INT64/UINT64 convert exactly: into another integer type by
 * saturation, into a float by a single rounding to nearest even.
 */
export interface ConvertOptions {
  /** FP8 targets: the OCP saturating overflow mode (±max instead of NaN / ±∞). */
  readonly saturate?: boolean;
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
  const scratch = scratchFor(count);
  if (source.scalar === DataType.INT64 || source.scalar === DataType.UINT64) {
    if (!convert64(from, to, bytes, count, out, scratch)) return out;
  } else {
    readNumbers(from, bytes, count, scratch);
  }
  writeNumbers(to, scratch, count, out, 0, options);
  return out;
}

/**
 * 64-bit integer sources, kept exact: into INT64/UINT64 written directly (returns false: done);
 * otherwise stages into `scratch` a double that converts correctly (returns true).
 */
function convert64(
  from: DataType,
  to: DataType,
  bytes: Uint8Array,
  count: number,
  out: Uint8Array,
  scratch: Float64Array,
): boolean {
  const signed = dataTypeInfo(from).scalar === DataType.INT64;
  const input = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const read = (i: number): bigint =>
    signed ? input.getBigInt64(i * 8, true) : input.getBigUint64(i * 8, true);
  const targetScalar = dataTypeInfo(to).scalar;
  const range = integerRange(targetScalar);
  if (targetScalar === DataType.INT64 || targetScalar === DataType.UINT64) {
    const output = new DataView(out.buffer, out.byteOffset, out.byteLength);
    for (let i = 0; i < count; i++) {
      const value = clampBigInt(read(i), range!.min, range!.max);
      if (targetScalar === DataType.INT64) output.setBigInt64(i * 8, value, true);
      else output.setBigUint64(i * 8, value, true);
    }
    return false;
  }
  // FP64 and the narrow integers (which saturate anyway) take the nearest double; FP32, FP16 and
  // FP8 a round-to-odd double so that their own rounding is the only one that counts.
  const direct = dataTypeInfo(targetScalar).kind !== 'float' || targetScalar === DataType.FP64;
  for (let i = 0; i < count; i++) {
    const value = read(i);
    scratch[i] = direct ? Number(value) : roundToOddDouble(value);
  }
  return true;
}

let staging = new Float64Array(64);

/** A reusable staging buffer (conversions are synchronous, so one suffices). */
function scratchFor(count: number): Float64Array {
  if (staging.length < count) staging = new Float64Array(Math.max(count, staging.length * 2));
  return staging;
}
