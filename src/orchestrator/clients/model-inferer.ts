import type { DataType } from '../../datatypes/data-type.js';

/** A tensor as KServe v2 carries it in `raw_input_contents` / `raw_output_contents`. */
export interface Tensor {
  name: string;
  dataType: DataType;
  /** Dimensions; the first is the batch (rows). */
  shape: readonly number[];
  /** Row-major little-endian elements (STRING: each element as a 4-byte length then its bytes). */
  data: Uint8Array;
}

export interface InferRequest {
  modelName: string;
  modelVersion: string;
  inputs: readonly Tensor[];
  /** Output tensors wanted, by name. */
  outputs: readonly string[];
}

export interface InferCallOptions {
  /** The request's: calls sharing it are one caller's. */
  signal: AbortSignal;
  /** Epoch milliseconds: the request's deadline. */
  deadline: number;
  /** The call's own timeout (the component's `deadline_ms`) from when it is made; absent = `deadline` alone. */
  timeoutMs?: number;
}

/**
 * The port a ModelServingComponent scores through: KServe v2 `ModelInfer` against one endpoint
 * (`target`, e.g. `ranker-a:8001`), without the transport. The gRPC client and in-process fakes
 * implement it. Resolves to the output tensors by name.
 */
export interface ModelInferer {
  infer(target: string, request: InferRequest, options: InferCallOptions): Promise<readonly Tensor[]>;
}
