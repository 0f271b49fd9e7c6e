import { DataType, dataTypeInfo, parseDataType } from '../../datatypes/data-type.js';
import { readNumbers, writeNumbers } from '../../datatypes/number-runs.js';
import { describeError, LatticeError } from '../../platform/errors.js';
import type { ModelInferer, Tensor } from '../clients/index.js';
import type { ModelServingComponentConfig } from '../config/index.js';
import type { DagComponent } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { columnNumbers } from '../matrix/column-numbers.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';
import { calibrate } from './calibration.js';

interface Gathered {
  input: InputPlan;
  values: Float32Array | Float64Array;
  perRow: number;
}

interface InputPlan {
  name: string;
  dataType: DataType;
  features: readonly string[];
  shape: readonly number[];
}

/** Picks an endpoint by weighted choice over `percentage`; `random` is injectable for tests. */
export function routeEndpoint(
  endpoints: readonly { target: string; percentage: number }[],
  random: number,
): string {
  let point = random * 100;
  for (const endpoint of endpoints) {
    point -= endpoint.percentage;
    if (point < 0) return endpoint.target;
  }
  return endpoints[endpoints.length - 1]!.target;
}

/**
 * ModelServingComponent: builds one tensor per configured input from matrix columns (any numeric
 * type converted to the input's, vectors flattened in order), splits the rows into `batch_size`
 * batches sent concurrently (each to an endpoint chosen by `percentage`, bounded by `deadline_ms`
 * and the request deadline), calibrates, and writes each output value into its own row's column.
 * A failed batch leaves exactly its own rows defaulted and marked; scores never shift rows. With
 * `slate`, one inference per slate over that slate's target rows; the first output row is the
 * slate's score.
 */
export class ModelServingComponent implements DagComponent<ExecutionContext> {
  readonly name: string;
  readonly required: boolean;
  private readonly inputs: readonly InputPlan[];
  private readonly outputNames: readonly string[];

  constructor(
    private readonly config: ModelServingComponentConfig,
    private readonly inferer: ModelInferer,
    private readonly random: () => number = Math.random,
  ) {
    this.name = config.name;
    this.required = config.required;
    this.inputs = config.inputs.map((input) => ({
      name: input.name,
      dataType: parseDataType(input.data_type.toUpperCase() === 'BYTES' ? 'STRING' : input.data_type),
      features: input.features,
      shape: input.shape,
    }));
    this.outputNames = config.outputs.map((o) => o.name);
    for (const output of config.outputs) {
      const type =
        output.data_type.toUpperCase() === 'BYTES' ? DataType.STRING : parseDataType(output.data_type);
      if (!dataTypeInfo(type).numeric) {
        throw new LatticeError(
          'INVALID_ARGUMENT',
          `output ${output.name}: ${output.data_type} outputs are not supported; scores must be numeric`,
        );
      }
    }
  }

  async run(context: ExecutionContext, signal: AbortSignal): Promise<void> {
    const { matrix } = context;
    const deadline = Math.min(context.deadline, Date.now() + this.config.deadline_ms);
    if (this.config.slate) {
      if (context.slate) await this.runSlates(context, signal, deadline);
      return;
    }
    const sources = this.inputs.map((input) => this.gather(matrix, input, null));
    const rows = matrix.rowCount;
    const batch = this.config.batch_size;
    const calls: Promise<unknown>[] = [];
    let failures = 0;
    let lastError: unknown;
    for (let start = 0; start < rows; start += batch) {
      const end = Math.min(rows, start + batch);
      calls.push(
        this.infer(sources, start, end, signal, deadline)
          .then((outputs) => this.writeOutputs(matrix, outputs, end - start, (r) => start + r))
          .catch((err: unknown) => {
            failures++;
            lastError = err;
            const reason = `${this.name}: model call failed: ${describeError(err)}`;
            for (let row = start; row < end; row++) matrix.addRowError(row, reason);
          }),
      );
    }
    await Promise.all(calls);
    if (failures > 0 && failures === calls.length) throw lastError;
  }

  private async runSlates(context: ExecutionContext, signal: AbortSignal, deadline: number): Promise<void> {
    const slate = context.slate!;
    const results = await Promise.allSettled(
      slate.slateTargetIndices.map(async (indices, s) => {
        const sources = this.inputs.map((input) => this.gather(context.matrix, input, indices));
        const outputs = await this.infer(sources, 0, indices.length, signal, deadline);
        this.writeOutputs(slate, outputs, 1, () => s);
      }),
    );
    let failures = 0;
    results.forEach((result, s) => {
      if (result.status === 'rejected') {
        failures++;
        slate.addRowError(s, `${this.name}: model call failed: ${describeError(result.reason)}`);
      }
    });
    if (failures > 0 && failures === results.length)
      throw new LatticeError('UNAVAILABLE', `${this.name}: every slate failed`);
  }

  /**
   * An input's values for the given rows (all rows, or a slate's target rows), row-major
   * `rows × perRow`. FP32 and FP64 inputs are gathered in their own precision, so a batch's tensor
   * is a view of this array; other types are staged as FP64 and encoded per batch.
   */
  private gather(matrix: ComponentMatrix, input: InputPlan, rowsOf: Int32Array | null): Gathered {
    const rowCount = rowsOf ? rowsOf.length : matrix.rowCount;
    const widths = input.features.map((name) => {
      if (!matrix.hasByteColumn(name)) return 1;
      const spec = matrix.byteColumn(name).spec;
      return dataTypeInfo(spec.dataType).isVector ? spec.vectorDim : 1;
    });
    const perRow = widths.reduce((a, b) => a + b, 0);
    const expected = input.shape.reduce((a, d) => (d > 0 ? a * d : a), 1);
    if (!input.shape.includes(-1) && expected !== perRow) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `${this.name}: input ${input.name} has shape [${input.shape.join(', ')}] but its features give ${perRow} values per row`,
      );
    }
    const precision = input.dataType === DataType.FP32 ? 'fp32' : 'fp64';
    const values =
      precision === 'fp32' ? new Float32Array(rowCount * perRow) : new Float64Array(rowCount * perRow);
    let offset = 0;
    input.features.forEach((name, f) => {
      const width = widths[f]!;
      const vector =
        matrix.hasByteColumn(name) && dataTypeInfo(matrix.byteColumn(name).spec.dataType).isVector;
      if (!vector) {
        const column = columnNumbers(matrix, name, precision);
        if (rowsOf) for (let r = 0; r < rowCount; r++) values[r * perRow + offset] = column[rowsOf[r]!]!;
        else for (let r = 0; r < rowCount; r++) values[r * perRow + offset] = column[r]!;
      } else {
        const column = matrix.byteColumn(name);
        if (!rowsOf && column.width !== undefined && column.spec.dataType !== DataType.BOOL_VECTOR) {
          // Fixed-width vectors lie back to back: one read of the whole column, then strided.
          const all =
            precision === 'fp32' ? new Float32Array(rowCount * width) : new Float64Array(rowCount * width);
          readNumbers(column.spec.dataType, column.data, rowCount * width, all);
          for (let r = 0; r < rowCount; r++) {
            const to = r * perRow + offset;
            for (let i = 0; i < width; i++) values[to + i] = all[r * width + i]!;
          }
          offset += width;
          return;
        }
        for (let r = 0; r < rowCount; r++) {
          readNumbers(
            column.spec.dataType,
            column.get(rowsOf ? rowsOf[r]! : r),
            width,
            values,
            r * perRow + offset,
          );
        }
      }
      offset += width;
    });
    return { input, values, perRow };
  }

  private infer(
    sources: readonly Gathered[],
    start: number,
    end: number,
    signal: AbortSignal,
    deadline: number,
  ): Promise<readonly Tensor[]> {
    const rows = end - start;
    const inputs: Tensor[] = sources.map(({ input, values, perRow }) => {
      const count = rows * perRow;
      const shape = [rows, ...input.shape.map((d) => (d === -1 ? perRow : d))];
      const native =
        (input.dataType === DataType.FP32 && values instanceof Float32Array) ||
        (input.dataType === DataType.FP64 && values instanceof Float64Array);
      if (native) {
        const bytes = values.BYTES_PER_ELEMENT;
        return {
          name: input.name,
          dataType: input.dataType,
          shape,
          data: new Uint8Array(values.buffer, values.byteOffset + start * perRow * bytes, count * bytes),
        };
      }
      const data = new Uint8Array(count * dataTypeInfo(input.dataType).elementBytes);
      writeNumbers(input.dataType, values.subarray(start * perRow, end * perRow), count, data);
      return { name: input.name, dataType: input.dataType, shape, data };
    });
    const target = routeEndpoint(this.config.endpoints, this.random());
    return this.inferer.infer(
      target,
      {
        modelName: this.config.model_name,
        modelVersion: this.config.model_version,
        inputs,
        outputs: this.outputNames,
      },
      { signal, deadline },
    );
  }

  /** Writes `rows` rows of each output into its columns; `rowOf` maps a batch row to a matrix row. */
  private writeOutputs(
    matrix: ComponentMatrix,
    outputs: readonly Tensor[],
    rows: number,
    rowOf: (r: number) => number,
  ): void {
    for (const output of this.config.outputs) {
      const tensor = outputs.find((t) => t.name === output.name);
      if (!tensor)
        throw new LatticeError('UNAVAILABLE', `${this.name}: the model returned no output "${output.name}"`);
      const perColumn = Math.max(1, output.vector_dim);
      const perRow = output.columns.length * perColumn;
      const need = rows * perRow;
      const values = new Float64Array(need);
      readNumbers(tensor.dataType, tensor.data, need, values);
      if (this.config.calibration) calibrate(values, this.config.calibration);
      output.columns.forEach((name, c) => {
        const column = matrix.byteColumn(name);
        const view = perColumn === 1 ? (column.float32() ?? column.float64()) : undefined;
        for (let r = 0; r < rows; r++) {
          const row = rowOf(r);
          const at = r * perRow + c * perColumn;
          if (view) view[row] = values[at]!;
          else
            writeNumbers(
              column.spec.dataType,
              values.subarray(at, at + perColumn),
              perColumn,
              column.data,
              row * column.width!,
            );
          column.markFilled(row);
        }
      });
    }
  }
}
