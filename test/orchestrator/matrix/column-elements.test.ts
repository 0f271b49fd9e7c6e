import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import { columnElements } from '../../../src/orchestrator/matrix/column-elements.js';
import { ComponentMatrix, MatrixLayout } from '../../../src/orchestrator/matrix/component-matrix.js';

const int64s = (bytes: Uint8Array) => [...new BigInt64Array(Uint8Array.from(bytes).buffer)];
const uint64s = (bytes: Uint8Array) => [...new BigUint64Array(Uint8Array.from(bytes).buffer)];

const layout = new MatrixLayout(
  [
    { name: 'signed', dataType: DataType.INT64, vectorDim: 0 },
    { name: 'pair', dataType: DataType.UINT64_VECTOR, vectorDim: 2 },
    { name: 'flags', dataType: DataType.BOOL_VECTOR, vectorDim: 3 },
  ],
  ['text'],
);
const big = 2n ** 53n + 1n;

describe('columnElements: a column as tensor elements of one type', () => {
  const m = new ComponentMatrix(layout, 3);
  m.byteColumn('signed').set(0, encodeValue(DataType.INT64, big));
  m.byteColumn('signed').set(1, encodeValue(DataType.INT64, -big));
  m.byteColumn('pair').set(0, encodeValue(DataType.UINT64_VECTOR, [2n ** 64n - 1n, big]));
  m.byteColumn('flags').set(2, encodeValue(DataType.BOOL_VECTOR, [true, false, true]));
  m.stringColumn('text').splice(0, 3, '9007199254740993', '-9007199254740993', '2.9');

  test('the same element type is the column itself, not a copy', () => {
    const signed = m.byteColumn('signed');
    assert.equal(columnElements(m, 'signed', DataType.INT64, 1), signed.data);
    assert.deepEqual(int64s(signed.data), [big, -big, 0n]);
  });

  test('64-bit integers convert exactly, saturating across signedness', () => {
    assert.deepEqual(uint64s(columnElements(m, 'signed', DataType.UINT64, 1)), [big, 0n, 0n]);
    assert.deepEqual(int64s(columnElements(m, 'pair', DataType.INT64, 2)), [
      2n ** 63n - 1n,
      big,
      0n,
      0n,
      0n,
      0n,
    ]);
    assert.deepEqual(
      [...new Float64Array(columnElements(m, 'signed', DataType.FP64, 1).buffer)],
      [2 ** 53, -(2 ** 53), 0],
      'into a float: rounded once',
    );
  });

  test('bit-packed cells convert row by row', () => {
    assert.deepEqual([...columnElements(m, 'flags', DataType.UINT8, 3)], [0, 0, 0, 0, 0, 0, 1, 0, 1]);
  });

  test('legacy text: integer text exactly into INT64/UINT64, other numbers truncated', () => {
    assert.deepEqual(int64s(columnElements(m, 'text', DataType.INT64, 1)), [big, -big, 2n]);
    assert.deepEqual(uint64s(columnElements(m, 'text', DataType.UINT64, 1)), [big, 0n, 2n]);
  });
});
