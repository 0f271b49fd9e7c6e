import { convertNumbers } from '../../datatypes/convert.js';
import { DataType, dataTypeInfo } from '../../datatypes/data-type.js';
import { clampBigInt, integerRange } from '../../datatypes/integers.js';
import { writeNumbers } from '../../datatypes/number-runs.js';
import { LatticeError } from '../../platform/errors.js';
import { columnNumbers } from './column-numbers.js';
import type { ComponentMatrix } from './component-matrix.js';

const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;

/**
 * A column's values as elements of `type` (an element type), `width` per row, every row back to
 * back: the model tensor's view of a feature. A column already of that element type is returned as
 * a view of its bytes (no copy); others are converted in one bulk pass by convertNumbers, so 64-bit
 * integers stay exact into INT64/UINT64 and round once into floats. String columns (legacy text
 * features) are parsed: integer text exactly into INT64/UINT64, anything else as a number.
 */
export function columnElements(
  matrix: ComponentMatrix,
  name: string,
  type: DataType,
  width: number,
): Uint8Array {
  const rows = matrix.rowCount;
  const size = dataTypeInfo(type).elementBytes;
  if (!matrix.hasByteColumn(name)) return textElements(matrix, name, type, rows);
  const column = matrix.byteColumn(name);
  const from = column.spec.dataType;
  const info = dataTypeInfo(from);
  if (!info.numeric) {
    throw new LatticeError('INVALID_ARGUMENT', `column "${name}" holds ${info.name} values, not numbers`, {
      field: name,
    });
  }
  if (column.width !== undefined && from !== DataType.BOOL_VECTOR) {
    // Fixed-width cells lie back to back: the column is one run.
    if (info.scalar === type && type !== DataType.BOOL) return column.data;
    const out = new Uint8Array(rows * width * size);
    convertNumbers(from, column.data, rows * width, type, out);
    return out;
  }
  // Bit-packed or variable-width cells: one run per row.
  const out = new Uint8Array(rows * width * size);
  for (let row = 0; row < rows; row++) {
    convertNumbers(from, column.get(row), width, type, out, row * width * size);
  }
  return out;
}

function textElements(matrix: ComponentMatrix, name: string, type: DataType, rows: number): Uint8Array {
  const size = dataTypeInfo(type).elementBytes;
  const out = new Uint8Array(rows * size);
  const numbers = columnNumbers(matrix, name, type === DataType.FP32 ? 'fp32' : 'fp64');
  writeNumbers(type, numbers, rows, out);
  if (type === DataType.INT64 || type === DataType.UINT64) {
    // A double holds 53 bits: integer text (ids, counters) is re-read exactly, saturating as element.ts does.
    const texts = matrix.stringColumn(name);
    const view = new DataView(out.buffer);
    const { min, max } = integerRange(type)!;
    for (let row = 0; row < rows; row++) {
      const text = texts[row]!;
      if (!INTEGER_TEXT.test(text)) continue;
      const value = clampBigInt(BigInt(text), min, max);
      if (type === DataType.INT64) view.setBigInt64(row * 8, value, true);
      else view.setBigUint64(row * 8, value, true);
    }
  }
  return out;
}
