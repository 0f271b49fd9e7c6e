import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import {
  ComponentMatrix,
  MatrixLayout,
  SlateData,
} from '../../../src/orchestrator/matrix/component-matrix.js';
import { isLatticeError } from '../../../src/platform/errors.js';

const layout = new MatrixLayout(
  [
    { name: 'catalog:stats:price', dataType: DataType.FP32, vectorDim: 0 },
    { name: 'catalog:attributes:flag', dataType: DataType.BOOL, vectorDim: 0 },
    { name: 'user:emb:v', dataType: DataType.FP16_VECTOR, vectorDim: 3 },
    { name: 'catalog:meta:title', dataType: DataType.STRING, vectorDim: 0 },
    { name: 'score', dataType: DataType.FP64, vectorDim: 0 },
  ],
  ['catalog_id'],
);

describe('ComponentMatrix', () => {
  test('fixed-width columns live in one arena, 8-byte aligned, with typed views', () => {
    const m = new ComponentMatrix(layout, 3);
    const price = m.byteColumn('catalog:stats:price');
    const score = m.byteColumn('score');
    assert.equal(price.width, 4);
    assert.equal(m.byteColumn('user:emb:v').width, 6);
    assert.equal(m.byteColumn('catalog:meta:title').width, undefined);
    assert.equal(price.data.buffer, score.data.buffer, 'one arena');
    for (const c of m.byteColumns)
      if (c.width !== undefined) assert.equal(c.data.byteOffset % 8, 0, `${c.name} aligned`);
    price.set(1, encodeValue(DataType.FP32, 2.5));
    assert.equal(price.float32()![1], 2.5);
    assert.equal(price.float32(), price.float32(), 'the view is cached');
    score.float64()![2] = 7;
    assert.deepEqual([...m.byteColumn('score').get(2)], [...encodeValue(DataType.FP64, 7)]);
    assert.equal(price.float64(), undefined);
  });

  test('cells never written are defaulted (zero bytes / empty) until set', () => {
    const m = new ComponentMatrix(layout, 2);
    const price = m.byteColumn('catalog:stats:price');
    assert.equal(price.isDefaulted(0), true);
    assert.deepEqual([...price.get(0)], [0, 0, 0, 0]);
    assert.equal(m.byteColumn('catalog:meta:title').get(1).length, 0);
    price.set(0, encodeValue(DataType.FP32, 1));
    assert.equal(price.isDefaulted(0), false);
    assert.equal(price.isDefaulted(1), true);
    m.byteColumn('catalog:meta:title').set(1, new TextEncoder().encode('hello'));
    assert.equal(new TextDecoder().decode(m.byteColumn('catalog:meta:title').get(1)), 'hello');
  });

  test('a value of the wrong width is a programming error, never truncated', () => {
    const m = new ComponentMatrix(layout, 1);
    assert.throws(
      () => m.byteColumn('catalog:stats:price').set(0, new Uint8Array(8)),
      (err) => isLatticeError(err, 'INTERNAL') && /takes 4 bytes per value, got 8/.test(err.message),
    );
  });

  test('broadcast, string columns, row errors', () => {
    const m = new ComponentMatrix(layout, 3);
    m.byteColumn('catalog:attributes:flag').broadcast(Uint8Array.of(1));
    assert.deepEqual(
      [0, 1, 2].map((r) => m.byteColumn('catalog:attributes:flag').get(r)[0]),
      [1, 1, 1],
    );
    assert.deepEqual(m.stringColumn('catalog_id'), ['', '', '']);
    m.addRowError(1, 'a failed');
    m.addRowError(1, 'b failed');
    m.addRowError(1, 'a failed');
    assert.equal(m.rowError(1), 'a failed; b failed');
    assert.equal(m.rowError(0), '');
    m.addErrorToAllRows('c failed');
    assert.equal(m.rowError(2), 'c failed');
    assert.throws(() => m.byteColumn('nope'), /no byte column "nope"/);
    assert.throws(() => m.stringColumn('nope'), /no string column "nope"/);
  });

  test('layouts reject duplicate columns and memoize extensions', () => {
    assert.throws(() => new MatrixLayout([layout.columns[0]!, layout.columns[0]!]), /declared twice/);
    const extra = [{ name: 'price', dataType: DataType.FP32, vectorDim: 0 }];
    const a = layout.extend(extra, ['user_id']);
    assert.equal(layout.extend(extra, ['user_id']), a);
    assert.notEqual(layout.extend([{ ...extra[0]!, dataType: DataType.FP64 }], ['user_id']), a);
    assert.equal(layout.extend([]), layout);
    assert.equal(a.byteColumnIndex('price'), layout.columns.length);
  });

  test('SlateData has one row per slate with its target indices', () => {
    const slate = new SlateData(new MatrixLayout([{ name: 's', dataType: DataType.FP32, vectorDim: 0 }]), [
      Int32Array.of(0, 2),
      Int32Array.of(1),
    ]);
    assert.equal(slate.rowCount, 2);
    assert.deepEqual([...slate.slateTargetIndices[0]!], [0, 2]);
    slate.byteColumn('s').float32()![1] = 0.5;
    assert.equal(slate.byteColumn('s').float32()![1], 0.5);
  });
});
