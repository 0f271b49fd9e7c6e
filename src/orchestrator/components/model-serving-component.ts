import { copyElementRuns } from '../../datatypes/copy-runs.js';
import { DataType, dataTypeInfo, parseDataType } from '../../datatypes/data-type.js';
import { describeError, LatticeError } from '../../platform/errors.js';
import { CHECK_EVERY, nextTurn, sliceOver } from '../../platform/scheduling/index.js';
import type { ModelInferer, Tensor } from '../clients/index.js';
import type { ModelServingComponentConfig } from '../config/index.js';
import type { DagComponent } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { columnElements } from '../matrix/column-elements.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';
import { MAX_BATCHES_IN_FLIGHT, runBatches } from './batches.js';
import { type ModelAnswer, type OutputPlan, writeModelOutputs } from './model-outputs.js';

interface Gathered {
  input: InputPlan;
  /** `rows × perRow` elements of the input's element type, row-major. */
  data: Uint8Array;
  perRow: number;
}

/** An input's feature columns as elements of its type, every target row: converted once per request. */
interface InputElements {
  input: InputPlan;
  widths: readonly number[];
  perRow: number;
  /** Per feature: its column's elements (`widths[f]` per row), or undefined for a zero-width one. */
  columns: readonly (Uint8Array | undefined)[];
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
 * batches sent concurrently, at most MAX_BATCHES_IN_FLIGHT at once (each to an endpoint chosen by
 * `percentage`, bounded by `deadline_ms` from when it is sent and by the request deadline),
 * calibrates, and writes each output value into its own row's column. No batch is sent once the
 * request is cancelled or past its deadline.
 * A failed batch leaves exactly its own rows defaulted and marked; scores never shift rows. With
 * `slate`, one inference per slate over that slate's target rows; the first output row is the
 * slate's score.
 */
export class ModelServingComponent implements DagComponent<ExecutionContext> {
  readonly name: string;
  readonly required: boolean;
  private readonly inputs: readonly InputPlan[];
  private readonly outputNames: readonly string[];
  private readonly plan: OutputPlan;

  constructor(
    private readonly config: ModelServingComponentConfig,
    private readonly inferer: ModelInferer,
    private readonly random: () => number = Math.random,
  ) {
    this.name = config.name;
    this.required = config.required;
    this.inputs = config.inputs.map((input) => ({
      name: input.name,
      // A tensor's elements are scalars: an input declared as a vector type sends its element type.
      dataType: dataTypeInfo(
        parseDataType(input.data_type.toUpperCase() === 'BYTES' ? 'STRING' : input.data_type),
      ).scalar,
      features: input.features,
      shape: input.shape,
    }));
    this.outputNames = config.outputs.map((o) => o.name);
    this.plan = { modelName: config.model_name, outputs: config.outputs, calibration: config.calibration };
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
    const { matrix, deadline } = context;
    if (this.config.slate) {
      if (context.slate) await this.runSlates(context, signal);
      return;
    }
    const rows = matrix.rowCount;
    const sources: Gathered[] = [];
    for (const input of this.inputs) {
      // Each input is a few bulk conversions; between inputs of a large matrix the loop gets its turn.
      if (rows > CHECK_EVERY && sliceOver()) await nextTurn(signal, deadline);
      sources.push(this.gather(matrix, input, null));
    }
    const batch = this.config.batch_size;
    const count = Math.ceil(rows / batch);
    let failures = 0;
    let lastError: unknown;
    await runBatches(count, MAX_BATCHES_IN_FLIGHT, signal, deadline, (b: number) => {
      const start = b * batch;
      const end = Math.min(rows, start + batch);
      return this.infer(sources, start, end, signal, deadline)
        .then((answer) => writeModelOutputs(this.plan, answer, end - start, matrix, start, false))
        .catch((err: unknown) => {
          failures++;
          lastError = err;
          const reason = `${this.name}: model call failed: ${describeError(err)}`;
          for (let row = start; row < end; row++) matrix.addRowError(row, reason);
        });
    });
    if (failures > 0 && failures === count) throw lastError;
  }

  /** One inference per slate, at most MAX_BATCHES_IN_FLIGHT at once. */
  private async runSlates(context: ExecutionContext, signal: AbortSignal): Promise<void> {
    const slate = context.slate!;
    const count = slate.rowCount;
    // The target columns are converted to the inputs' types once, not once per slate (a column of
    // another type was converted whole for each of up to 100,000 slates).
    let elements: InputElements[];
    try {
      elements = this.inputs.map((input) => this.elements(context.matrix, input));
    } catch (err) {
      // As when every slate's own gathering failed: each slate marked, the component unavailable.
      const reason = `${this.name}: model call failed: ${describeError(err)}`;
      for (let s = 0; s < count; s++) slate.addRowError(s, reason);
      if (count > 0) throw new LatticeError('UNAVAILABLE', `${this.name}: every slate failed`);
      return;
    }
    let failures = 0;
    await runBatches(count, MAX_BATCHES_IN_FLIGHT, signal, context.deadline, async (s: number) => {
      try {
        const indices = slate.targetsOf(s);
        const sources = elements.map((prepared) =>
          this.gatherRows(prepared, context.matrix.rowCount, indices),
        );
        const answer = await this.infer(sources, 0, indices.length, signal, context.deadline);
        writeModelOutputs(this.plan, answer, indices.length, slate, s, true);
      } catch (err) {
        failures++;
        slate.addRowError(s, `${this.name}: model call failed: ${describeError(err)}`);
      }
    });
    if (failures > 0 && failures === count)
      throw new LatticeError('UNAVAILABLE', `${this.name}: every slate failed`);
  }

  /**
   * An input's tensor elements for the given rows (all rows, or a slate's target rows), row-major
   * `rows × perRow`, already in the input's element type, so a batch's tensor is a view of it. Each
   * feature column is converted in one bulk pass (a column of the input's own type is not converted
   * at all) and copied into its place in the rows as raw bytes: 64-bit integers arrive exactly.
   */
  private gather(matrix: ComponentMatrix, input: InputPlan, rowsOf: Int32Array | null): Gathered {
    if (!rowsOf && input.features.length === 1) {
      const width = this.featureWidths(matrix, input)[0]!;
      this.checkShape(input, width);
      // One feature, all rows: the converted column (or the column itself) already is the tensor.
      return {
        input,
        data: columnElements(matrix, input.features[0]!, input.dataType, width),
        perRow: width,
      };
    }
    return this.gatherRows(this.elements(matrix, input), matrix.rowCount, rowsOf);
  }

  private featureWidths(matrix: ComponentMatrix, input: InputPlan): number[] {
    return input.features.map((name) => {
      if (!matrix.hasByteColumn(name)) return 1;
      const spec = matrix.byteColumn(name).spec;
      return dataTypeInfo(spec.dataType).isVector ? spec.vectorDim : 1;
    });
  }

  private checkShape(input: InputPlan, perRow: number): void {
    const expected = input.shape.reduce((a, d) => (d > 0 ? a * d : a), 1);
    if (!input.shape.includes(-1) && expected !== perRow) {
      throw new LatticeError(
        'INVALID_ARGUMENT',
        `${this.name}: input ${input.name} has shape [${input.shape.join(', ')}] but its features give ${perRow} values per row`,
      );
    }
  }

  /** The input's feature columns converted to its element type, for every target row. */
  private elements(matrix: ComponentMatrix, input: InputPlan): InputElements {
    const widths = this.featureWidths(matrix, input);
    const perRow = widths.reduce((a, b) => a + b, 0);
    this.checkShape(input, perRow);
    const columns = input.features.map((name, f) =>
      widths[f] === 0 ? undefined : columnElements(matrix, name, input.dataType, widths[f]!),
    );
    return { input, widths, perRow, columns };
  }

  /**
   * An input's tensor elements for the given rows (all rows, or a slate's target rows), row-major
   * `rows × perRow`, already in the input's element type, so a batch's tensor is a view of it. Each
   * feature column is converted in one bulk pass (a column of the input's own type is not converted
   * at all) and copied into its place in the rows as raw bytes: 64-bit integers arrive exactly.
   */
  private gatherRows(prepared: InputElements, rows: number, rowsOf: Int32Array | null): Gathered {
    const { input, widths, perRow, columns } = prepared;
    const rowCount = rowsOf ? rowsOf.length : rows;
    const size = dataTypeInfo(input.dataType).elementBytes;
    const data = new Uint8Array(rowCount * perRow * size);
    let offset = 0;
    input.features.forEach((_name, f) => {
      const width = widths[f]!;
      const elements = columns[f];
      if (width === 0 || elements === undefined) return;
      copyElementRuns(
        size,
        width,
        rowCount,
        { bytes: elements, start: 0, stride: width },
        { bytes: data, start: offset, stride: perRow },
        rowsOf,
      );
      offset += width;
    });
    return { input, data, perRow };
  }

  private async infer(
    sources: readonly Gathered[],
    start: number,
    end: number,
    signal: AbortSignal,
    deadline: number,
  ): Promise<ModelAnswer> {
    const rows = end - start;
    const inputs: Tensor[] = sources.map(({ input, data, perRow }) => {
      const bytes = perRow * dataTypeInfo(input.dataType).elementBytes;
      return {
        name: input.name,
        dataType: input.dataType,
        shape: [rows, ...input.shape.map((d) => (d === -1 ? perRow : d))],
        data: data.subarray(start * bytes, end * bytes),
      };
    });
    const target = routeEndpoint(this.config.endpoints, this.random());
    const outputs = await this.inferer.infer(
      target,
      {
        modelName: this.config.model_name,
        modelVersion: this.config.model_version,
        inputs,
        outputs: this.outputNames,
      },
      { signal, deadline, timeoutMs: this.config.deadline_ms },
    );
    return { target, inputs, outputs };
  }
}
