/** Precision of the values sent and of the computation. */
export type ComputePrecision = 'FP32' | 'FP64';

export interface RemoteComputeRequest {
  /** Name of the expression the compute server holds. */
  computeId: string;
  /** Column names: `schema[0]` names the id column, the others the expression's variables. */
  schema: readonly string[];
  /**
   * One row per entity: the id's UTF-8 bytes (opaque, echoed back), then one little-endian value of
   * `dataType` (4 or 8 bytes) per variable, aligned with `schema`.
   */
  rows: readonly (readonly Uint8Array[])[];
  dataType: ComputePrecision;
}

export interface RemoteComputeOptions {
  signal: AbortSignal;
  /** Epoch milliseconds by which this call must answer. */
  deadline: number;
}

/**
 * The port a remote ComputeComponent evaluates through: `numerix.Numerix/Compute` against one
 * server (`target`, `host:port`), without the transport. Resolves to one score per row, in row order.
 */
export interface RemoteCompute {
  compute(
    target: string,
    request: RemoteComputeRequest,
    options: RemoteComputeOptions,
  ): Promise<Float64Array>;
}
