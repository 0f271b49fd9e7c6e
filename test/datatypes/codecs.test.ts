import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  checkValueLength,
  type DecodedValue,
  decodeValue,
  defaultValue,
  type EncodableValue,
  encodeValue,
} from '../../src/datatypes/codecs.js';
import { allDataTypes, DataType, dataTypeInfo } from '../../src/datatypes/data-type.js';
import { isLatticeError } from '../../src/platform/errors.js';

const bytes = (...values: number[]) => new Uint8Array(values);

/** A value of every type, exactly representable in it, with what decoding gives back. */
const samples: ReadonlyArray<[DataType, EncodableValue, DecodedValue]> = [
  [DataType.FP8E5M2, -1.5, -1.5],
  [DataType.FP8E4M3, 448, 448],
  [DataType.FP16, 0.0999755859375, 0.0999755859375],
  [DataType.FP32, Math.fround(0.1), Math.fround(0.1)],
  [DataType.FP64, 0.1, 0.1],
  [DataType.INT8, -128, -128],
  [DataType.INT16, 32767, 32767],
  [DataType.INT32, -2147483648, -2147483648],
  [DataType.INT64, -(2n ** 63n), -(2n ** 63n)],
  [DataType.UINT8, 255, 255],
  [DataType.UINT16, 65535, 65535],
  [DataType.UINT32, 4294967295, 4294967295],
  [DataType.UINT64, 2n ** 64n - 1n, 2n ** 64n - 1n],
  [DataType.STRING, 'héllo, wörld', 'héllo, wörld'],
  [DataType.BOOL, true, true],
  [DataType.FP8E5M2_VECTOR, [0.5, -57344, Infinity], Float32Array.of(0.5, -57344, Infinity)],
  [DataType.FP8E4M3_VECTOR, [2 ** -9, -0, 1.75], Float32Array.of(2 ** -9, -0, 1.75)],
  [DataType.FP16_VECTOR, [65504, 2 ** -24, -2], Float32Array.of(65504, 2 ** -24, -2)],
  [DataType.FP32_VECTOR, Float32Array.of(1.5, -3.25, 1e30), Float32Array.of(1.5, -3.25, 1e30)],
  [DataType.FP64_VECTOR, [0.1, -1e300, 5e-324], Float64Array.of(0.1, -1e300, 5e-324)],
  [DataType.INT8_VECTOR, [-1, 0, 127], Int8Array.of(-1, 0, 127)],
  [DataType.INT16_VECTOR, [-300, 300], Int16Array.of(-300, 300)],
  [DataType.INT32_VECTOR, [2147483647, -5], Int32Array.of(2147483647, -5)],
  [DataType.INT64_VECTOR, [2n ** 63n - 1n, -1n, 5], BigInt64Array.of(2n ** 63n - 1n, -1n, 5n)],
  [DataType.UINT8_VECTOR, [0, 200], Uint8Array.of(0, 200)],
  [DataType.UINT16_VECTOR, [65535, 1], Uint16Array.of(65535, 1)],
  [DataType.UINT32_VECTOR, [4000000000], Uint32Array.of(4000000000)],
  [DataType.UINT64_VECTOR, [2n ** 64n - 1n, 0n], BigUint64Array.of(2n ** 64n - 1n, 0n)],
  [DataType.STRING_VECTOR, ['a', '', 'ß,c'], ['a', '', 'ß,c']],
  [
    DataType.BOOL_VECTOR,
    [true, false, true, true, false, false, false, false, true],
    [true, false, true, true, false, false, false, false, true],
  ],
];

function invalid(field: string, pattern?: RegExp) {
  return (err: unknown) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
    assert.equal(err.field, field);
    assert.ok(err.message.includes(field), err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  };
}

describe('encodeValue / decodeValue', () => {
  test('every type has a sample', () => {
    assert.deepEqual(
      samples.map(([type]) => type).sort((a, b) => a - b),
      [...allDataTypes],
    );
  });

  for (const [type, value, decoded] of samples) {
    test(`${DataType[type]} round-trips`, () => {
      const encoded = encodeValue(type, value);
      const info = dataTypeInfo(type);
      const dim = info.isVector ? (decoded as ArrayLike<unknown>).length : 0;
      // (A BOOL_VECTOR read at dimension 0 counts its padding bits too; tested below.)
      if (type !== DataType.BOOL_VECTOR) assert.deepEqual(decodeValue(type, encoded), decoded);
      assert.deepEqual(decodeValue(type, encoded, dim, 'f'), decoded);
      assert.deepEqual(encodeValue(type, decodeValue(type, encoded, dim), dim), encoded);
      assert.equal(checkValueLength(type, dim, encoded, 'f'), info.isVector ? dim : 1);
    });
  }

  test('numbers are little-endian, vectors back to back', () => {
    assert.deepEqual(encodeValue(DataType.INT32, 0x01020304), bytes(4, 3, 2, 1));
    assert.deepEqual(encodeValue(DataType.UINT16_VECTOR, [0x0102, 0x0304]), bytes(2, 1, 4, 3));
    assert.deepEqual(encodeValue(DataType.INT64, -2n), bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    assert.deepEqual(encodeValue(DataType.FP32, 1), bytes(0, 0, 0x80, 0x3f));
    assert.deepEqual(encodeValue(DataType.FP64, -2), bytes(0, 0, 0, 0, 0, 0, 0, 0xc0));
    assert.deepEqual(encodeValue(DataType.FP16_VECTOR, [1, -2]), bytes(0x00, 0x3c, 0x00, 0xc0));
    assert.deepEqual(encodeValue(DataType.FP8E4M3_VECTOR, [1, 1000]), bytes(0x38, 0x7f));
    assert.deepEqual(encodeValue(DataType.FP8E5M2, -1), bytes(0xbc));
    assert.deepEqual(encodeValue(DataType.BOOL, false), bytes(0));
    assert.deepEqual(encodeValue(DataType.BOOL, 1), bytes(1));
  });

  test('BOOL_VECTOR packs least significant bit first, ceil(n/8) bytes, padding zero', () => {
    assert.deepEqual(encodeValue(DataType.BOOL_VECTOR, [true]), bytes(0x01));
    assert.deepEqual(encodeValue(DataType.BOOL_VECTOR, [false, true]), bytes(0x02));
    assert.deepEqual(
      encodeValue(DataType.BOOL_VECTOR, [false, false, false, false, false, false, false, true]),
      bytes(0x80),
    );
    assert.deepEqual(
      encodeValue(DataType.BOOL_VECTOR, [true, false, false, false, false, false, false, false, true, true]),
      bytes(0x01, 0x03),
    );
    assert.deepEqual(encodeValue(DataType.BOOL_VECTOR, []), bytes());
    assert.deepEqual(decodeValue(DataType.BOOL_VECTOR, bytes(0x05), 3), [true, false, true]);
    // dimension 0: the length is not recoverable, every bit counts
    assert.deepEqual(decodeValue(DataType.BOOL_VECTOR, bytes(0x81)), [
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      true,
    ]);
  });

  test('STRING_VECTOR is a 4-byte little-endian length then UTF-8 bytes, per element', () => {
    assert.deepEqual(
      encodeValue(DataType.STRING_VECTOR, ['ab', '', 'é']),
      bytes(2, 0, 0, 0, 0x61, 0x62, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9),
    );
    assert.deepEqual(encodeValue(DataType.STRING_VECTOR, []), bytes());
    assert.deepEqual(encodeValue(DataType.STRING, 'é'), bytes(0xc3, 0xa9));
  });

  test('decoding reads from a view at any offset and returns copies', () => {
    const backing = new Uint8Array(11);
    backing.set(encodeValue(DataType.FP64_VECTOR, [1.5]), 3);
    const view = backing.subarray(3);
    assert.deepEqual(decodeValue(DataType.FP64_VECTOR, view), Float64Array.of(1.5));
    const ints = decodeValue(DataType.UINT8_VECTOR, backing.subarray(0, 2)) as Uint8Array;
    ints[0] = 9;
    assert.equal(backing[0], 0);
  });

  test('values that do not fit the type are INVALID_ARGUMENT naming the field and element', () => {
    assert.throws(() => encodeValue(DataType.INT8, 128, 0, 'x'), invalid('x', /\[-128, 127\]/));
    assert.throws(() => encodeValue(DataType.UINT8, -1, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.INT32, 2.5, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.INT64, 2n ** 63n, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.UINT64, -1n, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.FP32, 'one', 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.STRING, 5, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.BOOL, 2, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.FP32_VECTOR, 1.5, 0, 'x'), invalid('x'));
    assert.throws(() => encodeValue(DataType.FP32_VECTOR, [1, 2], 3, 'x'), invalid('x', /dimension 3/));
    assert.throws(() => encodeValue(DataType.INT16_VECTOR, [1, 40000], 0, 'x'), invalid('x[1]'));
    assert.throws(() => encodeValue(DataType.STRING_VECTOR, ['a', 1], 0, 'x'), invalid('x[1]'));
    assert.throws(() => encodeValue(DataType.BOOL_VECTOR, [true, 'no'], 0, 'x'), invalid('x[1]'));
    assert.throws(
      () => encodeValue(DataType.UNSPECIFIED, 1),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
    );
  });

  test('integers accept integral numbers and bigints; floats accept bigints rounded once', () => {
    assert.deepEqual(encodeValue(DataType.INT64, 1e18), encodeValue(DataType.INT64, 10n ** 18n));
    assert.deepEqual(encodeValue(DataType.UINT8, 7n), bytes(7));
    // 2^60 + 2^36 + 1 is just above a float32 midpoint; rounding through a double would tie down to 2^60.
    assert.equal(
      decodeValue(DataType.FP32, encodeValue(DataType.FP32, 2n ** 60n + 2n ** 36n + 1n)),
      2 ** 60 + 2 ** 37,
    );
  });
});

describe('checkValueLength', () => {
  const fixed: ReadonlyArray<[DataType, number]> = [
    [DataType.FP8E5M2, 1],
    [DataType.FP8E4M3, 1],
    [DataType.FP16, 2],
    [DataType.FP32, 4],
    [DataType.FP64, 8],
    [DataType.INT8, 1],
    [DataType.INT16, 2],
    [DataType.INT32, 4],
    [DataType.INT64, 8],
    [DataType.UINT8, 1],
    [DataType.UINT16, 2],
    [DataType.UINT32, 4],
    [DataType.UINT64, 8],
    [DataType.BOOL, 1],
  ];

  for (const [type, width] of fixed) {
    const name = DataType[type];
    test(`${name}: ${width} byte(s); its vector ${width} × dim, or any multiple at dim 0`, () => {
      const vector = dataTypeInfo(type).vector;
      if (type !== DataType.BOOL) {
        assert.equal(checkValueLength(type, 0, new Uint8Array(width), 'f'), 1);
        for (const wrong of [0, width - 1, width + 1]) {
          if (wrong === width) continue;
          assert.throws(
            () => checkValueLength(type, 0, new Uint8Array(wrong), 'targets[2].feature_values[1]'),
            invalid('targets[2].feature_values[1]', new RegExp(`${name} value takes ${width} byte`)),
          );
        }
        assert.equal(checkValueLength(vector, 3, new Uint8Array(3 * width), 'f'), 3);
        assert.throws(
          () => checkValueLength(vector, 3, new Uint8Array(2 * width), 'v'),
          invalid('v', /dimension 3/),
        );
        assert.throws(() => checkValueLength(vector, 3, new Uint8Array(3 * width + 1), 'v'), invalid('v'));
        assert.equal(checkValueLength(vector, 0, new Uint8Array(5 * width), 'f'), 5);
        assert.equal(checkValueLength(vector, 0, new Uint8Array(0), 'f'), 0);
        if (width > 1)
          assert.throws(
            () => checkValueLength(vector, 0, new Uint8Array(2 * width + 1), 'v'),
            invalid('v', /multiple/),
          );
      } else {
        assert.equal(checkValueLength(type, 0, bytes(1), 'f'), 1);
        assert.throws(() => checkValueLength(type, 0, bytes(), 'b'), invalid('b'));
        assert.throws(() => checkValueLength(type, 0, bytes(1, 0), 'b'), invalid('b'));
      }
    });
  }

  test('scalar types ignore the vector dimension; a negative or fractional dimension is an error', () => {
    assert.equal(checkValueLength(DataType.FP32, 4, new Uint8Array(4), 'f'), 1);
    assert.throws(() => checkValueLength(DataType.FP32_VECTOR, -1, new Uint8Array(4), 'd'), invalid('d'));
    assert.throws(() => checkValueLength(DataType.FP32_VECTOR, 1.5, new Uint8Array(4), 'd'), invalid('d'));
  });

  test('BOOL_VECTOR takes ceil(dim/8) bytes', () => {
    assert.equal(checkValueLength(DataType.BOOL_VECTOR, 1, bytes(0), 'f'), 1);
    assert.equal(checkValueLength(DataType.BOOL_VECTOR, 8, bytes(0), 'f'), 8);
    assert.equal(checkValueLength(DataType.BOOL_VECTOR, 9, bytes(0, 0), 'f'), 9);
    assert.throws(
      () => checkValueLength(DataType.BOOL_VECTOR, 9, bytes(0), 'b'),
      invalid('b', /2 bytes, got 1 byte/),
    );
    assert.throws(() => checkValueLength(DataType.BOOL_VECTOR, 8, bytes(0, 0), 'b'), invalid('b'));
    assert.equal(checkValueLength(DataType.BOOL_VECTOR, 0, bytes(0, 0), 'f'), 16);
  });

  test('STRING takes any bytes; STRING_VECTOR needs well-formed prefixes and, at dim > 0, exactly dim elements', () => {
    assert.equal(checkValueLength(DataType.STRING, 0, bytes(), 'f'), 1);
    assert.equal(checkValueLength(DataType.STRING, 0, bytes(0xff, 0), 'f'), 1);
    const two = encodeValue(DataType.STRING_VECTOR, ['ab', 'c']);
    assert.equal(checkValueLength(DataType.STRING_VECTOR, 2, two, 'f'), 2);
    assert.equal(checkValueLength(DataType.STRING_VECTOR, 0, two, 'f'), 2);
    assert.equal(checkValueLength(DataType.STRING_VECTOR, 0, bytes(), 'f'), 0);
    assert.throws(
      () => checkValueLength(DataType.STRING_VECTOR, 3, two, 's'),
      invalid('s', /dimension 3 holds 2/),
    );
    assert.throws(
      () => checkValueLength(DataType.STRING_VECTOR, 0, two.subarray(0, two.length - 1), 's'),
      invalid('s', /element 1 declares 1 byte/),
    );
    assert.throws(
      () => checkValueLength(DataType.STRING_VECTOR, 0, bytes(1, 0, 0), 's'),
      invalid('s', /element 0 has a cut-off/),
    );
    assert.throws(
      () => checkValueLength(DataType.STRING_VECTOR, 0, bytes(0, 0, 0, 0, 5), 's'),
      invalid('s', /element 1/),
    );
    assert.throws(
      () => checkValueLength(DataType.STRING_VECTOR, 1, bytes(0xff, 0xff, 0xff, 0xff), 's'),
      invalid('s'),
    );
  });

  test('decodeValue checks lengths too, never reading a silent zero', () => {
    assert.throws(() => decodeValue(DataType.FP32, bytes(0, 0, 0), 0, 'score'), invalid('score'));
    assert.throws(() => decodeValue(DataType.INT64_VECTOR, new Uint8Array(12), 0, 'ids'), invalid('ids'));
  });
});

describe('defaultValue', () => {
  test('zero of every type, sized by the vector dimension', () => {
    assert.deepEqual(defaultValue(DataType.FP32, 0), new Uint8Array(4));
    assert.deepEqual(defaultValue(DataType.INT64, 0), new Uint8Array(8));
    assert.deepEqual(defaultValue(DataType.BOOL, 0), bytes(0));
    assert.deepEqual(defaultValue(DataType.STRING, 0), bytes());
    assert.deepEqual(defaultValue(DataType.FP16_VECTOR, 3), new Uint8Array(6));
    assert.deepEqual(defaultValue(DataType.BOOL_VECTOR, 9), bytes(0, 0));
    assert.deepEqual(defaultValue(DataType.FP32_VECTOR, 0), bytes());
    assert.deepEqual(decodeValue(DataType.STRING_VECTOR, defaultValue(DataType.STRING_VECTOR, 2), 2), [
      '',
      '',
    ]);
    for (const type of allDataTypes) {
      const dim = dataTypeInfo(type).isVector ? 4 : 0;
      const value = defaultValue(type, dim);
      assert.equal(checkValueLength(type, dim, value, 'f'), dataTypeInfo(type).isVector ? 4 : 1);
      assert.ok(value.every((b) => b === 0));
    }
  });
});
