import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DataType } from '../../src/datatypes/data-type.js';
import {
  allocate,
  copyElements,
  decodeContents,
  decodeRaw,
  encodeRaw,
  sliceElements,
} from '../../src/modelserver/tensor-codec.js';
import { type TensorType, tensorTypeOfKserve } from '../../src/modelserver/tensor-types.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { bytesTensor } from './kserve-client.js';

const type = (name: string): TensorType => tensorTypeOfKserve(name)!;
const invalid = (pattern: RegExp) => (err: unknown) =>
  isLatticeError(err, 'INVALID_ARGUMENT') && pattern.test(err.message);

describe('tensor codec', () => {
  test('KServe names map to Lattice data types and onnxruntime types', () => {
    assert.deepEqual(
      ['FP32', 'FP16', 'INT64', 'BOOL', 'BYTES'].map((n) => [
        type(n).dataType,
        type(n).ort,
        type(n).elementBytes,
      ]),
      [
        [DataType.FP32, 'float32', 4],
        [DataType.FP16, 'float16', 2],
        [DataType.INT64, 'int64', 8],
        [DataType.BOOL, 'bool', 1],
        [DataType.STRING, 'string', 0],
      ],
    );
    assert.equal(tensorTypeOfKserve('fp32'), undefined, 'wire names are exact');
    assert.equal(tensorTypeOfKserve('BF16'), undefined);
  });

  test('aligned raw bytes are viewed in place; misaligned ones are copied once', () => {
    const backing = new Uint8Array(4 * 3 + 1);
    const values = new Float32Array([1.5, -2, 3.25]);
    backing.set(new Uint8Array(values.buffer), 1);
    const misaligned = decodeRaw(type('FP32'), backing.subarray(1), 3, 'input "x"') as Float32Array;
    assert.deepEqual(Array.from(misaligned), [1.5, -2, 3.25]);
    assert.notEqual(misaligned.buffer, backing.buffer);

    const aligned = new Uint8Array(values.buffer);
    const view = decodeRaw(type('FP32'), aligned, 3, 'input "x"') as Float32Array;
    assert.equal(view.buffer, values.buffer);
  });

  test('BYTES: prefixes are read exactly; short, long and non-UTF-8 contents are rejected', () => {
    assert.deepEqual(decodeRaw(type('BYTES'), bytesTensor(['a', '', 'ü']), 3, 'input "t"'), ['a', '', 'ü']);
    assert.throws(
      () => decodeRaw(type('BYTES'), bytesTensor(['abcd']), 2, 'input "t"'),
      invalid(/end at element 1 of 2/),
    );
    assert.throws(
      () => decodeRaw(type('BYTES'), bytesTensor(['a']), 1e12, 'input "t"'),
      invalid(/too few for 1000000000000 BYTES elements/),
    );
    assert.throws(
      () => decodeRaw(type('BYTES'), bytesTensor(['a', 'b']), 1, 'input "t"'),
      invalid(/5 bytes after the 1 elements/),
    );
    const notUtf8 = Buffer.from([1, 0, 0, 0, 0xff]);
    assert.throws(
      () => decodeRaw(type('BYTES'), notUtf8, 1, 'input "t"'),
      invalid(/element 0 is not valid UTF-8/),
    );
    assert.deepEqual(Array.from(encodeRaw(['ab'])), [2, 0, 0, 0, 97, 98]);
  });

  test('typed contents: the field matching the type, with the element count of the shape', () => {
    const ints = decodeContents(type('INT64'), emptyContents({ int64Contents: [5n, -6n] }), 2, 'input "i"');
    assert.deepEqual(Array.from(ints as BigInt64Array), [5n, -6n]);
    const bools = decodeContents(
      type('BOOL'),
      emptyContents({ boolContents: [true, false] }),
      2,
      'input "b"',
    );
    assert.deepEqual(Array.from(bools as Uint8Array), [1, 0]);
    assert.throws(
      () => decodeContents(type('INT32'), emptyContents({ intContents: [1, 2, 3] }), 2, 'input "i"'),
      invalid(/contents hold 3 INT32 elements; the shape needs 2/),
    );
  });

  test('stacking and splitting along rows', () => {
    const stacked = allocate(type('INT32'), 5);
    copyElements(stacked, new Int32Array([1, 2]), 0);
    copyElements(stacked, new Int32Array([3, 4, 5]), 2);
    assert.deepEqual(Array.from(stacked as Int32Array), [1, 2, 3, 4, 5]);
    assert.deepEqual(Array.from(sliceElements(stacked, 2, 4) as Int32Array), [3, 4]);
    const strings = allocate(type('BYTES'), 3);
    copyElements(strings, ['x'], 0);
    copyElements(strings, ['y', 'z'], 1);
    assert.deepEqual(strings, ['x', 'y', 'z']);
  });
});

function emptyContents(
  fields: Partial<Parameters<typeof decodeContents>[1]>,
): Parameters<typeof decodeContents>[1] {
  return {
    boolContents: [],
    intContents: [],
    int64Contents: [],
    uintContents: [],
    uint64Contents: [],
    fp32Contents: [],
    fp64Contents: [],
    bytesContents: [],
    ...fields,
  };
}
