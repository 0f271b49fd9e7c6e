import { dataTypeInfo } from '../../datatypes/data-type.js';
import { readNumbers } from '../../datatypes/number-runs.js';
import { invalidArgument } from '../../platform/errors.js';
import { quote } from '../../platform/quote.js';
import type { ComponentMatrix } from './component-matrix.js';

/**
 * A column's values as numbers, one per row (scalar columns; vector columns are read by tensors).
 * FP32/FP64 columns are returned as views without copying; other numeric types are decoded in one
 * bulk pass; string columns (legacy text features) are parsed. `precision` picks the array type.
 * This is how compute reads columns: INT64/UINT64 values beyond 2^53 round once to the nearest
 * double (or float32). Paths that must keep 64-bit integers exact (model tensors) use
 * columnElements instead.
 */
export function columnNumbers(
  matrix: ComponentMatrix,
  name: string,
  precision: 'fp32' | 'fp64',
): Float32Array | Float64Array {
  const rows = matrix.rowCount;
  if (matrix.hasByteColumn(name)) {
    const column = matrix.byteColumn(name);
    const { dataType, vectorDim } = column.spec;
    const info = dataTypeInfo(dataType);
    if (!info.numeric || (info.isVector && vectorDim !== 1)) {
      throw invalidArgument(`column "${name}" holds ${info.name} values, not scalar numbers`, name);
    }
    const direct = precision === 'fp32' ? column.float32() : column.float64();
    if (direct) return direct;
    const out = precision === 'fp32' ? new Float32Array(rows) : new Float64Array(rows);
    readNumbers(info.isVector ? info.scalar : dataType, column.data, rows, out);
    return out;
  }
  const texts = matrix.stringColumn(name);
  const out = precision === 'fp32' ? new Float32Array(rows) : new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    const text = texts[row]!;
    const value = text === '' ? 0 : Number(text);
    if (Number.isNaN(value) && text.trim() !== 'NaN') {
      throw invalidArgument(`column "${name}" row ${row}: ${quote(text)} is not a number`, name);
    }
    out[row] = value;
  }
  return out;
}
