import type * as ort from 'onnxruntime-node';
import { DataType, dataTypeInfo } from '../datatypes/index.js';

/** Typed arrays onnxruntime-node holds fixed-width tensor data in. */
export type FixedTensorArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

/** Tensor elements as onnxruntime-node holds them: a typed array, or strings for BYTES. */
export type TensorData = FixedTensorArray | string[];

interface FixedArrayConstructor {
  readonly BYTES_PER_ELEMENT: number;
  new (length: number): FixedTensorArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): FixedTensorArray;
}

/** One element type as the three sides name it: the KServe wire, Lattice's DataType, onnxruntime. */
export interface TensorType {
  /** KServe v2 / Triton datatype string, e.g. `FP32`, `INT64`, `BYTES`. */
  readonly kserve: string;
  readonly dataType: DataType;
  readonly ort: ort.Tensor.Type;
  /** Bytes per element on the wire; 0 for BYTES (each element carries a 4-byte length prefix). */
  readonly elementBytes: number;
  /** The typed array for fixed-width types; undefined for BYTES. */
  readonly array: FixedArrayConstructor | undefined;
}

const table: Array<[string, DataType, ort.Tensor.Type, FixedArrayConstructor | undefined]> = [
  ['BOOL', DataType.BOOL, 'bool', Uint8Array],
  ['UINT8', DataType.UINT8, 'uint8', Uint8Array],
  ['UINT16', DataType.UINT16, 'uint16', Uint16Array],
  ['UINT32', DataType.UINT32, 'uint32', Uint32Array],
  ['UINT64', DataType.UINT64, 'uint64', BigUint64Array],
  ['INT8', DataType.INT8, 'int8', Int8Array],
  ['INT16', DataType.INT16, 'int16', Int16Array],
  ['INT32', DataType.INT32, 'int32', Int32Array],
  ['INT64', DataType.INT64, 'int64', BigInt64Array],
  // Node 20 has no Float16Array: onnxruntime-node takes and returns half floats as raw uint16 codes.
  ['FP16', DataType.FP16, 'float16', Uint16Array],
  ['FP32', DataType.FP32, 'float32', Float32Array],
  ['FP64', DataType.FP64, 'float64', Float64Array],
  ['BYTES', DataType.STRING, 'string', undefined],
];

const byKserve = new Map<string, TensorType>();
const byOrt = new Map<string, TensorType>();
for (const [kserve, dataType, ortType, array] of table) {
  const type: TensorType = {
    kserve,
    dataType,
    ort: ortType,
    elementBytes: dataTypeInfo(dataType).elementBytes,
    array,
  };
  byKserve.set(kserve, type);
  byOrt.set(ortType, type);
}

/** The type a KServe datatype string names (exact, upper case, as on the wire); undefined if none. */
export const tensorTypeOfKserve = (datatype: string): TensorType | undefined => byKserve.get(datatype);

/** The type of an onnxruntime tensor type; undefined for types the wire cannot carry (bfloat16, int4…). */
export const tensorTypeOfOrt = (type: string): TensorType | undefined => byOrt.get(type);

/** The KServe datatypes this server reads and writes. */
export const supportedKserveTypes: readonly string[] = table.map(([kserve]) => kserve);
