/**
 * Tensor elements between the KServe v2 wire (raw little-endian bytes, BYTES with 4-byte length
 * prefixes, or typed `contents` fields) and the arrays onnxruntime-node runs on. Fixed-width raw
 * data is viewed in place when aligned, so a request's bytes reach the model without a copy. The
 * host is assumed little-endian (x86-64, arm64), as the wire is.
 */
import type { InferTensorContents } from '../gen/inference/grpc_service.js';
import { invalidArgument } from '../platform/errors.js';
import type { FixedTensorArray, TensorData, TensorType } from './tensor-types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Elements in a tensor of this shape. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}

/** Bytes of a fixed-width array, viewed without copying. */
export function bytesOf(data: FixedTensorArray): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Reads `count` elements of `type` from raw wire bytes. `what` names the tensor in errors
 * (e.g. `input "X"`). Throws INVALID_ARGUMENT when the byte length does not fit the shape.
 */
export function decodeRaw(type: TensorType, bytes: Uint8Array, count: number, what: string): TensorData {
  if (!type.array) return decodeStrings(bytes, count, what);
  const expected = count * type.elementBytes;
  if (bytes.byteLength !== expected) {
    throw invalidArgument(
      `${what}: raw contents hold ${bytes.byteLength} bytes, but ${count} ${type.kserve} elements need ${expected}`,
    );
  }
  if (bytes.byteOffset % type.array.BYTES_PER_ELEMENT === 0) {
    return new type.array(bytes.buffer, bytes.byteOffset, count);
  }
  // Typed arrays need aligned offsets; a misaligned slice of the request buffer is copied once.
  const aligned = new Uint8Array(expected);
  aligned.set(bytes);
  return new type.array(aligned.buffer, 0, count);
}

function decodeStrings(bytes: Uint8Array, count: number, what: string): string[] {
  // Checked before allocating: the shape is the client's word, the byte length is what arrived.
  if (count * 4 > bytes.byteLength) {
    throw invalidArgument(
      `${what}: raw contents hold ${bytes.byteLength} bytes, too few for ${count} BYTES elements (4-byte length each)`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const strings = new Array<string>(count);
  let offset = 0;
  for (let i = 0; i < count; i++) {
    if (offset + 4 > bytes.byteLength) {
      throw invalidArgument(`${what}: BYTES contents end at element ${i} of ${count} (no length prefix)`);
    }
    const length = view.getUint32(offset, true);
    offset += 4;
    if (offset + length > bytes.byteLength) {
      throw invalidArgument(
        `${what}: BYTES element ${i} claims ${length} bytes, past the end of the contents`,
      );
    }
    strings[i] = decodeUtf8(bytes.subarray(offset, offset + length), i, what);
    offset += length;
  }
  if (offset !== bytes.byteLength) {
    throw invalidArgument(
      `${what}: BYTES contents have ${bytes.byteLength - offset} bytes after the ${count} elements the shape holds`,
    );
  }
  return strings;
}

// onnxruntime-node holds string tensors as JS strings, so bytes that are not UTF-8 cannot round-trip.
function decodeUtf8(bytes: Uint8Array, index: number, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw invalidArgument(`${what}: BYTES element ${index} is not valid UTF-8 (the ONNX runtime needs text)`);
  }
}

/** Reads `count` elements from the typed `contents` field matching `type`. */
export function decodeContents(
  type: TensorType,
  contents: InferTensorContents,
  count: number,
  what: string,
): TensorData {
  const values = typedValues(type, contents, what);
  if (values.length !== count) {
    throw invalidArgument(
      `${what}: contents hold ${values.length} ${type.kserve} elements; the shape needs ${count}`,
    );
  }
  if (type.kserve === 'BYTES') {
    return (values as readonly Uint8Array[]).map((value, i) => decodeUtf8(value, i, what));
  }
  if (type.kserve === 'BOOL') return Uint8Array.from(values as boolean[], (b) => (b ? 1 : 0));
  const Array_ = type.array!;
  const data = new Array_(count);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    (values as bigint[]).forEach((v, i) => {
      data[i] = v;
    });
  } else {
    (values as number[]).forEach((v, i) => {
      data[i] = v;
    });
  }
  return data;
}

function typedValues(
  type: TensorType,
  contents: InferTensorContents,
  what: string,
): ReadonlyArray<number | bigint | boolean | Uint8Array> {
  switch (type.kserve) {
    case 'BOOL':
      return contents.boolContents;
    case 'INT8':
    case 'INT16':
    case 'INT32':
      return contents.intContents;
    case 'INT64':
      return contents.int64Contents;
    case 'UINT8':
    case 'UINT16':
    case 'UINT32':
      return contents.uintContents;
    case 'UINT64':
      return contents.uint64Contents;
    case 'FP32':
      return contents.fp32Contents;
    case 'FP64':
      return contents.fp64Contents;
    case 'BYTES':
      return contents.bytesContents;
    default:
      throw invalidArgument(`${what}: ${type.kserve} has no typed contents field; send raw_input_contents`);
  }
}

/** Wire bytes of tensor data: a view for fixed-width types, length-prefixed UTF-8 for BYTES. */
export function encodeRaw(data: TensorData): Buffer {
  if (!Array.isArray(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let total = 0;
  const encoded = data.map((s) => {
    const bytes = Buffer.from(s, 'utf8');
    total += 4 + bytes.byteLength;
    return bytes;
  });
  const out = Buffer.allocUnsafe(total);
  let offset = 0;
  for (const bytes of encoded) {
    out.writeUInt32LE(bytes.byteLength, offset);
    bytes.copy(out, offset + 4);
    offset += 4 + bytes.byteLength;
  }
  return out;
}

/** An empty array for `count` elements of `type`, to concatenate batches into. */
export function allocate(type: TensorType, count: number): TensorData {
  return type.array ? new type.array(count) : new Array<string>(count);
}

/** Copies `source` into `target` starting at element `offset` (both of the same type). */
export function copyElements(target: TensorData, source: TensorData, offset: number): void {
  if (Array.isArray(target)) {
    const strings = source as string[];
    for (let i = 0; i < strings.length; i++) target[offset + i] = strings[i]!;
    return;
  }
  const from = bytesOf(source as FixedTensorArray);
  bytesOf(target).set(from, offset * target.BYTES_PER_ELEMENT);
}

/** Elements `[start, end)` of `data`, a view for typed arrays. */
export function sliceElements(data: TensorData, start: number, end: number): TensorData {
  return Array.isArray(data) ? data.slice(start, end) : data.subarray(start, end);
}
