import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileExpression, type Precision } from '../../src/compute/index.js';
import { isLatticeError } from '../../src/platform/errors.js';

const f32 = Math.fround;
const PRECISIONS: readonly Precision[] = ['fp32', 'fp64'];

function run(source: string, columns: Record<string, number[]>, precision: Precision = 'fp64'): number[] {
  const inputs: Record<string, Float64Array> = {};
  let rows = 0;
  for (const [name, values] of Object.entries(columns)) {
    inputs[name] = Float64Array.from(values);
    rows = values.length;
  }
  const result = compileExpression(source).evaluate(inputs, rows, precision);
  assert.ok(result instanceof (precision === 'fp32' ? Float32Array : Float64Array));
  assert.equal(result.length, rows);
  return Array.from(result);
}

function assertInvalid(run: () => unknown, message: RegExp): void {
  assert.throws(run, (err) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), `expected INVALID_ARGUMENT, got ${String(err)}`);
    assert.match(err.message, message);
    return true;
  });
}

/** Relative closeness for transcendental results, where the formula in the test may round differently. */
function assertClose(actual: number[], expected: number[], tolerance: number, label: string): void {
  assert.equal(actual.length, expected.length, label);
  actual.forEach((value, i) => {
    const want = expected[i]!;
    if (Number.isNaN(want)) assert.ok(Number.isNaN(value), `${label} row ${i}: ${value} is not NaN`);
    else {
      const scale = Math.max(1, Math.abs(want));
      assert.ok(Math.abs(value - want) <= tolerance * scale, `${label} row ${i}: ${value} vs ${want}`);
    }
  });
}

const xs = [0.1, -2.5, 3, 0.7, 1e-3, 12.34, -0.3];
const ys = [0.2, 4, 3, -1.1, 2.5, 0.5, 7];

describe('binary operators, column by column', () => {
  const references: [string, (x: number, y: number) => number][] = [
    ['+', (x, y) => x + y],
    ['-', (x, y) => x - y],
    ['*', (x, y) => x * y],
    ['/', (x, y) => x / y],
    ['min', (x, y) => (x < y ? x : y)],
    ['max', (x, y) => (x > y ? x : y)],
    ['<', (x, y) => Number(x < y)],
    ['<=', (x, y) => Number(x <= y)],
    ['>', (x, y) => Number(x > y)],
    ['>=', (x, y) => Number(x >= y)],
    ['==', (x, y) => Number(x === y)],
  ];
  for (const [op, reference] of references) {
    for (const precision of PRECISIONS) {
      test(`${op} in ${precision}`, () => {
        const round = precision === 'fp32' ? f32 : (v: number) => v;
        const expected = xs.map((x, i) => round(reference(round(x), round(ys[i]!))));
        assert.deepEqual(run(`x y ${op}`, { x: xs, y: ys }, precision), expected);
        // Constant on either side (broadcast), same values.
        const constant = 0.3;
        assert.deepEqual(
          run(`x ${constant} ${op}`, { x: xs }, precision),
          xs.map((x) => round(reference(round(x), round(constant)))),
        );
        assert.deepEqual(
          run(`${constant} x ${op}`, { x: xs }, precision),
          xs.map((x) => round(reference(round(constant), round(x)))),
        );
      });
    }
  }

  for (const precision of PRECISIONS) {
    test(`^ is power in ${precision}`, () => {
      const round = precision === 'fp32' ? f32 : (v: number) => v;
      const bases = [2, 0.5, 9, 1.1, 0, -2];
      const exponents = [10, -1, 0.5, 3.3, 2, 3];
      const expected = bases.map((b, i) => round(round(b) ** round(exponents[i]!)));
      assert.deepEqual(run('b e ^', { b: bases, e: exponents }, precision), expected);
      assert.deepEqual(run('b 2 ^', { b: bases }, precision).slice(0, 3), [4, 0.25, 81]);
      assert.deepEqual(run('2 e ^', { e: [3, -2] }, precision), [8, 0.25]);
    });
  }

  test('comparisons return exactly 1 and 0', () => {
    assert.deepEqual(run('a b ==', { a: [1, 2, 3], b: [1, 5, 3] }), [1, 0, 1]);
    assert.deepEqual(run('a 2 >=', { a: [1, 2, 3] }), [0, 1, 1]);
    assert.deepEqual(run('2 a <', { a: [1, 2, 3] }), [0, 0, 1]);
  });

  test('fp32 rounds after every operation, fp64 does not', () => {
    // 0.1 + 0.2 differs between precisions; so does (1e8 + 1) − 1e8.
    assert.deepEqual(run('a b +', { a: [0.1], b: [0.2] }, 'fp64'), [0.1 + 0.2]);
    assert.deepEqual(run('a b +', { a: [0.1], b: [0.2] }, 'fp32'), [f32(f32(0.1) + f32(0.2))]);
    assert.deepEqual(run('a 1 + a -', { a: [1e8] }, 'fp64'), [1]);
    assert.deepEqual(run('a 1 + a -', { a: [1e8] }, 'fp32'), [0]);
  });
});

describe('& and |', () => {
  test('truth tables over 0/1 columns and constants', () => {
    const a = [0, 0, 1, 1];
    const b = [0, 1, 0, 1];
    assert.deepEqual(run('a b &', { a, b }), [0, 0, 0, 1]);
    assert.deepEqual(run('a b |', { a, b }), [0, 1, 1, 1]);
    assert.deepEqual(run('a 1 &', { a }), [0, 0, 1, 1]);
    assert.deepEqual(run('0 a &', { a }), [0, 0, 0, 0]);
    assert.deepEqual(run('a 0 |', { a }), [0, 0, 1, 1]);
    assert.deepEqual(run('1 a |', { a }, 'fp32'), [1, 1, 1, 1]);
    assert.deepEqual(run('a 0.5 > b &', { a: [0.2, 0.9, 0.9], b: [1, 0, 1] }), [0, 0, 1]);
  });

  test('a value other than 0 or 1 is an error naming the row and value', () => {
    assertInvalid(
      () => run('a b &', { a: [1, 0, 1], b: [1, 1, 2] }),
      /^operator & needs 0\/1 operands, got 2 at row 2 in `a b &` \(token 3\)$/,
    );
    assertInvalid(
      () => run('a b |', { a: [0, 0.5], b: [1, 1] }),
      /^operator \| needs 0\/1 operands, got 0.5 at row 1/,
    );
    assertInvalid(() => run('a 2 |', { a: [0, 1] }), /got 2 at row 0/);
    assertInvalid(() => run('a b &', { a: [1, Number.NaN], b: [1, 1] }), /got NaN at row 1/);
    assertInvalid(() => run('a -1 &', { a: [1] }, 'fp32'), /got -1 at row 0/);
  });
});

describe('unary functions', () => {
  const values = [0.5, 1, 2.75, 10, 0.01, 7.3];
  const signed = [-3.5, 0, 2, -0.25, 40, -800];
  const elementwise: [string, (x: number) => number, number[]][] = [
    ['exp', Math.exp, signed],
    ['log', Math.log, values],
    ['abs', (x) => (x < 0 ? -x : x), signed],
    ['sigmoid', (x) => 1 / (1 + Math.exp(-x)), signed],
  ];
  for (const [fn, reference, inputs] of elementwise) {
    for (const precision of PRECISIONS) {
      test(`${fn} in ${precision}`, () => {
        const round = precision === 'fp32' ? f32 : (v: number) => v;
        const expected = inputs.map((x) => round(reference(round(x))));
        assertClose(
          run(`x ${fn}`, { x: inputs }, precision),
          expected,
          precision === 'fp32' ? 1e-7 : 1e-15,
          fn,
        );
      });
    }
  }

  test('sigmoid saturates without NaN', () => {
    assert.deepEqual(run('x sigmoid', { x: [-1e6, 0, 1e6] }), [0, 0.5, 1]);
  });

  for (const precision of PRECISIONS) {
    test(`norm_min_max scales to [0, 1] by the column's min and max in ${precision}`, () => {
      const round = precision === 'fp32' ? f32 : (v: number) => v;
      const x = [3, -1, 7, 0.4, 5];
      const expected = x.map((v) => round((round(v) - -1) / (7 - -1)));
      assert.deepEqual(run('x norm_min_max', { x }, precision), expected);
    });
  }

  test('norm_min_max of a constant column, a single row or a constant literal is 0', () => {
    assert.deepEqual(run('x norm_min_max', { x: [4, 4, 4] }), [0, 0, 0]);
    assert.deepEqual(run('x norm_min_max', { x: [4] }), [0]);
    assert.deepEqual(run('3 norm_min_max x +', { x: [1, 2] }), [1, 2]);
    assert.deepEqual(run('x norm_min_max', { x: [] }), []);
  });

  test('norm_min_max leaves NaN rows NaN and ignores them for min and max', () => {
    assert.deepEqual(run('x norm_min_max', { x: [2, Number.NaN, 4, 3] }), [0, Number.NaN, 1, 0.5]);
  });

  test('percentile_rank ranks by value, not by position', () => {
    assert.deepEqual(run('x percentile_rank', { x: [30, 10, 40, 20, 50] }), [0.5, 0, 0.75, 0.25, 1]);
    assert.deepEqual(run('x percentile_rank', { x: [-2, 1e9, 5] }, 'fp32'), [0, 1, 0.5]);
  });

  test('percentile_rank: ties share the average of their positions', () => {
    // Sorted: 1 (pos 0), 3 3 (pos 1, 2 → 1.5), 7 7 7 (pos 3, 4, 5 → 4); divided by n − 1 = 5.
    assert.deepEqual(run('x percentile_rank', { x: [7, 3, 1, 7, 3, 7] }), [0.8, 0.3, 0, 0.8, 0.3, 0.8]);
    assert.deepEqual(run('x percentile_rank', { x: [2, 2, 2, 2] }), [0.5, 0.5, 0.5, 0.5]);
    assert.deepEqual(run('x percentile_rank', { x: [9] }), [0.5]);
    assert.deepEqual(run('x percentile_rank', { x: [0, -0, 1] }), [0.25, 0.25, 1]);
  });

  test('percentile_rank ignores NaN rows and leaves them NaN', () => {
    assert.deepEqual(run('x percentile_rank', { x: [Number.NaN, 5, 1, Number.NaN, 3] }), [
      Number.NaN,
      1,
      0,
      Number.NaN,
      0.5,
    ]);
  });

  test('norm_percentile_0_99 and _5_95 clip to linearly interpolated percentiles', () => {
    // 1..101: the p-th percentile is 1 + p (type 7 interpolation lands on exact ranks).
    const x = Array.from({ length: 101 }, (_, i) => 101 - i);
    assert.deepEqual(
      run('x norm_percentile_0_99', { x }),
      x.map((v) => Math.min(v - 1, 99) / 99),
    );
    assert.deepEqual(
      run('x norm_percentile_5_95', { x }),
      x.map((v) => (Math.min(Math.max(v, 6), 96) - 6) / 90),
    );
  });

  test('norm_percentile interpolates between ranks (NumPy linear: P5 of 1..4 is 1.15, P95 is 3.85)', () => {
    assertClose(
      run('x norm_percentile_5_95', { x: [4, 1, 3, 2] }),
      [1, 0, 1.85 / 2.7, 0.85 / 2.7],
      1e-15,
      '5_95',
    );
    // P99 of 1..4 is 3.97.
    assertClose(
      run('x norm_percentile_0_99', { x: [4, 1, 3, 2] }),
      [1, 0, 2 / 2.97, 1 / 2.97],
      1e-15,
      '0_99',
    );
    assertClose(
      run('x norm_percentile_5_95', { x: [4, 1, 3, 2] }, 'fp32'),
      [1, 0, f32(1.85 / 2.7), f32(0.85 / 2.7)],
      1e-7,
      '5_95 fp32',
    );
  });

  test('norm_percentile of a constant column is 0', () => {
    assert.deepEqual(run('x norm_percentile_5_95', { x: [2, 2, 2] }), [0, 0, 0]);
    assert.deepEqual(run('x norm_percentile_0_99', { x: [Number.NaN, 2] }), [Number.NaN, 0]);
  });
});

describe('evaluation', () => {
  test("the design's example: ctr 0.8 * price log 0.2 * +", () => {
    const ctr = [0.1, 0.25, 0.9];
    const price = [1, 100, 12.5];
    const expected = ctr.map((c, i) => c * 0.8 + Math.log(price[i]!) * 0.2);
    assert.deepEqual(run('ctr 0.8 * price log 0.2 * +', { ctr, price }), expected);
    const round = f32;
    const expected32 = ctr.map((c, i) =>
      round(round(round(c) * round(0.8)) + round(round(Math.log(round(price[i]!))) * round(0.2))),
    );
    assert.deepEqual(run('ctr 0.8 * price log 0.2 * +', { ctr, price }, 'fp32'), expected32);
  });

  test('numerix example: "a b +" over rows (1,2),(3,4) gives 3, 7 in both precisions', () => {
    for (const precision of PRECISIONS) {
      assert.deepEqual(run('a b +', { a: [1, 3], b: [2, 4] }, precision), [3, 7]);
    }
    assert.deepEqual(run('a b +', { a: [-1.5, -3], b: [-2, 4] }), [-3.5, 1]);
  });

  test('precision defaults to fp64', () => {
    const result = compileExpression('a 2 *').evaluate({ a: new Float32Array([1.5]) }, 1);
    assert.ok(result instanceof Float64Array);
    assert.deepEqual(Array.from(result), [3]);
  });

  test('a single variable or constant is copied or broadcast into a new array', () => {
    const a = new Float64Array([0.1, 2]);
    const copy = compileExpression('a').evaluate({ a }, 2);
    assert.notEqual(copy, a);
    assert.deepEqual(Array.from(copy), [0.1, 2]);
    assert.deepEqual(Array.from(compileExpression('a').evaluate({ a }, 2, 'fp32')), [f32(0.1), 2]);
    assert.deepEqual(Array.from(compileExpression('-2.5 abs').evaluate({}, 3, 'fp32')), [2.5, 2.5, 2.5]);
    assert.deepEqual(Array.from(compileExpression('1 2 + 3 *').evaluate({}, 2)), [9, 9]);
  });

  test('inputs of either array type work in either precision; longer columns are read up to rows', () => {
    const a = new Float32Array([0.1, 2, 99]);
    const b = new Float64Array([0.2, 3, 99, 99]);
    assert.deepEqual(Array.from(compileExpression('a b +').evaluate({ a, b }, 2, 'fp64')), [
      f32(0.1) + 0.2,
      5,
    ]);
    assert.deepEqual(Array.from(compileExpression('a b +').evaluate({ a, b }, 2, 'fp32')), [
      f32(f32(0.1) + f32(0.2)),
      5,
    ]);
  });

  test('repeated calls reuse scratch without leaking state into earlier results', () => {
    const expression = compileExpression('a b + a b - * percentile_rank 2 *');
    const first = expression.evaluate({ a: new Float64Array([1, 2, 3]), b: new Float64Array([0, 0, 0]) }, 3);
    const big = Float64Array.from({ length: 500 }, (_, i) => i);
    const second = expression.evaluate({ a: big, b: new Float64Array(500) }, 500);
    const third = expression.evaluate({ a: new Float64Array([5, 4]), b: new Float64Array([1, 1]) }, 2);
    assert.deepEqual(Array.from(first), [0, 1, 2]);
    assert.equal(second.length, 500);
    assert.equal(second[499], 2);
    assert.deepEqual(Array.from(third), [2, 0]);
  });

  test('evaluateInto fills the first rows of a caller buffer in its precision', () => {
    const expression = compileExpression('a 0.1 +');
    const out64 = new Float64Array([9, 9, 9]);
    assert.equal(expression.evaluateInto({ a: new Float64Array([1, 2]) }, 2, out64), out64);
    assert.deepEqual(Array.from(out64), [1.1, 2.1, 9]);
    const out32 = new Float32Array(2);
    expression.evaluateInto({ a: new Float64Array([1, 2]) }, 2, out32);
    assert.deepEqual(Array.from(out32), [f32(1 + f32(0.1)), f32(2 + f32(0.1))]);
    const constant = new Float64Array([5, 5, 5]);
    compileExpression('2 3 *').evaluateInto({}, 2, constant);
    assert.deepEqual(Array.from(constant), [6, 6, 5]);
    assertInvalid(
      () => expression.evaluateInto({ a: new Float64Array(3) }, 3, new Float64Array(2)),
      /^output has 2 elements/,
    );
  });

  test('evaluateInto may overwrite one of its inputs', () => {
    const a = new Float64Array([3, 1, 2]);
    compileExpression('a a 1 + * percentile_rank a +').evaluateInto({ a }, 3, a);
    assert.deepEqual(Array.from(a), [4, 1, 2.5]);
    const b = new Float32Array([4, 1, 9]);
    compileExpression('b norm_min_max').evaluateInto({ b }, 3, b);
    assert.deepEqual(Array.from(b), [0.375, 0, 1]);
  });

  test('zero rows give an empty result and no arithmetic errors', () => {
    assert.deepEqual(Array.from(compileExpression('a 0 /').evaluate({ a: new Float64Array(0) }, 0)), []);
  });

  test('rows must be a non-negative integer', () => {
    assertInvalid(() => compileExpression('1').evaluate({}, -1), /rows must be a non-negative integer/);
    assertInvalid(() => compileExpression('1').evaluate({}, 1.5), /rows must be a non-negative integer/);
  });
});

describe('evaluation errors', () => {
  test('division by zero names the row, the expression and the token', () => {
    const price = [1, 2, 3, 4, 5, 6, 7, 0, 9];
    assertInvalid(
      () => run('ctr price /', { ctr: price.map(() => 1), price }),
      /^division by zero at row 7 in `ctr price \/` \(token 3\)$/,
    );
    assertInvalid(
      () => run('c a b - /', { a: [1, 2], b: [2, 2], c: [2, 2] }),
      /^division by zero at row 1 .*\(token 5\)$/,
    );
    assertInvalid(() => run('a 0 /', { a: [1, 2] }, 'fp32'), /^division by zero at row 0/);
    assertInvalid(() => run('1 a /', { a: [1, -0] }), /^division by zero at row 1/);
    assertInvalid(() => run('a 1 0 / +', { a: [1, 2] }), /^division by zero at row 0 .*\(token 4\)$/);
    // fp32 rounding can create the zero: 1e-50 is 0 in fp32.
    assertInvalid(() => run('a b /', { a: [1], b: [1e-50] }, 'fp32'), /^division by zero at row 0/);
    assert.deepEqual(run('a b /', { a: [1], b: [1e-50] }, 'fp64'), [1e50]);
  });

  test('log of a non-positive value names the value and the row', () => {
    assertInvalid(
      () => run('x log', { x: [1, 2, -3] }),
      /^log of non-positive value -3 at row 2 in `x log` \(token 2\)$/,
    );
    assertInvalid(() => run('x log', { x: [0.5, 0] }, 'fp32'), /^log of non-positive value 0 at row 1/);
    assertInvalid(() => run('x 0 log +', { x: [1] }), /^log of non-positive value 0 at row 0 .*\(token 3\)$/);
  });

  test('a missing input column is INVALID_ARGUMENT naming the variable', () => {
    assert.throws(
      () => compileExpression('ctr price *').evaluate({ ctr: new Float64Array(2) }, 2),
      (err) => {
        assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'));
        assert.match(err.message, /^input column `price` is missing/);
        assert.equal(err.field, 'price');
        return true;
      },
    );
    // Inherited properties are not inputs.
    assertInvalid(() => compileExpression('constructor').evaluate({}, 1), /`constructor` is missing/);
  });

  test('a short input column is INVALID_ARGUMENT naming the variable and lengths', () => {
    assertInvalid(
      () => compileExpression('a b *').evaluate({ a: new Float64Array(5), b: new Float32Array(3) }, 5),
      /^input column `b` has 3 values; expected at least 5/,
    );
    assertInvalid(
      () =>
        compileExpression('a b *').evaluate({ a: new Float64Array(0), b: new Float32Array(3) }, 1, 'fp32'),
      /^input column `a` has 0 values/,
    );
  });
});
