import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeFp16, encodeFp16, FP16_MAX, roundToFp16 } from '../../src/datatypes/fp16.js';
import { nearestCode, randomDoubles, seededRandom } from './random.js';

/** IEEE 754 binary16 from its definition: bias 15, 10 mantissa bits, subnormals, ∞/NaN at exponent 31. */
function ieeeHalf(code: number): number {
  const sign = code & 0x8000 ? -1 : 1;
  const exponent = (code >> 10) & 0x1f;
  const mantissa = code & 0x3ff;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : Number.NaN;
  if (exponent === 0) return sign * 2 ** -14 * (mantissa / 1024);
  return sign * 2 ** (exponent - 15) * (1 + mantissa / 1024);
}

const hex = (code: number) => `0x${code.toString(16).padStart(4, '0')}`;

describe('FP16', () => {
  test('all 65536 codes decode to their IEEE binary16 value, and every non-NaN code round-trips', () => {
    for (let code = 0; code < 65536; code++) {
      const expected = ieeeHalf(code);
      const value = decodeFp16(code);
      if (Number.isNaN(expected)) {
        assert.ok(Number.isNaN(value), hex(code));
        continue;
      }
      assert.ok(Object.is(value, expected), `${hex(code)}: ${value} !== ${expected}`);
      assert.equal(encodeFp16(value), code, hex(code));
    }
  });

  test('encoding random doubles matches a brute-force nearest-even search', () => {
    // 0x7c00 stands for the step past the largest finite value (2^16).
    const grid = Array.from({ length: 0x7c01 }, (_, code) => ({
      code,
      value: code === 0x7c00 ? 65536 : ieeeHalf(code),
    }));
    const values = randomDoubles(seededRandom(16), 50000, -28, 17);
    for (let code = 0; code < 0x7bff; code += 7) {
      const mid = (grid[code]!.value + grid[code + 1]!.value) / 2;
      values.push(mid, -mid, mid * (1 + 2 ** -52), mid * (1 - 2 ** -52));
    }
    for (const x of values) {
      const sign = x < 0 ? 0x8000 : 0;
      const expected = nearestCode(Math.abs(x), grid);
      assert.equal(encodeFp16(x), expected === 'overflow' ? sign | 0x7c00 : sign | expected, `encode(${x})`);
    }
  });

  test('anchors: max, min subnormal, min normal, one, zeros', () => {
    assert.equal(FP16_MAX, 65504);
    assert.equal(encodeFp16(65504), 0x7bff);
    assert.equal(decodeFp16(0x7bff), 65504);
    assert.equal(encodeFp16(2 ** -24), 0x0001);
    assert.equal(decodeFp16(0x0001), 2 ** -24);
    assert.equal(encodeFp16(2 ** -14), 0x0400);
    assert.equal(encodeFp16(1), 0x3c00);
    assert.equal(encodeFp16(0), 0x0000);
    assert.equal(encodeFp16(-0), 0x8000);
    assert.ok(Object.is(decodeFp16(0x8000), -0));
  });

  test('ties to even both ways, near-ties, carries, subnormal ties', () => {
    assert.equal(encodeFp16(1 + 2 ** -11), 0x3c00); // down to even
    assert.equal(encodeFp16(1 + 3 * 2 ** -11), 0x3c02); // up to even
    assert.equal(encodeFp16(1 + 2 ** -11 + 2 ** -40), 0x3c01); // just above the tie: a float32 detour would say 0x3c00
    assert.equal(encodeFp16(1 + 2 ** -11 - 2 ** -40), 0x3c00);
    assert.equal(encodeFp16(2 - 2 ** -12), 0x4000); // carries into the next binade
    assert.equal(encodeFp16(2 ** -25), 0x0000); // 0 | 2^-24: down to even zero
    assert.equal(encodeFp16(-(2 ** -25)), 0x8000);
    assert.equal(encodeFp16(3 * 2 ** -25), 0x0002);
    assert.equal(encodeFp16(2 ** -25 * 1.000001), 0x0001);
    assert.equal(encodeFp16(2 ** -14 - 2 ** -25), 0x0400); // largest subnormal | smallest normal
    assert.equal(encodeFp16(1e-12), 0x0000);
  });

  test('overflow is ±∞; NaN is 0x7e00 and every NaN code decodes to NaN', () => {
    assert.equal(encodeFp16(65519.99), 0x7bff);
    assert.equal(encodeFp16(65520), 0x7c00); // the midpoint 65504 | 65536 ties to the even 2^16
    assert.equal(encodeFp16(-65520), 0xfc00);
    assert.equal(encodeFp16(1e10), 0x7c00);
    assert.equal(encodeFp16(Infinity), 0x7c00);
    assert.equal(encodeFp16(-Infinity), 0xfc00);
    assert.equal(decodeFp16(0x7c00), Infinity);
    assert.equal(decodeFp16(0xfc00), -Infinity);
    assert.equal(encodeFp16(Number.NaN), 0x7e00);
    assert.ok(Number.isNaN(decodeFp16(0x7c01)) && Number.isNaN(decodeFp16(0xffff)));
  });

  test('roundToFp16 gives the value', () => {
    assert.equal(roundToFp16(0.1), 0.0999755859375);
    assert.equal(roundToFp16(70000), Infinity);
  });
});
