/**
 * Tiny ONNX models built in code with onnx-proto (the ONNX protobuf schema as protobufjs classes):
 * test and demo models need no binary fixtures and no Python. Each builder returns the model bytes
 * and the parameters it used, so a caller can compute the expected outputs independently.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { seededRandom } from '../platform/random.js';
import type { ModelConfig } from './model-config.js';
import { modelConfigFileName, modelFilePath } from './repository-layout.js';

const { onnx } = onnxProto;
const Elem = onnx.TensorProto.DataType;
type Dim = number | string;

/** ONNX element types the builders use. */
export const OnnxType = {
  FLOAT: Elem.FLOAT,
  FLOAT16: Elem.FLOAT16,
  INT64: Elem.INT64,
  UINT64: Elem.UINT64,
  STRING: Elem.STRING,
} as const;

/** Graph input/output: a name, an element type and dims (strings are symbolic, e.g. the batch `N`). */
export function valueInfo(
  name: string,
  elemType: number,
  dims: readonly Dim[],
): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
      },
    },
  };
}

export function floatInitializer(
  name: string,
  dims: number[],
  values: ArrayLike<number>,
): onnxProto.onnx.ITensorProto {
  return { name, dims, dataType: Elem.FLOAT, floatData: Array.from(values) };
}

export function int64Initializer(
  name: string,
  dims: number[],
  values: number[],
): onnxProto.onnx.ITensorProto {
  return { name, dims, dataType: Elem.INT64, int64Data: values };
}

/** A graph node; `ints` become INT attributes (e.g. Cast's `to`, ReduceSum's `keepdims`). */
export function node(
  opType: string,
  input: string[],
  output: string[],
  ints: Record<string, number> = {},
): onnxProto.onnx.INodeProto {
  const attribute = Object.entries(ints).map(([name, i]) => ({
    name,
    type: onnx.AttributeProto.AttributeType.INT,
    i,
  }));
  return { opType, input, output, attribute };
}

/** Serializes a graph as an ONNX model (IR 8, default-domain opset 13). */
export function encodeModel(graph: onnxProto.onnx.IGraphProto): Uint8Array {
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'lattice-onnx-builder',
    opsetImport: [{ domain: '', version: 13 }],
    graph,
  });
  return onnx.ModelProto.encode(model).finish();
}

export { seededRandom } from '../platform/random.js';

/** `count` float32 weights uniform in [-1, 1) from `seed`. */
export function seededWeights(count: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: count }, () => random() * 2 - 1);
}

export interface LogisticRanker {
  bytes: Uint8Array;
  /** `features` weights (the model's W, shape [k, 1]). */
  weights: Float32Array;
  bias: number;
}

/**
 * `score = sigmoid(features · W + b)`: input `features` FP32 `[N, k]`, output `score` FP32 `[N, 1]`.
 * Weights are the ones given, else drawn from `seed`.
 */
export function logisticRanker(options: {
  features: number;
  weights?: ArrayLike<number>;
  bias?: number;
  seed?: number;
}): LogisticRanker {
  const k = options.features;
  const weights = options.weights ? Float32Array.from(options.weights) : seededWeights(k, options.seed ?? 1);
  if (weights.length !== k)
    throw new RangeError(`logisticRanker: ${weights.length} weights for ${k} features`);
  const bias = Math.fround(options.bias ?? 0.1);
  const bytes = encodeModel({
    name: 'logistic_ranker',
    input: [valueInfo('features', Elem.FLOAT, ['N', k])],
    output: [valueInfo('score', Elem.FLOAT, ['N', 1])],
    initializer: [floatInitializer('W', [k, 1], weights), floatInitializer('b', [1], [bias])],
    node: [
      node('MatMul', ['features', 'W'], ['logit_raw']),
      node('Add', ['logit_raw', 'b'], ['logit']),
      node('Sigmoid', ['logit'], ['score']),
    ],
  });
  return { bytes, weights, bias };
}

/**
 * A slate scorer: one answer row for a whole slate (or pair) of `N` targets, from the logistic
 * ranker's logits `z = features · W + b` (input `features` FP32 `[N, k]`). Outputs, each FP32
 * `[1, 1]`: `slate_score`, the mean of the targets' sigmoid(z) (the slate's expected click-through),
 * and `preference`, sigmoid(z_first − z_last): for a pair, the probability that its first target
 * ranks above its second (Bradley–Terry on the ranker's scores); 0.5 for a slate of one. Serve it
 * unbatched: stacking several slates along the first dimension would score them as one.
 */
export function slateScorer(options: { features: number; weights: ArrayLike<number>; bias: number }): {
  bytes: Uint8Array;
} {
  const k = options.features;
  if (options.weights.length !== k)
    throw new RangeError(`slateScorer: ${options.weights.length} weights for ${k} features`);
  const bytes = encodeModel({
    name: 'slate_scorer',
    input: [valueInfo('features', Elem.FLOAT, ['N', k])],
    output: [valueInfo('slate_score', Elem.FLOAT, [1, 1]), valueInfo('preference', Elem.FLOAT, [1, 1])],
    initializer: [
      floatInitializer('W', [k, 1], options.weights),
      floatInitializer('b', [1], [options.bias]),
      int64Initializer('first', [1], [0]),
      int64Initializer('last', [1], [-1]),
    ],
    node: [
      node('MatMul', ['features', 'W'], ['logit_raw']),
      node('Add', ['logit_raw', 'b'], ['logit']),
      node('Sigmoid', ['logit'], ['prob']),
      // No axes: the mean over every element of [N, 1], kept as [1, 1].
      node('ReduceMean', ['prob'], ['slate_score'], { keepdims: 1 }),
      node('Gather', ['logit', 'first'], ['logit_first'], { axis: 0 }),
      node('Gather', ['logit', 'last'], ['logit_last'], { axis: 0 }),
      node('Sub', ['logit_first', 'logit_last'], ['margin']),
      node('Sigmoid', ['margin'], ['preference']),
    ],
  });
  return { bytes };
}

export interface TwoHeadRanker extends LogisticRanker {
  /** Embedding projection, row-major `[k, 2]`. */
  projection: Float32Array;
  /** Embedding offset, `[2]`. */
  offset: Float32Array;
}

/**
 * Two outputs from one input, to exercise multi-output and vector outputs: `score` FP32 `[N, 1]` =
 * sigmoid(features · W + b) and `embedding` FP32 `[N, 2]` = features · P + c.
 */
export function twoHeadRanker(options: { features: number; seed?: number }): TwoHeadRanker {
  const k = options.features;
  const seed = options.seed ?? 2;
  const weights = seededWeights(k, seed);
  const projection = seededWeights(k * 2, seed + 1000);
  const offset = Float32Array.from([0.25, -0.5]);
  const bias = Math.fround(-0.2);
  const bytes = encodeModel({
    name: 'two_head_ranker',
    input: [valueInfo('features', Elem.FLOAT, ['N', k])],
    output: [valueInfo('score', Elem.FLOAT, ['N', 1]), valueInfo('embedding', Elem.FLOAT, ['N', 2])],
    initializer: [
      floatInitializer('W', [k, 1], weights),
      floatInitializer('b', [1], [bias]),
      floatInitializer('P', [k, 2], projection),
      floatInitializer('c', [2], offset),
    ],
    node: [
      node('MatMul', ['features', 'W'], ['logit_raw']),
      node('Add', ['logit_raw', 'b'], ['logit']),
      node('Sigmoid', ['logit'], ['score']),
      node('MatMul', ['features', 'P'], ['projected']),
      node('Add', ['projected', 'c'], ['embedding']),
    ],
  });
  return { bytes, weights, bias, projection, offset };
}

export interface TypedRanker {
  bytes: Uint8Array;
  /** Weights of the ids, `[m]`. */
  weights: Float32Array;
  bias: number;
}

/**
 * Integer and half-precision tensors: inputs `ids` INT64 `[N, m]` and `scale` FP16 `[N, 1]`;
 * outputs `score` FP16 `[N, 1]` = fp16(sigmoid(float(ids) · W + b) × float(scale)) and `id_sum`
 * INT64 `[N, 1]` = Σ ids of the row.
 */
export function typedRanker(options: { ids: number; seed?: number }): TypedRanker {
  const m = options.ids;
  const weights = Float32Array.from(seededWeights(m, options.seed ?? 3), (w) => w / 8);
  const bias = Math.fround(0.05);
  const bytes = encodeModel({
    name: 'typed_ranker',
    input: [valueInfo('ids', Elem.INT64, ['N', m]), valueInfo('scale', Elem.FLOAT16, ['N', 1])],
    output: [valueInfo('score', Elem.FLOAT16, ['N', 1]), valueInfo('id_sum', Elem.INT64, ['N', 1])],
    initializer: [
      floatInitializer('W', [m, 1], weights),
      floatInitializer('b', [1], [bias]),
      int64Initializer('sum_axes', [1], [1]),
    ],
    node: [
      node('Cast', ['ids'], ['ids_f'], { to: Elem.FLOAT }),
      node('MatMul', ['ids_f', 'W'], ['logit_raw']),
      node('Add', ['logit_raw', 'b'], ['logit']),
      node('Sigmoid', ['logit'], ['prob']),
      node('Cast', ['scale'], ['scale_f'], { to: Elem.FLOAT }),
      node('Mul', ['prob', 'scale_f'], ['score_f']),
      node('Cast', ['score_f'], ['score'], { to: Elem.FLOAT16 }),
      node('ReduceSum', ['ids', 'sum_axes'], ['id_sum'], { keepdims: 1 }),
    ],
  });
  return { bytes, weights, bias };
}

/** BYTES in and out: `text` `[N, 1]` → `text_out` `[N, 1]`, the same strings (ONNX Identity). */
export function textEcho(): { bytes: Uint8Array } {
  const bytes = encodeModel({
    name: 'text_echo',
    input: [valueInfo('text', Elem.STRING, ['N', 1])],
    output: [valueInfo('text_out', Elem.STRING, ['N', 1])],
    node: [node('Identity', ['text'], ['text_out'])],
  });
  return { bytes };
}

/**
 * 64-bit integers in and out, unchanged (ONNX Identity): `signed` INT64 `[N, 1]` → `signed_out`,
 * `unsigned` UINT64 `[N, 1]` → `unsigned_out`. Shows that values beyond 2^53 cross both ways exactly.
 */
export function integerEcho(): { bytes: Uint8Array } {
  const bytes = encodeModel({
    name: 'integer_echo',
    input: [valueInfo('signed', Elem.INT64, ['N', 1]), valueInfo('unsigned', Elem.UINT64, ['N', 1])],
    output: [valueInfo('signed_out', Elem.INT64, ['N', 1]), valueInfo('unsigned_out', Elem.UINT64, ['N', 1])],
    node: [node('Identity', ['signed'], ['signed_out']), node('Identity', ['unsigned'], ['unsigned_out'])],
  });
  return { bytes };
}

/**
 * Writes `bytes` to `<repository>/<model>/<version>/model.onnx` (and `config.json` beside the
 * versions when `config` is given), creating directories; returns the model file's path.
 */
export function writeModel(
  repository: string,
  model: string,
  version: number,
  bytes: Uint8Array,
  config?: Partial<ModelConfig>,
): string {
  const path = modelFilePath(repository, model, version);
  mkdirSync(join(repository, model, String(version)), { recursive: true });
  writeFileSync(path, bytes);
  if (config)
    writeFileSync(join(repository, model, modelConfigFileName), `${JSON.stringify(config, null, 2)}\n`);
  return path;
}
