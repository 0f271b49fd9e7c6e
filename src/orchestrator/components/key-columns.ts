import { DataType } from '../../datatypes/data-type.js';
import { formatValue } from '../../datatypes/value-text.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';

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
  const width = column.width;
  if (width !== undefined && width <= 4 && dataType !== STRING) {
    // Narrow typed keys (INT32 category ids and the like) repeat across rows: each distinct bit
    // pattern is rendered once.
    const { data } = column;
    const rendered = new Map<number, string>();
    for (let row = 0; row < matrix.rowCount; row++) {
      if (column.isDefaulted(row)) {
        texts[row] = '';
        continue;
      }
      const at = row * width;
      let bits = 0;
      for (let i = width - 1; i >= 0; i--) bits = bits * 256 + data[at + i]!;
      let text = rendered.get(bits);
      if (text === undefined) {
        text = formatValue(dataType, column.get(row), vectorDim);
        rendered.set(bits, text);
      }
      texts[row] = text;
    }
    return texts;
  }
  // A context feature is broadcast: every row holds the same bytes object, decoded once.
  let lastBytes: Uint8Array | undefined;
  let lastText = '';
  for (let row = 0; row < matrix.rowCount; row++) {
    if (column.isDefaulted(row)) {
      texts[row] = '';
      continue;
    }
    const bytes = column.get(row);
    if (bytes !== lastBytes || width !== undefined) {
      lastBytes = bytes;
      // Typed STRING keys (ids sent as request features) are the common case: decode them directly.
      lastText = dataType === STRING ? utf8.decode(bytes) : formatValue(dataType, bytes, vectorDim);
    }
    texts[row] = lastText;
  }
  return texts;
}
