import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeValue, encodeValue } from '../../src/datatypes/codecs.js';
import { convertValue, readNumbers, writeNumbers } from '../../src/datatypes/convert.js';
import { allDataTypes, DataType, dataTypeInfo } from '../../src/datatypes/data-type.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { nearestFloat32, seededRandom } from './random.js';

const numericScalars = allDataTypes.filter((t) => dataTypeInfo(t).numeric && !dataTypeInfo(t).isVector);
const name = (type: DataType) => DataType[type];
type Source = number | bigint | boolean;

const INT_RANGES: Partial<Record<DataType, [bigint, bigint]>> = {
  [DataType.INT8]: [-128n, 127n],
  [DataType.INT16]: [-32768n, 32767n],
  [DataType.INT32]: [-2147483648n, 2147483647n],
  [DataType.INT64]: [-(2n ** 63n), 2n ** 63n - 1n],
  [DataType.UINT8]: [0n, 255n],
  [DataType.UINT16]: [0n, 65535n],
  [DataType.UINT32]: [0n, 4294967295n],
  [DataType.UINT64]: [0n, 2n ** 64n - 1n],
};

/** The expected target bytes for one source value, by the documented rules (written independently). */
function expectedBytes(to: DataType, value: Source): Uint8Array {
  const info = dataTypeInfo(to);
  if (info.kind === 'bool') {
    return encodeValue(
      to,
      typeof value === 'bigint' ? value !== 0n : typeof value === 'boolean' ? value : value !== 0,
    );
  }
  const range = INT_RANGES[to];
  if (range) {
    let integer: bigint;
    if (typeof value === 'boolean') integer = value ? 1n : 0n;
    else if (typeof value === 'bigint') integer = value;
    else if (Number.isNaN(value)) integer = 0n;
    else if (!Number.isFinite(value)) integer = value > 0 ? range[1] : range[0];
    else integer = BigInt(Math.trunc(value));
    const clamped = integer < range[0] ? range[0] : integer > range[1] ? range[1] : integer;
    return encodeValue(to, clamped);
  }
  if (typeof value === 'bigint') {
    const exact = value >= -(2n ** 53n) && value <= 2n ** 53n;
    if (!exact && to === DataType.FP32) return encodeValue(to, nearestFloat32(value));
    // FP64 rounds once from Number(); FP16 and FP8 overflow long before 2^53.
    return encodeValue(to, Number(value));
  }
  return encodeValue(to, typeof value === 'boolean' ? Number(value) : value);
}

const floatSamples = [
  0, -0, 1, -1, 2.5, -2.5, 0.1, -0.7, 300.75, -300.75, 448, 464, 1000, 57344, 65504, 70000, -1e10, 1e20, 5e-5,
  1e-9,
];
const intSamples = [
  0n,
  1n,
  -1n,
  127n,
  128n,
  -129n,
  255n,
  256n,
  65535n,
  65536n,
  -40000n,
  2n ** 31n,
  -(2n ** 31n) - 1n,
  2n ** 32n,
  2n ** 53n + 1n,
  2n ** 60n + 2n ** 36n + 1n,
  -(2n ** 63n),
  2n ** 63n - 1n,
  2n ** 64n - 1n,
];

/** Values of `type` (each exactly representable in it) to convert from. */
function sourceValues(type: DataType): Source[] {
  const info = dataTypeInfo(type);
  if (info.kind === 'bool') return [false, true];
  const range = INT_RANGES[type];
  if (range) return intSamples.filter((v) => v >= range[0] && v <= range[1]);
  // Round each sample into the type; NaN and ±∞ where the type has them.
  const values = floatSamples.map((x) => decodeValue(type, encodeValue(type, x)) as number);
  values.push(Number.NaN);
  if (type !== DataType.FP8E4M3) values.push(Infinity, -Infinity);
  return values;
}

describe('convertValue', () => {
  test('known values', () => {
    const cases: Array<[DataType, Source, DataType, Source, { saturate?: boolean }?]> = [
      [DataType.FP32, -2.7, DataType.INT8, -2],
      [DataType.FP32, -2.7, DataType.UINT8, 0],
      [DataType.FP32, 2.99, DataType.INT32, 2],
      [DataType.FP64, 300.5, DataType.UINT8, 255],
      [DataType.FP64, 300.5, DataType.INT16, 300],
      [DataType.FP64, -1e20, DataType.INT64, -(2n ** 63n)],
      [DataType.FP64, 1e20, DataType.UINT64, 2n ** 64n - 1n],
      [DataType.FP64, 2 ** 62 + 2 ** 40, DataType.INT64, 2n ** 62n + 2n ** 40n],
      [DataType.FP64, Number.NaN, DataType.INT32, 0],
      [DataType.FP64, -Infinity, DataType.INT16, -32768],
      [DataType.FP64, Number.NaN, DataType.BOOL, true],
      [DataType.FP32, 0.5, DataType.BOOL, true],
      [DataType.FP64, -0, DataType.BOOL, false],
      [DataType.FP16, 65504, DataType.FP8E4M3, Number.NaN],
      [DataType.FP16, 65504, DataType.FP8E5M2, Infinity],
      [DataType.FP32, 65504, DataType.FP8E5M2, 57344, { saturate: true }],
      [DataType.FP8E5M2, 57344, DataType.FP8E4M3, 448, { saturate: true }],
      [DataType.FP8E4M3, 448, DataType.FP16, 448],
      [DataType.FP8E4M3, -(2 ** -9), DataType.FP32, -(2 ** -9)],
      [DataType.FP8E5M2, -Infinity, DataType.FP16, -Infinity],
      [DataType.FP8E5M2, 2 ** -16, DataType.FP8E4M3, 0],
      [DataType.FP32, 0.1, DataType.FP16, 0.0999755859375],
      [DataType.FP64, 1 + 2 ** -11 + 2 ** -40, DataType.FP16, 1 + 2 ** -10],
      [DataType.INT64, 2n ** 62n, DataType.FP16, Infinity],
      [DataType.INT64, -1n, DataType.UINT64, 0n],
      [DataType.UINT64, 2n ** 64n - 1n, DataType.INT64, 2n ** 63n - 1n],
      [DataType.UINT64, 2n ** 64n - 1n, DataType.FP64, 2 ** 64],
      [DataType.UINT64, 2n ** 64n - 1n, DataType.UINT32, 4294967295],
      [DataType.INT64, 2n ** 60n + 2n ** 36n + 1n, DataType.FP32, 2 ** 60 + 2 ** 37],
      [DataType.INT64, 2n ** 53n + 1n, DataType.FP64, 2 ** 53],
      [DataType.INT64, -(2n ** 63n), DataType.INT8, -128],
      [DataType.INT32, -5, DataType.UINT16, 0],
      [DataType.INT32, 70000, DataType.INT16, 32767],
      [DataType.UINT32, 4000000000, DataType.INT32, 2147483647],
      [DataType.UINT32, 4000000000, DataType.INT64, 4000000000n],
      [DataType.BOOL, true, DataType.FP8E4M3, 1],
      [DataType.BOOL, true, DataType.INT64, 1n],
      [DataType.BOOL, false, DataType.FP16, 0],
      [DataType.INT8, -128, DataType.FP8E4M3, -128],
      [DataType.UINT16, 65535, DataType.FP16, Infinity],
      [DataType.INT16, -32768, DataType.FP8E5M2, -32768],
      [DataType.INT16, 200, DataType.BOOL, true],
      [DataType.UINT8, 255, DataType.INT8, 127],
    ];
    for (const [from, value, to, expected, options] of cases) {
      const label = `${name(from)} ${String(value)} → ${name(to)}`;
      const out = convertValue(encodeValue(from, value), from, to, 0, options);
      const actual = decodeValue(to, out);
      if (typeof expected === 'number' && Number.isNaN(expected))
        assert.ok(Number.isNaN(actual as number), label);
      else assert.equal(actual, expected, label);
    }
    // E4M3 overflow keeps the sign in its NaN
    assert.deepEqual(
      convertValue(encodeValue(DataType.FP32, -1000), DataType.FP32, DataType.FP8E4M3),
      Uint8Array.of(0xff),
    );
  });

  for (const from of numericScalars) {
    test(`${name(from)} to every numeric type, scalar and vector, follows the rules`, () => {
      const values = sourceValues(from);
      const fromVector = dataTypeInfo(from).vector;
      for (const to of numericScalars) {
        const expectedParts: Uint8Array[] = [];
        for (const value of values) {
          const expected = expectedBytes(to, value);
          expectedParts.push(expected);
          const actual = convertValue(encodeValue(from, value), from, to);
          assert.deepEqual(actual, expected, `${name(from)} ${String(value)} → ${name(to)}`);
        }
        const toVector = dataTypeInfo(to).vector;
        const vectorIn = encodeValue(fromVector, values as never[]);
        const vectorOut = convertValue(vectorIn, fromVector, toVector, values.length);
        if (to === DataType.BOOL) {
          assert.deepEqual(
            vectorOut,
            encodeValue(
              toVector,
              expectedParts.map((b) => b[0] === 1),
            ),
          );
        } else {
          assert.deepEqual(
            vectorOut,
            Uint8Array.from(expectedParts.flatMap((b) => [...b])),
            `${name(fromVector)} → ${name(toVector)}`,
          );
        }
        // At dimension 0 a BOOL_VECTOR counts 8 elements per byte (its length is not recoverable).
        if (from !== DataType.BOOL)
          assert.deepEqual(convertValue(vectorIn, fromVector, toVector), vectorOut, 'dimension 0');
      }
    });
  }

  test('vectors and scalars convert into each other only at dimension 1', () => {
    const one = encodeValue(DataType.FP32_VECTOR, [2.5]);
    assert.deepEqual(
      decodeValue(DataType.INT32, convertValue(one, DataType.FP32_VECTOR, DataType.INT32, 1)),
      2,
    );
    assert.deepEqual(decodeValue(DataType.INT32, convertValue(one, DataType.FP32_VECTOR, DataType.INT32)), 2);
    const scalar = encodeValue(DataType.FP32, 2.5);
    assert.deepEqual(
      decodeValue(DataType.INT8_VECTOR, convertValue(scalar, DataType.FP32, DataType.INT8_VECTOR, 1)),
      Int8Array.of(2),
    );
    assert.deepEqual(
      convertValue(encodeValue(DataType.BOOL_VECTOR, [true]), DataType.BOOL_VECTOR, DataType.BOOL, 1),
      Uint8Array.of(1),
    );
    assert.deepEqual(
      convertValue(encodeValue(DataType.BOOL, true), DataType.BOOL, DataType.BOOL_VECTOR),
      Uint8Array.of(1),
    );
    const rejects = (fn: () => unknown, field: string) =>
      assert.throws(
        fn,
        (err) =>
          isLatticeError(err, 'INVALID_ARGUMENT') && err.field === field && err.message.includes(field),
      );
    rejects(
      () =>
        convertValue(encodeValue(DataType.FP32_VECTOR, [1, 2]), DataType.FP32_VECTOR, DataType.FP32, 2, {
          field: 'in',
        }),
      'in',
    );
    rejects(
      () => convertValue(new Uint8Array(0), DataType.FP32_VECTOR, DataType.FP32, 0, { field: 'in' }),
      'in',
    );
    rejects(() => convertValue(scalar, DataType.FP32, DataType.FP32_VECTOR, 2, { field: 'in' }), 'in');
  });

  test('wrong lengths and non-numeric types are INVALID_ARGUMENT naming the field', () => {
    const rejects = (fn: () => unknown) =>
      assert.throws(
        fn,
        (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'targets[0].feature_values[2]',
      );
    const field = { field: 'targets[0].feature_values[2]' };
    rejects(() => convertValue(new Uint8Array(3), DataType.FP32, DataType.FP64, 0, field));
    rejects(() => convertValue(new Uint8Array(8), DataType.FP32_VECTOR, DataType.FP16_VECTOR, 3, field));
    rejects(() => convertValue(new Uint8Array(1), DataType.STRING, DataType.FP32, 0, field));
    rejects(() => convertValue(new Uint8Array(4), DataType.FP32, DataType.STRING, 0, field));
  });

  test('the same type passes the bytes through after checking them', () => {
    const bytes = encodeValue(DataType.FP16_VECTOR, [1, 2]);
    assert.equal(convertValue(bytes, DataType.FP16_VECTOR, DataType.FP16_VECTOR, 2), bytes);
    assert.throws(() => convertValue(bytes, DataType.FP16_VECTOR, DataType.FP16_VECTOR, 3));
  });
});

describe('readNumbers / writeNumbers (bulk columns)', () => {
  const bulkTypes = [...numericScalars, DataType.BOOL_VECTOR];

  /** The per-value path: the element's JS value as a number (BOOL as 0/1). */
  function perValue(type: DataType, bytes: Uint8Array, index: number): number {
    if (type === DataType.BOOL_VECTOR) return (bytes[index >> 3]! >> (index & 7)) & 1;
    const size = dataTypeInfo(type).elementBytes;
    const value = decodeValue(type, bytes.subarray(index * size, (index + 1) * size));
    return Number(value);
  }

  for (const type of bulkTypes) {
    test(`${name(type)}: reading equals decoding value by value, aligned or not, into float64 and float32`, () => {
      const random = seededRandom(type * 31 + 1);
      const count = 37;
      const size = type === DataType.BOOL_VECTOR ? 0 : dataTypeInfo(type).elementBytes;
      const width = type === DataType.BOOL_VECTOR ? Math.ceil(count / 8) : count * size;
      for (const offset of [0, 1, 3, 8]) {
        const backing = new Uint8Array(width + offset + 8);
        for (let i = 0; i < backing.length; i++) backing[i] = Math.floor(random() * 256);
        if (type === DataType.BOOL) for (let i = 0; i < backing.length; i++) backing[i]! &= 1;
        const bytes = backing.subarray(offset, offset + width);
        const wide = new Float64Array(count + 2);
        const narrow = new Float32Array(count + 2);
        readNumbers(type, bytes, count, wide, 2);
        readNumbers(type, bytes, count, narrow, 1);
        for (let i = 0; i < count; i++) {
          const expected = perValue(type, bytes, i);
          assert.ok(
            Object.is(wide[2 + i], expected),
            `${name(type)}[${i}] at offset ${offset}: ${wide[2 + i]} vs ${expected}`,
          );
          let expected32 = Math.fround(expected);
          if (type === DataType.INT64 || type === DataType.UINT64) {
            const exact = decodeValue(type, bytes.subarray(i * 8, i * 8 + 8)) as bigint;
            expected32 = nearestFloat32(exact);
          }
          assert.ok(
            Object.is(narrow[1 + i], expected32),
            `${name(type)}[${i}] as float32 at offset ${offset}`,
          );
        }
      }
    });

    test(`${name(type)}: writing equals converting value by value, aligned or not`, () => {
      const random = seededRandom(type * 17 + 5);
      const count = 41;
      const values = new Float64Array(count);
      for (let i = 0; i < count; i++) {
        const pick = random();
        values[i] =
          pick < 0.05
            ? Number.NaN
            : pick < 0.1
              ? random() < 0.5
                ? Infinity
                : -Infinity
              : pick < 0.15
                ? -0
                : (random() - 0.5) * 2 ** Math.floor(random() * 80 - 20);
      }
      const size = type === DataType.BOOL_VECTOR ? 0 : dataTypeInfo(type).elementBytes;
      const width = type === DataType.BOOL_VECTOR ? Math.ceil(count / 8) : count * size;
      const expected =
        type === DataType.BOOL_VECTOR
          ? encodeValue(
              type,
              Array.from(values, (v) => v !== 0),
            )
          : Uint8Array.from(Array.from(values).flatMap((v) => [...expectedBytes(type, v)]));
      for (const offset of [0, 1, 2, 8]) {
        const out = new Uint8Array(width + offset + 3).fill(0xaa);
        writeNumbers(type, values, count, out, offset);
        assert.deepEqual(out.subarray(offset, offset + width), expected, `${name(type)} at offset ${offset}`);
        assert.ok(
          out.subarray(0, offset).every((b) => b === 0xaa) &&
            out.subarray(offset + width).every((b) => b === 0xaa),
          'stays in bounds',
        );
        const fromFloat32 = new Uint8Array(width);
        writeNumbers(type, Float32Array.from(values), count, fromFloat32);
        assert.deepEqual(
          fromFloat32,
          type === DataType.BOOL_VECTOR
            ? encodeValue(
                type,
                Array.from(Float32Array.from(values), (v) => v !== 0),
              )
            : Uint8Array.from(
                Array.from(Float32Array.from(values)).flatMap((v) => [...expectedBytes(type, v)]),
              ),
        );
      }
    });
  }

  test('a short input or output is an error, not a partial read', () => {
    assert.throws(
      () => readNumbers(DataType.FP32, new Uint8Array(7), 2, new Float64Array(2)),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
    );
    assert.throws(
      () => readNumbers(DataType.FP32, new Uint8Array(8), 2, new Float64Array(2), 1),
      (err) => isLatticeError(err, 'INTERNAL'),
    );
    assert.throws(
      () => writeNumbers(DataType.FP16, new Float64Array(2), 2, new Uint8Array(3)),
      (err) => isLatticeError(err, 'INTERNAL'),
    );
    assert.throws(
      () => readNumbers(DataType.STRING, new Uint8Array(8), 1, new Float64Array(1)),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
    );
  });

  test('FP8 saturating mode in bulk', () => {
    const out = new Uint8Array(3);
    writeNumbers(DataType.FP8E4M3_VECTOR, Float64Array.of(1000, -Infinity, Number.NaN), 3, out, 0, {
      saturate: true,
    });
    assert.deepEqual(out, Uint8Array.of(0x7e, 0xfe, 0x7f));
    writeNumbers(DataType.FP8E5M2, Float64Array.of(1e6, -1e6, 1), 3, out);
    assert.deepEqual(out, Uint8Array.of(0x7c, 0xfc, 0x3c));
  });
});
