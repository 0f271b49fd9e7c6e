import { type CompiledExpression, compileExpression } from '../../compute/index.js';
import { invalidArgument, LatticeError } from '../../platform/errors.js';
import { CHECK_EVERY, nextTurn, sliceOver } from '../../platform/scheduling/index.js';
import type { RemoteCompute } from '../clients/index.js';
import type { ComputeComponentConfig } from '../config/index.js';
import type { DagComponent } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { columnNumbers } from '../matrix/column-numbers.js';
import type { ByteColumn, ComponentMatrix } from '../matrix/component-matrix.js';

/** SlateData rows have no id column: a remote computation over slates names them by index. */
const SLATE_ID = 'slate_index';

/**
 * ComputeComponent: an RPN expression over the matrix columns named by `score_mapping` (each
 * variable bound to one column, read as numbers), written into `output_column`. In-process mode
 * (`expression`) evaluates it here; remote mode (`compute_id` + `target`) sends the id column and
 * the mapped columns to a numerix server and writes the scores it returns. In slate mode it works on
 * SlateData rows (per-slate columns). Division by zero or log of a non-positive value fails the
 * component with the engine's message, in either mode; a failed component leaves every cell of its
 * output at the default (never a prefix of results), which is what downstream components read.
 */
export class ComputeComponent implements DagComponent<ExecutionContext> {
  readonly name: string;
  readonly required: boolean;
  private readonly expression: CompiledExpression | undefined;
  private readonly precision: 'fp32' | 'fp64';

  constructor(
    private readonly config: ComputeComponentConfig,
    private readonly remote?: RemoteCompute,
  ) {
    this.name = config.name;
    this.required = config.required;
    this.precision = config.data_type === 'FP64' ? 'fp64' : 'fp32';
    if (config.expression !== undefined) {
      this.expression = compileExpression(config.expression);
    } else if (config.compute_id === undefined || config.target === undefined) {
      throw invalidArgument(
        `compute component ${config.name}: needs "expression", or "compute_id" with the numerix "target"`,
      );
    } else if (!remote) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `compute component ${config.name}: remote compute (compute_id) needs the numerix client, not configured here`,
      );
    }
  }

  run(context: ExecutionContext, signal: AbortSignal): void | Promise<void> {
    const matrix: ComponentMatrix | undefined = this.config.slate ? context.slate : context.matrix;
    if (!matrix) return; // a slate component on a point-wise request has nothing to score
    const output = matrix.byteColumn(this.config.output_column);
    // The validator makes every compute output an FP32 or FP64 column, so it has a typed view.
    const direct = this.precision === 'fp32' ? output.float32() : output.float64();
    if (!direct)
      throw new LatticeError(
        'INTERNAL',
        `compute output "${this.config.output_column}" is not ${this.config.data_type}`,
      );
    if (!this.expression) return this.runRemote(context, matrix, output, direct, signal);
    if (matrix.rowCount > CHECK_EVERY) return this.runPaced(context, matrix, output, direct, signal);
    const inputs: Record<string, Float32Array | Float64Array> = {};
    for (const variable of this.expression.variables) {
      inputs[variable] = columnNumbers(matrix, this.config.score_mapping[variable]!, this.precision);
    }
    // The engine writes rows in order and stops at a failing one; the rows before it hold results,
    // which the inference engine resets with every other column of a failed component.
    this.expression.evaluateInto(inputs, matrix.rowCount, direct);
    output.markAllFilled();
  }

  /**
   * A large matrix: the same evaluation, giving the event loop a turn between column conversions and
   * between operators once the time slice is over, and stopping once the request is cancelled or late.
   */
  private async runPaced(
    context: ExecutionContext,
    matrix: ComponentMatrix,
    output: ByteColumn,
    direct: Float32Array | Float64Array,
    signal: AbortSignal,
  ): Promise<void> {
    const expression = this.expression!;
    const pause = () => nextTurn(signal, context.deadline);
    const inputs: Record<string, Float32Array | Float64Array> = {};
    for (const variable of expression.variables) {
      if (sliceOver()) await pause();
      inputs[variable] = columnNumbers(matrix, this.config.score_mapping[variable]!, this.precision);
    }
    await expression.evaluateIntoPaced(inputs, matrix.rowCount, direct, { due: sliceOver, pause });
    output.markAllFilled();
  }

  /** Sends the id column and the mapped columns to the numerix server; writes nothing unless it answers. */
  private async runRemote(
    context: ExecutionContext,
    matrix: ComponentMatrix,
    output: ByteColumn,
    direct: Float32Array | Float64Array,
    signal: AbortSignal,
  ): Promise<void> {
    const rows = matrix.rowCount;
    if (rows === 0) return;
    const variables = Object.keys(this.config.score_mapping);
    const columns = variables.map((v) =>
      columnNumbers(matrix, this.config.score_mapping[v]!, this.precision),
    );
    const idName = this.config.slate ? SLATE_ID : context.snapshot.model.config.target_id_column;
    const ids = this.config.slate
      ? Array.from({ length: rows }, (_, r) => String(r))
      : matrix.stringColumn(idName);
    const scores = await this.remote!.compute(
      this.config.target!,
      {
        computeId: this.config.compute_id!,
        schema: [idName, ...variables],
        ids,
        columns,
        dataType: this.config.data_type,
      },
      { signal, deadline: context.deadline, timeoutMs: this.config.deadline_ms },
    );
    // The client checks this against the wire; any other RemoteCompute must not write shifted either.
    if (scores.length !== rows)
      throw new LatticeError(
        'INTERNAL',
        `numerix ${this.config.target}: compute ${this.config.compute_id}: ${scores.length} scores returned for ${rows} rows`,
      );
    direct.set(scores);
    output.markAllFilled();
  }
}
