import { type CompiledExpression, compileExpression } from '../../compute/index.js';
import { invalidArgument, LatticeError } from '../../platform/errors.js';
import type { ComputeComponentConfig } from '../config/index.js';
import type { DagComponent } from '../dag/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { columnNumbers } from '../matrix/column-numbers.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';

/**
 * ComputeComponent, in-process mode: evaluates the RPN expression over the matrix columns named by
 * `score_mapping` (each variable bound to one column, read as numbers) and writes the result into
 * `output_column`. In slate mode it evaluates over SlateData rows (per-slate columns). Division by
 * zero or log of a non-positive value fails the component with the engine's message.
 */
export class ComputeComponent implements DagComponent<ExecutionContext> {
  readonly name: string;
  readonly required: boolean;
  private readonly expression: CompiledExpression;
  private readonly precision: 'fp32' | 'fp64';

  constructor(private readonly config: ComputeComponentConfig) {
    if (config.expression === undefined) {
      throw invalidArgument(
        `compute component ${config.name}: an in-process compute component needs "expression"`,
      );
    }
    this.name = config.name;
    this.required = config.required;
    this.expression = compileExpression(config.expression);
    this.precision = config.data_type === 'FP64' ? 'fp64' : 'fp32';
  }

  run(context: ExecutionContext): void {
    const matrix: ComponentMatrix | undefined = this.config.slate ? context.slate : context.matrix;
    if (!matrix) return; // a slate component on a point-wise request has nothing to score
    const inputs: Record<string, Float32Array | Float64Array> = {};
    for (const variable of this.expression.variables) {
      inputs[variable] = columnNumbers(matrix, this.config.score_mapping[variable]!, this.precision);
    }
    const output = matrix.byteColumn(this.config.output_column);
    // The validator makes every compute output an FP32 or FP64 column, so it has a typed view.
    const direct = this.precision === 'fp32' ? output.float32() : output.float64();
    if (!direct)
      throw new LatticeError(
        'INTERNAL',
        `compute output "${this.config.output_column}" is not ${this.config.data_type}`,
      );
    this.expression.evaluateInto(inputs, matrix.rowCount, direct);
    output.markAllFilled();
  }
}
