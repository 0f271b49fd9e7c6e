import type { ComponentMatrix } from '../matrix/component-matrix.js';
import { DataType } from '../matrix/data-type.js';
import { formatValue } from '../matrix/value-text.js';

const utf8 = new TextDecoder();
const STRING = DataType.STRING;

/**
 * A column's values as text, one per row: a string column as it is, a typed column rendered (an
 * INT32 category id becomes "17"). Reading a feature column as a key is how entity resolution
 * chains: product → its category → user × category.
 */
export function keyTexts(matrix: ComponentMatrix, name: string): readonly string[] {
  if (matrix.hasStringColumn(name)) return matrix.stringColumn(name);
  const column = matrix.byteColumn(name);
  const { dataType, vectorDim } = column.spec;
  const texts = new Array<string>(matrix.rowCount);
  for (let row = 0; row < matrix.rowCount; row++) {
    if (column.isDefaulted(row)) texts[row] = '';
    // Typed STRING keys (ids sent as request features) are the common case: decode them directly.
    else
      texts[row] =
        dataType === STRING
          ? utf8.decode(column.get(row))
          : formatValue(dataType, column.get(row), vectorDim);
  }
  return texts;
}
