/** Precision of the values sent and of the computation. */
export type ComputePrecision = 'FP32' | 'FP64';

export interface RemoteComputeRequest {
  /** Name of the expression the compute server holds. */
  computeId: string;
  /** Column names: `schema[0]` names the id column, the others the expression's variables. */
  schema: readonly string[];
  /** One id per row, sent as its UTF-8 bytes (opaque to the server, echoed back). */
  ids: readonly string[];
  /**
   * One column per variable (`schema[1…]`), one value per id, in the precision of `dataType`:
   * Float32Array for FP32, Float64Array for FP64 (typically views of the matrix's columns).
   */
  columns: readonly (Float32Array | Float64Array)[];
  dataType: ComputePrecision;
}

export interface RemoteComputeOptions {
  /** The request's: calls sharing it are one caller's. */
  signal: AbortSignal;
  /** Epoch milliseconds: the request's deadline. */
  deadline: number;
  /** The call's own timeout (the component's `deadline_ms`) from when it is made; absent = `deadline` alone. */
  timeoutMs?: number;
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
