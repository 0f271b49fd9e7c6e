import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeValue, encodeValue } from '../../src/datatypes/codecs.js';
import { allDataTypes, DataType, dataTypeInfo } from '../../src/datatypes/data-type.js';
import { formatValue, parseValue } from '../../src/datatypes/value-text.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { randomDoubles, seededRandom } from './random.js';

const format = (type: DataType, value: Parameters<typeof encodeValue>[1]) =>
  formatValue(type, encodeValue(type, value));

describe('formatValue', () => {
  test('numbers in the shortest text that reads back to the same value', () => {
    assert.equal(format(DataType.FP64, 0.1), '0.1');
    assert.equal(format(DataType.FP64, 1e-7), '1e-7');
    assert.equal(format(DataType.FP64, 1 / 3), '0.3333333333333333');
    assert.equal(format(DataType.FP32, 0.1), '0.1'); // not 0.10000000149011612
    assert.equal(format(DataType.FP32, 1 / 3), '0.33333334');
    assert.equal(format(DataType.FP32, 16777217), '16777216');
    assert.equal(format(DataType.FP16, 0.1), '0.099975586'); // the FP16 value, printed as a float32
    assert.equal(format(DataType.FP16, 65504), '65504');
    assert.equal(format(DataType.FP16, 2 ** -24), '5.9604645e-8');
    assert.equal(format(DataType.FP8E4M3, 448), '448');
    assert.equal(format(DataType.FP8E4M3, 0.1), '0.1015625');
    assert.equal(format(DataType.FP8E5M2, -57344), '-57344');
    assert.equal(format(DataType.INT8, -128), '-128');
    assert.equal(format(DataType.UINT32, 4294967295), '4294967295');
    assert.equal(format(DataType.INT64, -(2n ** 63n)), '-9223372036854775808');
    assert.equal(format(DataType.UINT64, 2n ** 64n - 1n), '18446744073709551615');
  });

  test('special values, booleans, strings, vectors', () => {
    assert.equal(format(DataType.FP32, -0), '-0');
    assert.equal(format(DataType.FP64, Number.NaN), 'NaN');
    assert.equal(format(DataType.FP16, -Infinity), '-Infinity');
    assert.equal(format(DataType.FP8E4M3, 1000), 'NaN');
    assert.equal(format(DataType.BOOL, true), 'true');
    assert.equal(format(DataType.BOOL, false), 'false');
    assert.equal(format(DataType.STRING, 'a,b é'), 'a,b é');
    assert.equal(format(DataType.FP32_VECTOR, [1.5, -2, 0.1]), '1.5,-2,0.1');
    assert.equal(format(DataType.INT64_VECTOR, [1n, -2n]), '1,-2');
    assert.equal(
      format(DataType.BOOL_VECTOR, [true, false, true]).split(',').slice(0, 3).join(','),
      'true,false,true',
    );
    assert.equal(
      formatValue(DataType.BOOL_VECTOR, encodeValue(DataType.BOOL_VECTOR, [true, false, true]), 3),
      'true,false,true',
    );
    assert.equal(format(DataType.STRING_VECTOR, ['x', 'y z']), 'x,y z');
    assert.equal(format(DataType.FP16_VECTOR, []), '');
  });

  test('a value of the wrong length is INVALID_ARGUMENT naming the field', () => {
    assert.throws(
      () => formatValue(DataType.FP64, new Uint8Array(4), 0, 'row 3 score'),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'row 3 score',
    );
  });
});

describe('parseValue', () => {
  test('decimal text into each numeric type', () => {
    const parse = (type: DataType, text: string, dim = 0) =>
      decodeValue(type, parseValue(type, text, dim), dim);
    assert.equal(parse(DataType.FP64, '12.5'), 12.5);
    assert.equal(parse(DataType.FP64, ' -1e-7 '), -1e-7);
    assert.equal(parse(DataType.FP64, '.5'), 0.5);
    assert.equal(parse(DataType.FP64, '+3.'), 3);
    assert.equal(parse(DataType.FP32, '0.1'), Math.fround(0.1));
    assert.equal(parse(DataType.FP16, '65504'), 65504);
    assert.equal(parse(DataType.FP16, '65520'), Infinity);
    assert.equal(parse(DataType.FP8E4M3, '464'), 448);
    assert.ok(Number.isNaN(parse(DataType.FP8E4M3, '465') as number));
    assert.equal(parse(DataType.FP8E5M2, '-inf'), -Infinity);
    assert.equal(parse(DataType.FP32, 'Infinity'), Infinity);
    assert.ok(Number.isNaN(parse(DataType.FP64, 'NaN') as number));
    assert.ok(Object.is(parse(DataType.FP32, '-0'), -0));
    assert.equal(parse(DataType.INT8, '-128'), -128);
    assert.equal(parse(DataType.UINT16, '+65535'), 65535);
    assert.equal(parse(DataType.INT64, '-9223372036854775808'), -(2n ** 63n));
    assert.equal(parse(DataType.UINT64, '18446744073709551615'), 2n ** 64n - 1n);
    assert.equal(parse(DataType.INT32, '007'), 7);
    assert.equal(parse(DataType.BOOL, 'true'), true);
    assert.equal(parse(DataType.BOOL, 'FALSE'), false);
    assert.equal(parse(DataType.BOOL, '1'), true);
    assert.equal(parse(DataType.STRING, ' as is, '), ' as is, ');
  });

  test('vectors split on "," (or ":", the original input separator)', () => {
    const parse = (type: DataType, text: string, dim = 0) =>
      decodeValue(type, parseValue(type, text, dim), dim);
    assert.deepEqual(parse(DataType.FP32_VECTOR, '1.5,-2, 3'), Float32Array.of(1.5, -2, 3));
    assert.deepEqual(parse(DataType.FP32_VECTOR, '1.5:-2:3', 3), Float32Array.of(1.5, -2, 3));
    assert.deepEqual(
      parse(DataType.INT64_VECTOR, '1,-9223372036854775808'),
      BigInt64Array.of(1n, -(2n ** 63n)),
    );
    assert.deepEqual(parse(DataType.BOOL_VECTOR, 'true,false,1', 3), [true, false, true]);
    assert.deepEqual(parse(DataType.STRING_VECTOR, 'a,,b c'), ['a', '', 'b c']);
    assert.deepEqual(parse(DataType.STRING_VECTOR, 'a:b'), ['a:b']);
    assert.deepEqual(parse(DataType.FP16_VECTOR, ''), new Float32Array(0));
    assert.deepEqual(parse(DataType.STRING_VECTOR, ''), []);
  });

  test('bad text is INVALID_ARGUMENT naming the field and element', () => {
    const rejects = (type: DataType, text: string, field: string, dim = 0) =>
      assert.throws(
        () => parseValue(type, text, dim, 'features.age'),
        (err) =>
          isLatticeError(err, 'INVALID_ARGUMENT') && err.field === field && err.message.includes(field),
        `${DataType[type]} ${JSON.stringify(text)}`,
      );
    rejects(DataType.FP32, '', 'features.age');
    rejects(DataType.FP32, 'abc', 'features.age');
    rejects(DataType.FP32, '1.5x', 'features.age');
    rejects(DataType.FP32, '0x10', 'features.age');
    rejects(DataType.FP32, '1,5', 'features.age');
    rejects(DataType.INT32, '12.5', 'features.age');
    rejects(DataType.INT32, '1e3', 'features.age');
    rejects(DataType.INT8, '128', 'features.age');
    rejects(DataType.UINT8, '-1', 'features.age');
    rejects(DataType.UINT64, '18446744073709551616', 'features.age');
    rejects(DataType.BOOL, 'yes', 'features.age');
    rejects(DataType.BOOL, '', 'features.age');
    rejects(DataType.FP32_VECTOR, '1,,2', 'features.age[1]');
    rejects(DataType.INT16_VECTOR, '1,x', 'features.age[1]');
    rejects(DataType.BOOL_VECTOR, 'true,maybe', 'features.age[1]');
    rejects(DataType.FP32_VECTOR, '1,2', 'features.age', 3);
    rejects(DataType.STRING_VECTOR, 'a,b', 'features.age', 1);
  });

  test('text with more digits than a double holds still rounds once into FP32 and FP16', () => {
    // 1 + 2^-24 is a float32 midpoint (1 | 1 + 2^-23); these decimals are a hair above and below it, which Number() loses.
    const above = '1.00000005960464477539062500000000000001';
    const below = '1.00000005960464477539062499999999999999';
    assert.equal(decodeValue(DataType.FP32, parseValue(DataType.FP32, above)), 1 + 2 ** -23);
    assert.equal(decodeValue(DataType.FP32, parseValue(DataType.FP32, below)), 1);
    assert.equal(decodeValue(DataType.FP32, parseValue(DataType.FP32, '1.000000059604644775390625')), 1); // exact tie: even
    // 1 + 2^-11 is an FP16 midpoint
    assert.equal(
      decodeValue(DataType.FP16, parseValue(DataType.FP16, '1.00048828125000000000000001')),
      1 + 2 ** -10,
    );
    assert.equal(decodeValue(DataType.FP16, parseValue(DataType.FP16, '1.00048828125')), 1);
    // FP16 overflow boundary 65520: just below stays finite
    assert.equal(decodeValue(DataType.FP16, parseValue(DataType.FP16, '65519.99999999999999999999')), 65504);
  });
});

describe('format/parse round-trips', () => {
  const random = seededRandom(2024);
  const samples = new Map<DataType, Parameters<typeof encodeValue>[1]>([
    [DataType.STRING, 'héllo wörld'],
    [DataType.BOOL, true],
    [DataType.INT8, -7],
    [DataType.INT16, -30000],
    [DataType.INT32, 123456789],
    [DataType.INT64, -(2n ** 62n) - 3n],
    [DataType.UINT8, 200],
    [DataType.UINT16, 60000],
    [DataType.UINT32, 4000000000],
    [DataType.UINT64, 2n ** 64n - 2n],
    [DataType.STRING_VECTOR, ['a', 'b c', '']],
    [DataType.BOOL_VECTOR, [true, false, false, true, true, false, true, false, true]],
  ]);
  for (const type of allDataTypes) {
    const info = dataTypeInfo(type);
    test(`${DataType[type]}`, () => {
      let values: Parameters<typeof encodeValue>[1][];
      if (info.kind === 'float') {
        const doubles = randomDoubles(random, 300, -30, 20);
        doubles.push(0, -0, Number.NaN, Infinity, -Infinity, 0.1, 1 / 3);
        // Vectors: one chunk free of NaN (checked byte for byte), one with everything.
        values = info.isVector
          ? [doubles.slice(0, 50).filter((x) => Math.abs(x) < 400), doubles.slice(50)]
          : doubles;
      } else {
        const scalar = samples.get(info.scalar);
        const sample = samples.get(type);
        values = [info.isVector ? (sample ?? [scalar, scalar]) : scalar!] as Parameters<
          typeof encodeValue
        >[1][];
      }
      for (const value of values) {
        const bytes = encodeValue(type, value);
        const dim = info.isVector ? (decodeValue(type, bytes) as ArrayLike<unknown>).length : 0;
        const exactDim = type === DataType.BOOL_VECTOR ? 9 : dim;
        const text = formatValue(type, bytes, exactDim);
        const parsed = parseValue(type, text, exactDim);
        assert.equal(formatValue(type, parsed, exactDim), text);
        // Bytes come back identical, except that a NaN's sign (E4M3 writes −NaN as 0xFF) is not text.
        if (!text.includes('NaN')) assert.deepEqual(parsed, bytes, `${DataType[type]}: ${text.slice(0, 60)}`);
      }
    });
  }
});
