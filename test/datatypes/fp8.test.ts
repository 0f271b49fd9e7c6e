import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  decodeFp8E4M3,
  decodeFp8E5M2,
  encodeFp8E4M3,
  encodeFp8E5M2,
  FP8E4M3_MAX,
  FP8E5M2_MAX,
} from '../../src/datatypes/fp8.js';
import { nearestCode, randomDoubles, seededRandom } from './random.js';

/**
 * The value of a code as the OCP OFP8 specification defines it, written from the definition
 * (sign, exponent with the format's bias, mantissa, subnormals at exponent 0, special encodings)
 * and not from the implementation.
 */
function ocpValue(code: number, format: 'E4M3' | 'E5M2'): number {
  const exponentBits = format === 'E4M3' ? 4 : 5;
  const mantissaBits = 7 - exponentBits;
  const bias = format === 'E4M3' ? 7 : 15;
  const sign = code & 0x80 ? -1 : 1;
  const exponent = (code >> mantissaBits) & ((1 << exponentBits) - 1);
  const mantissa = code & ((1 << mantissaBits) - 1);
  const allOnes = (1 << exponentBits) - 1;
  if (format === 'E4M3' && exponent === allOnes && mantissa === 0b111) return Number.NaN;
  if (format === 'E5M2' && exponent === allOnes) return mantissa === 0 ? sign * Infinity : Number.NaN;
  if (exponent === 0) return sign * 2 ** (1 - bias) * (mantissa / 2 ** mantissaBits);
  return sign * 2 ** (exponent - bias) * (1 + mantissa / 2 ** mantissaBits);
}

const formats = [
  { name: 'E4M3' as const, encode: encodeFp8E4M3, decode: decodeFp8E4M3, maxCode: 0x7e, beyond: 480 },
  { name: 'E5M2' as const, encode: encodeFp8E5M2, decode: decodeFp8E5M2, maxCode: 0x7b, beyond: 65536 },
];

const hex = (code: number) => `0x${code.toString(16).padStart(2, '0')}`;

for (const format of formats) {
  describe(`FP8 ${format.name}`, () => {
    test('every one of the 256 codes decodes to the value the OCP specification gives', () => {
      for (let code = 0; code < 256; code++) {
        const expected = ocpValue(code, format.name);
        const actual = format.decode(code);
        if (Number.isNaN(expected)) assert.ok(Number.isNaN(actual), `${hex(code)} should be NaN`);
        else assert.ok(Object.is(actual, expected), `${hex(code)}: ${actual} !== ${expected}`);
      }
    });

    test('encode(decode(code)) is the code for every non-NaN code', () => {
      for (let code = 0; code < 256; code++) {
        const value = format.decode(code);
        if (!Number.isNaN(value)) assert.equal(format.encode(value), code, hex(code));
      }
    });

    test('encoding random doubles matches a brute-force nearest-even search over the code table', () => {
      const grid = Array.from({ length: format.maxCode + 2 }, (_, code) => ({
        code,
        value: code > format.maxCode ? format.beyond : ocpValue(code, format.name),
      }));
      const random = seededRandom(format.name === 'E4M3' ? 8 : 85);
      const values = randomDoubles(random, 20000, -20, 17);
      // Midpoints between neighbours and their immediate neighbours exercise every tie.
      for (let code = 0; code < format.maxCode; code++) {
        const mid = (grid[code]!.value + grid[code + 1]!.value) / 2;
        values.push(mid, -mid, mid * (1 + 2 ** -52), mid * (1 - 2 ** -52));
      }
      for (const x of values) {
        const sign = x < 0 ? 0x80 : 0;
        const expected = nearestCode(Math.abs(x), grid);
        const want =
          expected === 'overflow' ? (format.name === 'E4M3' ? sign | 0x7f : sign | 0x7c) : sign | expected;
        assert.equal(format.encode(x), want, `encode(${x})`);
      }
    });
  });
}

describe('FP8 E4M3 (FN) anchors and edge cases', () => {
  test('hand-checked codes', () => {
    assert.equal(decodeFp8E4M3(0x7e), 448);
    assert.equal(decodeFp8E4M3(0xfe), -448);
    assert.equal(decodeFp8E4M3(0x01), 2 ** -9);
    assert.equal(decodeFp8E4M3(0x07), 7 * 2 ** -9);
    assert.equal(decodeFp8E4M3(0x08), 2 ** -6);
    assert.equal(decodeFp8E4M3(0x38), 1);
    assert.equal(decodeFp8E4M3(0x78), 256); // S.1111.000 is a normal number in the FN variant
    assert.ok(Number.isNaN(decodeFp8E4M3(0x7f)));
    assert.ok(Number.isNaN(decodeFp8E4M3(0xff)));
    assert.ok(Object.is(decodeFp8E4M3(0x80), -0));
    assert.equal(FP8E4M3_MAX, 448);
  });

  test('max normal, min subnormal, zeros', () => {
    assert.equal(encodeFp8E4M3(448), 0x7e);
    assert.equal(encodeFp8E4M3(-448), 0xfe);
    assert.equal(encodeFp8E4M3(2 ** -9), 0x01);
    assert.equal(encodeFp8E4M3(-(2 ** -9)), 0x81);
    assert.equal(encodeFp8E4M3(0), 0x00);
    assert.equal(encodeFp8E4M3(-0), 0x80);
  });

  test('ties round to even, both ways, in normals and subnormals', () => {
    assert.equal(encodeFp8E4M3(1.0625), 0x38); // 1 | 1.125: down to even 1.000
    assert.equal(encodeFp8E4M3(1.1875), 0x3a); // 1.125 | 1.25: up to even 1.010
    assert.equal(encodeFp8E4M3(-1.1875), 0xba);
    assert.equal(encodeFp8E4M3(0.5 * 2 ** -9), 0x00); // 0 | 2^-9: down to 0
    assert.equal(encodeFp8E4M3(-0.5 * 2 ** -9), 0x80); // to −0
    assert.equal(encodeFp8E4M3(1.5 * 2 ** -9), 0x02); // 1 | 2 (×2^-9): up to even
    assert.equal(encodeFp8E4M3(2.5 * 2 ** -9), 0x02); // 2 | 3: down to even
  });

  test('just below and above a midpoint go to the nearer code', () => {
    assert.equal(encodeFp8E4M3(1.1875 - 2 ** -40), 0x39);
    assert.equal(encodeFp8E4M3(1.0625 + 2 ** -40), 0x39);
    assert.equal(encodeFp8E4M3(0.5 * 2 ** -9 + 2 ** -40), 0x01);
  });

  test('rounding up carries into the next binade', () => {
    assert.equal(encodeFp8E4M3(1.9375), 0x40); // 1.875 | 2: tie to the even 2
    assert.equal(encodeFp8E4M3(1.99), 0x40);
    assert.equal(encodeFp8E4M3(7.5 * 2 ** -9), 0x08); // largest subnormal | smallest normal
    assert.equal(encodeFp8E4M3(7.4 * 2 ** -9), 0x07);
  });

  test('overflow, ±∞ and NaN encode to NaN keeping the sign (non-saturating, the default)', () => {
    assert.equal(encodeFp8E4M3(464), 0x7e); // the midpoint 448 | 480 ties to the even 448
    assert.equal(encodeFp8E4M3(464.0001), 0x7f);
    assert.equal(encodeFp8E4M3(480), 0x7f);
    assert.equal(encodeFp8E4M3(1e30), 0x7f);
    assert.equal(encodeFp8E4M3(-500), 0xff);
    assert.equal(encodeFp8E4M3(Infinity), 0x7f);
    assert.equal(encodeFp8E4M3(-Infinity), 0xff);
    assert.equal(encodeFp8E4M3(Number.NaN), 0x7f);
  });

  test('saturating mode: overflow and ±∞ become ±448, NaN stays NaN', () => {
    assert.equal(encodeFp8E4M3(464.0001, true), 0x7e);
    assert.equal(encodeFp8E4M3(1e30, true), 0x7e);
    assert.equal(encodeFp8E4M3(-1e30, true), 0xfe);
    assert.equal(encodeFp8E4M3(Infinity, true), 0x7e);
    assert.equal(encodeFp8E4M3(-Infinity, true), 0xfe);
    assert.equal(encodeFp8E4M3(Number.NaN, true), 0x7f);
    assert.equal(encodeFp8E4M3(3.3, true), encodeFp8E4M3(3.3));
  });

  test('tiny values underflow to a signed zero', () => {
    assert.equal(encodeFp8E4M3(1e-10), 0x00);
    assert.equal(encodeFp8E4M3(-1e-10), 0x80);
    assert.equal(encodeFp8E4M3(Number.MIN_VALUE), 0x00);
    assert.equal(encodeFp8E4M3(-Number.MIN_VALUE), 0x80);
  });
});

describe('FP8 E5M2 anchors and edge cases', () => {
  test('hand-checked codes', () => {
    assert.equal(decodeFp8E5M2(0x7b), 57344);
    assert.equal(decodeFp8E5M2(0x01), 2 ** -16);
    assert.equal(decodeFp8E5M2(0x04), 2 ** -14);
    assert.equal(decodeFp8E5M2(0x3c), 1);
    assert.equal(decodeFp8E5M2(0x7c), Infinity);
    assert.equal(decodeFp8E5M2(0xfc), -Infinity);
    for (const code of [0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff]) assert.ok(Number.isNaN(decodeFp8E5M2(code)));
    assert.ok(Object.is(decodeFp8E5M2(0x80), -0));
    assert.equal(FP8E5M2_MAX, 57344);
  });

  test('max normal, min subnormal, zeros, ties, carries', () => {
    assert.equal(encodeFp8E5M2(57344), 0x7b);
    assert.equal(encodeFp8E5M2(2 ** -16), 0x01);
    assert.equal(encodeFp8E5M2(-0), 0x80);
    assert.equal(encodeFp8E5M2(1.125), 0x3c); // 1 | 1.25: down to even
    assert.equal(encodeFp8E5M2(1.375), 0x3e); // 1.25 | 1.5: up to even
    assert.equal(encodeFp8E5M2(1.125 + 2 ** -30), 0x3d);
    assert.equal(encodeFp8E5M2(1.875), 0x40); // 1.75 | 2: carries into the next binade
    assert.equal(encodeFp8E5M2(0.5 * 2 ** -16), 0x00);
    assert.equal(encodeFp8E5M2(1.5 * 2 ** -16), 0x02);
    assert.equal(encodeFp8E5M2(3.5 * 2 ** -16), 0x04); // largest subnormal | smallest normal
    assert.equal(encodeFp8E5M2(-1e-12), 0x80);
  });

  test('overflow goes to ±∞ (non-saturating), NaN to NaN', () => {
    assert.equal(encodeFp8E5M2(61439.99), 0x7b);
    assert.equal(encodeFp8E5M2(61440), 0x7c); // the midpoint 57344 | 65536 ties to the even 2^16: overflow
    assert.equal(encodeFp8E5M2(-61440), 0xfc);
    assert.equal(encodeFp8E5M2(1e30), 0x7c);
    assert.equal(encodeFp8E5M2(Infinity), 0x7c);
    assert.equal(encodeFp8E5M2(-Infinity), 0xfc);
    assert.equal(encodeFp8E5M2(Number.NaN), 0x7e);
  });

  test('saturating mode: overflow and ±∞ become ±57344, NaN stays NaN', () => {
    assert.equal(encodeFp8E5M2(61440, true), 0x7b);
    assert.equal(encodeFp8E5M2(-1e30, true), 0xfb);
    assert.equal(encodeFp8E5M2(Infinity, true), 0x7b);
    assert.equal(encodeFp8E5M2(-Infinity, true), 0xfb);
    assert.equal(encodeFp8E5M2(Number.NaN, true), 0x7e);
  });
});
