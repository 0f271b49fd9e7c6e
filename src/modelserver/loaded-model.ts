import * as ort from 'onnxruntime-node';
import { describeError, LatticeError } from '../platform/errors.js';
import type { ModelConfig } from './model-config.js';
import type { TensorData, TensorType } from './tensor-types.js';
import { tensorTypeOfOrt } from './tensor-types.js';

/** Name, element type and shape of one model input or output, as the session reports them. */
export interface TensorSpec {
  readonly name: string;
  readonly type: TensorType;
  /** Dimensions; -1 where the model leaves the size open (a symbolic or unknown dimension). */
  readonly shape: readonly number[];
}

/** A tensor ready for or returned by a run: its elements and dimensions. */
export interface TensorValue {
  readonly data: TensorData;
  readonly shape: readonly number[];
}

/** Session options every model gets; CPU only (the package ships the CPU build). */
export const defaultSessionOptions: ort.InferenceSession.SessionOptions = { executionProviders: ['cpu'] };

function specOf(metadata: ort.InferenceSession.ValueMetadata, path: string): TensorSpec {
  if (!metadata.isTensor) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${path}: "${metadata.name}" is not a tensor; only tensors are served`,
    );
  }
  const type = tensorTypeOfOrt(metadata.type);
  if (!type) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${path}: "${metadata.name}" has element type ${metadata.type}, which KServe v2 cannot carry`,
    );
  }
  const shape = metadata.shape.map((dim) => (typeof dim === 'number' && dim >= 0 ? dim : -1));
  return { name: metadata.name, type, shape };
}

/**
 * One version of one model with its onnxruntime session. Counts the runs it made (batching shows as
 * fewer runs than requests) and, once retired by a reload, releases its session when the last
 * in-flight run ends.
 */
export class LoadedModel {
  /** Session runs so far. */
  runs = 0;
  readonly inputByName: ReadonlyMap<string, TensorSpec>;
  readonly outputByName: ReadonlyMap<string, TensorSpec>;
  /** True when every input and output has an open first dimension, so requests can be stacked on it. */
  readonly batchable: boolean;
  private inflight = 0;
  private retired = false;

  private constructor(
    readonly name: string,
    readonly version: number,
    readonly path: string,
    readonly config: ModelConfig,
    private readonly session: ort.InferenceSession,
    readonly inputs: readonly TensorSpec[],
    readonly outputs: readonly TensorSpec[],
  ) {
    this.inputByName = new Map(inputs.map((spec) => [spec.name, spec]));
    this.outputByName = new Map(outputs.map((spec) => [spec.name, spec]));
    this.batchable =
      inputs.length > 0 &&
      [...inputs, ...outputs].every((spec) => spec.shape.length > 0 && spec.shape[0] === -1);
  }

  /** Creates the session for `path`; FAILED_PRECONDITION naming the file when it cannot be loaded. */
  static async load(
    name: string,
    version: number,
    path: string,
    config: ModelConfig,
    sessionOptions: ort.InferenceSession.SessionOptions = defaultSessionOptions,
  ): Promise<LoadedModel> {
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(path, sessionOptions);
    } catch (err) {
      throw new LatticeError('FAILED_PRECONDITION', `cannot load model ${path}: ${describeError(err)}`, {
        field: path,
        cause: err,
      });
    }
    try {
      const inputs = session.inputMetadata.map((m) => specOf(m, path));
      const outputs = session.outputMetadata.map((m) => specOf(m, path));
      return new LoadedModel(name, version, path, config, session, inputs, outputs);
    } catch (err) {
      await session.release();
      throw err;
    }
  }

  /** Runs the session on `inputs`, returning the `outputs` asked for (every output when empty). */
  async run(
    inputs: ReadonlyMap<string, TensorValue>,
    outputs: readonly string[],
  ): Promise<Map<string, TensorValue>> {
    const feeds: Record<string, ort.Tensor> = {};
    for (const [name, value] of inputs) {
      const spec = this.inputByName.get(name)!;
      feeds[name] = halfFloatCodes(new ort.Tensor(spec.type.ort, value.data, value.shape));
    }
    const fetches = outputs.length > 0 ? outputs : this.outputs.map((spec) => spec.name);
    const done = this.hold();
    this.runs++;
    try {
      const result = await this.session.run(feeds, fetches);
      const values = new Map<string, TensorValue>();
      for (const name of fetches) {
        const tensor = result[name]!;
        values.set(name, { data: uint16Codes(tensor.data) as TensorData, shape: tensor.dims });
      }
      return values;
    } catch (err) {
      throw new LatticeError(
        'INTERNAL',
        `model ${this.name} version ${this.version}: onnxruntime failed: ${describeError(err)}`,
        { cause: err },
      );
    } finally {
      done();
    }
  }

  /**
   * Keeps the session open, even if a reload retires this version meanwhile, until the returned
   * function is called: for work that holds the model across awaits (a request queued for a batch).
   */
  hold(): () => void {
    this.inflight++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.inflight--;
      // The last holder of a retired version closes it; nobody is left to tell if that fails.
      if (this.retired && this.inflight === 0) this.session.release().catch(() => {});
    };
  }

  /** Releases the session now, or when the last run or hold in flight ends. */
  async retire(): Promise<void> {
    if (this.retired) return;
    this.retired = true;
    if (this.inflight === 0) await this.session.release();
  }
}

/**
 * Node 24 and later have Float16Array: onnxruntime-node 1.30 then turns FP16 tensors into one, and
 * its binding reads no bytes from it. FP16 stays uint16 codes on both sides, as the KServe wire
 * carries them.
 */
function halfFloatCodes(tensor: ort.Tensor): ort.Tensor {
  const data = (tensor as unknown as { cpuData?: unknown }).cpuData;
  if (tensor.type === 'float16' && !(data instanceof Uint16Array) && ArrayBuffer.isView(data)) {
    (tensor as unknown as { cpuData: Uint16Array }).cpuData = uint16Codes(data) as Uint16Array;
  }
  return tensor;
}

/** A Float16Array's codes as a Uint16Array over the same bytes; anything else as it is. */
function uint16Codes(data: unknown): unknown {
  const Float16 = (globalThis as { Float16Array?: new () => Uint16Array }).Float16Array;
  if (Float16 === undefined || !(data instanceof Float16)) return data;
  const view = data as unknown as { buffer: ArrayBuffer; byteOffset: number; length: number };
  return new Uint16Array(view.buffer, view.byteOffset, view.length);
}
