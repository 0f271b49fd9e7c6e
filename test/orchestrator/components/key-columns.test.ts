/** Key texts of typed columns: what entity resolution sends as keys when it reads a feature column. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import { formatValue } from '../../../src/datatypes/value-text.js';
import { keyTexts } from '../../../src/orchestrator/components/key-columns.js';
import { ComponentMatrix, MatrixLayout } from '../../../src/orchestrator/matrix/component-matrix.js';

const columns = [
  { name: 'i32', dataType: DataType.INT32, values: [17, -1, 17, 2 ** 31 - 1, -(2 ** 31), 0, 17] },
  { name: 'u16', dataType: DataType.UINT16, values: [0, 65535, 7, 7, 1, 65535, 2] },
  { name: 'f32', dataType: DataType.FP32, values: [1.5, -0, 0, Number.NaN, 1.5, 3.25, -7] },
  { name: 'bool', dataType: DataType.BOOL, values: [true, false, true, true, false, false, true] },
  { name: 'i64', dataType: DataType.INT64, values: [2n ** 40n, -3n, 5n, 5n, 0n, 1n, 2n ** 40n] },
  { name: 'str', dataType: DataType.STRING, values: ['a', 'b', '', 'a', 'ü', 'b', 'c'] },
] as const;

test('every row renders as formatValue does; defaulted rows are empty keys', () => {
  const rows = 7;
  const matrix = new ComponentMatrix(
    new MatrixLayout(
      columns.map((c) => ({ name: c.name, dataType: c.dataType, vectorDim: 0 })),
      ['id'],
    ),
    rows,
  );
  for (const c of columns) {
    const column = matrix.byteColumn(c.name);
    // Row 5 stays unwritten (defaulted).
    c.values.forEach((value, row) => {
      if (row !== 5) column.set(row, encodeValue(c.dataType, value));
    });
    const texts = keyTexts(matrix, c.name);
    for (let row = 0; row < rows; row++) {
      const expected = row === 5 ? '' : formatValue(c.dataType, column.get(row), 0);
      assert.equal(texts[row], expected, `${c.name} row ${row}`);
    }
  }
});
