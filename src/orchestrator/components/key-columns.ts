import type { ComponentMatrix } from '../matrix/component-matrix.js';
import { formatValue } from '../matrix/value-text.js';

/**
 * A column's values as text, one per row: a string column as it is, a typed column rendered (an
 * INT32 category id becomes "17"). Reading a feature column as a key is how entity resolution
 * chains: product → its category → user × category.
 */
export function keyTexts(matrix: ComponentMatrix, name: string): readonly string[] {
  if (matrix.hasStringColumn(name)) return matrix.stringColumn(name);
  const column = matrix.byteColumn(name);
  const texts = new Array<string>(matrix.rowCount);
  for (let row = 0; row < matrix.rowCount; row++) {
    texts[row] = column.isDefaulted(row)
      ? ''
      : formatValue(column.spec.dataType, column.get(row), column.spec.vectorDim);
  }
  return texts;
}
