import { encodeValue, joinStrings } from '../../datatypes/codecs.js';
import { DataType, dataTypeInfo } from '../../datatypes/data-type.js';
import type {
  InferTensorContents,
  ModelInferResponse_InferOutputTensor,
} from '../../gen/inference/grpc_service.js';
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import type { Tensor } from './model-inferer.js';

/**
 * KServe v2 tensor datatypes and our DataType. A tensor's elements are scalars, so a vector type
 * maps to its element type; STRING is BYTES (each element a 4-byte little-endian length, then its
 * bytes). FP8 has no KServe datatype. BF16 outputs are widened to FP32 on the way in.
 */
const toKserve = new Map<DataType, string>([
  [DataType.BOOL, 'BOOL'],
  [DataType.UINT8, 'UINT8'],
  [DataType.UINT16, 'UINT16'],
  [DataType.UINT32, 'UINT32'],
  [DataType.UINT64, 'UINT64'],
  [DataType.INT8, 'INT8'],
  [DataType.INT16, 'INT16'],
  [DataType.INT32, 'INT32'],
  [DataType.INT64, 'INT64'],
  [DataType.FP16, 'FP16'],
  [DataType.FP32, 'FP32'],
  [DataType.FP64, 'FP64'],
  [DataType.STRING, 'BYTES'],
]);
const fromKserve = new Map<string, DataType>([...toKserve].map(([type, name]) => [name, type]));

/** The KServe datatype of a tensor of `type`; INVALID_ARGUMENT for types KServe cannot carry. */
export function kserveDatatype(type: DataType, field = 'datatype'): string {
  const name = toKserve.get(dataTypeInfo(type).scalar);
  if (name === undefined)
    throw invalidArgument(`${field}: ${dataTypeInfo(type).name} has no KServe v2 datatype`, field);
  return name;
}

/** Our DataType for a KServe datatype name; undefined for names we do not read (BF16 is handled apart). */
export function dataTypeOfKserve(name: string): DataType | undefined {
  return fromKserve.get(name.toUpperCase());
}

/** Elements of a shape; -1 (variable) dimensions make it unknown. */
function elementCount(shape: readonly number[]): number | undefined {
  let n = 1;
  for (const d of shape) {
    if (d < 0) return undefined;
    n *= d;
  }
  return n;
}

/**
 * Checks that a tensor's raw bytes fit its type and shape: `count × element size` bytes, or for
 * BYTES exactly `count` length-prefixed elements. Throws with `problem` as the error's maker.
 */
function checkRaw(
  label: string,
  dataType: DataType,
  shape: readonly number[],
  data: Uint8Array,
  problem: (message: string) => LatticeError,
): void {
  const count = elementCount(shape);
  const info = dataTypeInfo(dataType);
  if (info.kind === 'string') {
    let elements = 0;
    let offset = 0;
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    while (offset < data.length) {
      if (offset + 4 > data.length)
        throw problem(`${label}: BYTES element ${elements} has a truncated 4-byte length prefix`);
      offset += 4 + view.getUint32(offset, true);
      if (offset > data.length)
        throw problem(`${label}: BYTES element ${elements} runs past the end of the tensor`);
      elements++;
    }
    if (count !== undefined && elements !== count)
      throw problem(`${label}: shape [${shape.join(', ')}] needs ${count} BYTES elements, got ${elements}`);
    return;
  }
  const size = dataTypeInfo(info.scalar).elementBytes;
  if (count !== undefined ? data.length !== count * size : data.length % size !== 0) {
    const need = count === undefined ? `a multiple of ${size}` : String(count * size);
    throw problem(
      `${label}: shape [${shape.join(', ')}] of ${kserveDatatype(dataType)} takes ${need} bytes, got ${data.length}`,
    );
  }
}

/** Validates an input tensor before it is sent (INVALID_ARGUMENT naming the input). */
export function checkInputTensor(tensor: Tensor): void {
  checkRaw(`input ${tensor.name}`, tensor.dataType, tensor.shape, tensor.data, (message) =>
    invalidArgument(message, `inputs.${tensor.name}`),
  );
}

/**
 * One output of a ModelInfer response as a Tensor: from its raw contents when the server sent them,
 * else from the typed `contents`. A response that does not fit its own datatype and shape is INTERNAL.
 */
export function readOutputTensor(
  output: ModelInferResponse_InferOutputTensor,
  raw: Uint8Array | undefined,
  where: string,
): Tensor {
  const label = `${where}: output ${output.name}`;
  const problem = (message: string) => new LatticeError('INTERNAL', message);
  const shape = output.shape.map((d) => Number(d));
  const upper = output.datatype.toUpperCase();
  if (upper === 'BF16') {
    if (!raw) throw problem(`${label}: BF16 has no typed contents field; the server must send raw contents`);
    const data = bf16ToFp32(raw, label);
    checkRaw(label, DataType.FP32, shape, data, problem);
    return { name: output.name, dataType: DataType.FP32, shape, data };
  }
  const dataType = dataTypeOfKserve(upper);
  if (dataType === undefined)
    throw problem(`${label} has datatype "${output.datatype}", which is not supported`);
  const data = raw ?? contentsBytes(output.contents, dataType, label);
  checkRaw(label, dataType, shape, data, problem);
  return { name: output.name, dataType, shape, data };
}

function bf16ToFp32(raw: Uint8Array, label: string): Uint8Array {
  if (raw.length % 2 !== 0)
    throw new LatticeError('INTERNAL', `${label}: BF16 data of odd length ${raw.length}`);
  const n = raw.length / 2;
  const out = new Uint8Array(n * 4);
  for (let i = 0; i < n; i++) {
    // bfloat16 is the high half of an IEEE float32.
    out[i * 4 + 2] = raw[i * 2]!;
    out[i * 4 + 3] = raw[i * 2 + 1]!;
  }
  return out;
}

/** The typed-contents fallback: the field matching the datatype, encoded as raw little-endian bytes. */
function contentsBytes(contents: InferTensorContents | undefined, type: DataType, label: string): Uint8Array {
  if (!contents) throw new LatticeError('INTERNAL', `${label} has neither raw nor typed contents`);
  try {
    switch (type) {
      case DataType.BOOL:
        return Uint8Array.from(contents.boolContents, (b) => (b ? 1 : 0));
      case DataType.INT8:
      case DataType.INT16:
      case DataType.INT32:
        return encodeValue(dataTypeInfo(type).vector, contents.intContents);
      case DataType.INT64:
        return encodeValue(DataType.INT64_VECTOR, contents.int64Contents);
      case DataType.UINT8:
      case DataType.UINT16:
      case DataType.UINT32:
        return encodeValue(dataTypeInfo(type).vector, contents.uintContents);
      case DataType.UINT64:
        return encodeValue(DataType.UINT64_VECTOR, contents.uint64Contents);
      case DataType.FP32:
        return encodeValue(DataType.FP32_VECTOR, contents.fp32Contents);
      case DataType.FP64:
        return encodeValue(DataType.FP64_VECTOR, contents.fp64Contents);
      case DataType.STRING: {
        const parts = contents.bytesContents;
        return joinStrings(
          parts,
          parts.reduce((sum, p) => sum + 4 + p.length, 0),
        );
      }
      default:
        throw new Error(
          `${dataTypeInfo(type).name} has no typed contents field; the server must send raw contents`,
        );
    }
  } catch (err) {
    throw new LatticeError('INTERNAL', `${label}: bad typed contents: ${describeError(err)}`);
  }
}
