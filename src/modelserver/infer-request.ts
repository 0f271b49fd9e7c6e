/**
 * Validation of a ModelInferRequest against the model it names, at the boundary: after
 * `prepareInfer` the inputs are typed arrays of the right type and shape, so the runner and the
 * batcher trust them. Every mismatch is INVALID_ARGUMENT naming the tensor and the request field.
 */
import type { InferTensorContents, ModelInferRequest } from '../gen/inference/grpc_service.js';
import { invalidArgument } from '../platform/errors.js';
import type { LoadedModel, TensorSpec, TensorValue } from './loaded-model.js';
import { decodeContents, decodeRaw, elementCount } from './tensor-codec.js';

export interface PreparedInfer {
  readonly model: LoadedModel;
  /** Every model input by name, decoded. */
  readonly inputs: ReadonlyMap<string, TensorValue>;
  /** Rows on the first dimension, which every input shares; undefined when the model does not batch. */
  readonly rows: number | undefined;
  /** The outputs to answer with, in response order (the request's order, else the model's). */
  readonly outputs: readonly TensorSpec[];
  /** Equal for requests whose inputs have the same dimensions after the first: those can be stacked. */
  readonly batchKey: string;
}

const formatShape = (shape: readonly number[]): string => `[${shape.join(', ')}]`;

function hasValues(contents: InferTensorContents | undefined): contents is InferTensorContents {
  return contents !== undefined && Object.values(contents).some((field) => (field as unknown[]).length > 0);
}

function checkShape(spec: TensorSpec, requested: readonly bigint[], index: number): number[] {
  const field = `inputs[${index}].shape`;
  const shape = requested.map((dim) => {
    if (dim < 0n || dim > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidArgument(
        `input "${spec.name}": shape [${requested.join(', ')}] has a dimension out of range`,
        field,
      );
    }
    return Number(dim);
  });
  const fits =
    shape.length === spec.shape.length && spec.shape.every((dim, i) => dim === -1 || dim === shape[i]);
  if (!fits) {
    throw invalidArgument(
      `input "${spec.name}": shape ${formatShape(shape)} does not match the model's ${formatShape(spec.shape)} (-1: any size)`,
      field,
    );
  }
  return shape;
}

/** Checks `request` against `model` and decodes its inputs; INVALID_ARGUMENT on any mismatch. */
export function prepareInfer(model: LoadedModel, request: ModelInferRequest): PreparedInfer {
  const raw = request.rawInputContents;
  if (raw.length > 0 && raw.length !== request.inputs.length) {
    throw invalidArgument(
      `raw_input_contents has ${raw.length} entries for ${request.inputs.length} inputs; send one per input, in order`,
      'raw_input_contents',
    );
  }
  const inputs = new Map<string, TensorValue>();
  request.inputs.forEach((input, index) => {
    const spec = model.inputByName.get(input.name);
    if (!spec) {
      throw invalidArgument(
        `model "${model.name}" has no input "${input.name}" (inputs: ${model.inputs.map((s) => s.name).join(', ')})`,
        `inputs[${index}].name`,
      );
    }
    if (inputs.has(input.name)) {
      throw invalidArgument(`input "${input.name}" is given twice`, `inputs[${index}].name`);
    }
    if (input.datatype !== spec.type.kserve) {
      throw invalidArgument(
        `input "${input.name}": datatype "${input.datatype}" does not match the model's ${spec.type.kserve}`,
        `inputs[${index}].datatype`,
      );
    }
    const shape = checkShape(spec, input.shape, index);
    const what = `input "${input.name}"`;
    let data: TensorValue['data'];
    if (raw.length > 0) {
      if (hasValues(input.contents)) {
        throw invalidArgument(
          `${what}: both contents and raw_input_contents are set; send one`,
          `inputs[${index}].contents`,
        );
      }
      data = decodeRaw(spec.type, raw[index]!, elementCount(shape), what);
    } else if (input.contents) {
      data = decodeContents(spec.type, input.contents, elementCount(shape), what);
    } else {
      throw invalidArgument(`${what} has no data: set raw_input_contents or contents`, `inputs[${index}]`);
    }
    inputs.set(input.name, { data, shape });
  });
  for (const spec of model.inputs) {
    if (!inputs.has(spec.name)) {
      throw invalidArgument(
        `missing input "${spec.name}" (model "${model.name}" needs: ${model.inputs.map((s) => s.name).join(', ')})`,
        'inputs',
      );
    }
  }

  let rows: number | undefined;
  let batchKey = '';
  if (model.batchable) {
    const first = model.inputs[0]!;
    rows = inputs.get(first.name)!.shape[0]!;
    for (const spec of model.inputs) {
      const shape = inputs.get(spec.name)!.shape;
      if (shape[0] !== rows) {
        throw invalidArgument(
          `input "${spec.name}": first dimension ${shape[0]} differs from input "${first.name}"'s ${rows}; inputs share the batch dimension`,
          'inputs',
        );
      }
      batchKey += `${formatShape(shape.slice(1))};`;
    }
    const max = model.config.maxBatchSize;
    if (max > 0 && rows > max) {
      throw invalidArgument(
        `model "${model.name}" takes at most ${max} rows per request; this one has ${rows}`,
        'inputs',
      );
    }
  }

  const outputs: TensorSpec[] = [];
  if (request.outputs.length === 0) outputs.push(...model.outputs);
  request.outputs.forEach((requested, index) => {
    const spec = model.outputByName.get(requested.name);
    if (!spec) {
      throw invalidArgument(
        `model "${model.name}" has no output "${requested.name}" (outputs: ${model.outputs.map((s) => s.name).join(', ')})`,
        `outputs[${index}].name`,
      );
    }
    if (outputs.includes(spec)) {
      throw invalidArgument(`output "${requested.name}" is requested twice`, `outputs[${index}].name`);
    }
    outputs.push(spec);
  });
  return { model, inputs, rows, outputs, batchKey };
}
