import { convertNumbers } from '../../datatypes/convert.js';
import { copyElementRuns } from '../../datatypes/copy-runs.js';
import { DataType, dataTypeInfo } from '../../datatypes/data-type.js';
import { readNumbers, runBytes, writeNumbers } from '../../datatypes/number-runs.js';
import { LatticeError } from '../../platform/errors.js';
import type { Tensor } from '../clients/index.js';
import type { CalibrationConfig, ModelServingComponentConfig } from '../config/index.js';
import type { ByteColumn, ComponentMatrix } from '../matrix/component-matrix.js';
import { calibrate } from './calibration.js';

type OutputConfig = ModelServingComponentConfig['outputs'][number];

/** What a model-serving component writes: its outputs and calibration. */
export interface OutputPlan {
  readonly modelName: string;
  readonly outputs: readonly OutputConfig[];
  readonly calibration: CalibrationConfig | undefined;
}

/** One model call: the endpoint it went to, the tensors sent and the tensors that came back. */
export interface ModelAnswer {
  readonly target: string;
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
}

/**
 * Writes one model call's outputs into their columns: rows `firstRow…` of `matrix`, one per row
 * sent (a slate call writes one row, the first). Every output is checked before anything is
 * written: its shape must be exactly `[rows sent, per-row width]` (a slate model may also answer one
 * row), the per-row width being the output's columns × its vector_dim (trailing dimensions multiply),
 * and its bytes must be that shape × its element size. Otherwise UNAVAILABLE naming the endpoint and
 * the shapes, and nothing is written: a model answering n + 1 rows must not move scores onto
 * neighbouring rows.
 *
 * Without calibration values convert element-wise into the column's type (convertNumbers: 64-bit
 * integers exact, a byte copy when the types agree); with calibration they go through doubles.
 */
export function writeModelOutputs(
  plan: OutputPlan,
  answer: ModelAnswer,
  rowsSent: number,
  matrix: ComponentMatrix,
  firstRow: number,
  slate: boolean,
): void {
  const tensors = plan.outputs.map((output) => checkOutput(plan, answer, output, rowsSent, slate));
  const rows = slate ? 1 : rowsSent;
  plan.outputs.forEach((output, k) => {
    const tensor = tensors[k]!;
    const perColumn = Math.max(1, output.vector_dim);
    const perRow = output.columns.length * perColumn;
    const columns = output.columns.map((name) => matrix.byteColumn(name));
    if (plan.calibration) {
      const values = new Float64Array(rows * perRow);
      readNumbers(dataTypeInfo(tensor.dataType).scalar, tensor.data, rows * perRow, values);
      calibrate(values, plan.calibration);
      columns.forEach((column, c) => {
        writeDoubles(column, values, rows, perRow, c * perColumn, perColumn, firstRow);
      });
      return;
    }
    let converted: Uint8Array | undefined;
    columns.forEach((column, c) => {
      const type = column.spec.dataType;
      const scalar = dataTypeInfo(type).scalar;
      if (column.width === undefined || type === DataType.BOOL_VECTOR) {
        writeCells(column, tensor, rows, perRow, c * perColumn, perColumn, firstRow);
        return;
      }
      converted ??= elementsAs(tensor, scalar, rows * perRow);
      copyElementRuns(
        dataTypeInfo(scalar).elementBytes,
        perColumn,
        rows,
        { bytes: converted, start: c * perColumn, stride: perRow },
        { bytes: column.data, start: firstRow * perColumn, stride: perColumn },
      );
      for (let r = 0; r < rows; r++) column.markFilled(firstRow + r);
    });
  });
}

function checkOutput(
  plan: OutputPlan,
  answer: ModelAnswer,
  output: OutputConfig,
  rowsSent: number,
  slate: boolean,
): Tensor {
  const where = `model server ${answer.target}: model ${plan.modelName}`;
  const tensor = answer.outputs.find((t) => t.name === output.name);
  if (!tensor) throw new LatticeError('UNAVAILABLE', `${where}: no output "${output.name}" in the answer`);
  const perColumn = Math.max(1, output.vector_dim);
  const perRow = output.columns.length * perColumn;
  const { shape } = tensor;
  let width = 1;
  for (let d = 1; d < shape.length; d++) width *= shape[d]!;
  const whole = shape.every((d) => Number.isInteger(d) && d >= 0);
  const rowsOk = shape[0] === rowsSent || (slate && shape[0] === 1);
  if (shape.length === 0 || !whole || !rowsOk || width !== perRow) {
    const sent = answer.inputs.map((t) => `${t.name} [${t.shape.join(', ')}]`).join(', ');
    throw new LatticeError(
      'UNAVAILABLE',
      `${where}: output "${output.name}" has shape [${shape.join(', ')}] for ${rowsSent} rows sent (${sent}); expected [${rowsSent}, ${perRow}] (${output.columns.length} column(s) × ${perColumn})`,
    );
  }
  const info = dataTypeInfo(tensor.dataType);
  if (!info.numeric) {
    throw new LatticeError(
      'UNAVAILABLE',
      `${where}: output "${output.name}" is ${info.name}; scores must be numeric`,
    );
  }
  const need = runBytes(info.scalar, shape[0]! * width);
  if (tensor.data.length !== need) {
    throw new LatticeError(
      'UNAVAILABLE',
      `${where}: output "${output.name}" of shape [${shape.join(', ')}] ${info.name} takes ${need} bytes, got ${tensor.data.length}`,
    );
  }
  return tensor;
}

/** The first `count` elements of a tensor as elements of `scalar`: the tensor's bytes when the types agree. */
function elementsAs(tensor: Tensor, scalar: DataType, count: number): Uint8Array {
  const from = dataTypeInfo(tensor.dataType).scalar;
  if (from === scalar && scalar !== DataType.BOOL) {
    // A wire buffer can start anywhere: one aligned copy lets the row copies move whole words.
    const aligned = tensor.data.byteOffset % Math.min(4, dataTypeInfo(scalar).elementBytes) === 0;
    return aligned ? tensor.data : tensor.data.slice();
  }
  const out = new Uint8Array(runBytes(scalar, count));
  convertNumbers(from, tensor.data, count, scalar, out);
  return out;
}

/** Cells that are not plain element runs (bit-packed BOOL_VECTOR, variable width): one conversion per cell. */
function writeCells(
  column: ByteColumn,
  tensor: Tensor,
  rows: number,
  perRow: number,
  offset: number,
  perColumn: number,
  firstRow: number,
): void {
  const from = dataTypeInfo(tensor.dataType).scalar;
  const size = dataTypeInfo(from).elementBytes;
  const type = column.spec.dataType;
  for (let r = 0; r < rows; r++) {
    const at = (r * perRow + offset) * size;
    const cell = new Uint8Array(runBytes(type, perColumn));
    convertNumbers(from, tensor.data.subarray(at, at + perColumn * size), perColumn, type, cell);
    column.set(firstRow + r, cell);
  }
}

/** Calibrated scores (doubles) into a column: FP32/FP64 scalars through a typed view, others encoded. */
function writeDoubles(
  column: ByteColumn,
  values: Float64Array,
  rows: number,
  perRow: number,
  offset: number,
  perColumn: number,
  firstRow: number,
): void {
  const view = perColumn === 1 ? (column.float32() ?? column.float64()) : undefined;
  for (let r = 0; r < rows; r++) {
    const row = firstRow + r;
    const at = r * perRow + offset;
    if (view) view[row] = values[at]!;
    else if (column.width === undefined) {
      const cell = new Uint8Array(runBytes(column.spec.dataType, perColumn));
      writeNumbers(column.spec.dataType, values.subarray(at, at + perColumn), perColumn, cell);
      column.set(row, cell);
    } else {
      writeNumbers(
        column.spec.dataType,
        values.subarray(at, at + perColumn),
        perColumn,
        column.data,
        row * column.width,
      );
    }
    column.markFilled(row);
  }
}
