import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { planProgram } from '../../src/compute/expression.js';
import { compileExpression, parsePrecision } from '../../src/compute/index.js';
import { isLatticeError } from '../../src/platform/errors.js';

function assertInvalid(run: () => unknown, message: RegExp): void {
  assert.throws(run, (err) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), `expected INVALID_ARGUMENT, got ${String(err)}`);
    assert.match(err.message, message);
    return true;
  });
}

describe('compileExpression', () => {
  test('lists variables in first-use order, once each, and keeps the source', () => {
    const expression = compileExpression('  ctr 0.8 * price log 0.2 * + ctr max ');
    assert.equal(expression.source, '  ctr 0.8 * price log 0.2 * + ctr max ');
    assert.deepEqual(expression.variables, ['ctr', 'price']);
  });

  test('tokens are separated by any whitespace', () => {
    assert.deepEqual(compileExpression('a\tb\n+').variables, ['a', 'b']);
  });

  test('number literals: integers, decimals, signs, exponents', () => {
    const cases: [string, number][] = [
      ['2', 2],
      ['-3', -3],
      ['+4', 4],
      ['0.25', 0.25],
      ['-.5', -0.5],
      ['7.', 7],
      ['1e3', 1000],
      ['-2.5E-2', -0.025],
    ];
    for (const [literal, value] of cases) {
      const result = compileExpression(literal).evaluate({}, 2);
      assert.deepEqual(Array.from(result), [value, value], literal);
    }
  });

  test('variable names may carry feature-column punctuation', () => {
    assert.deepEqual(compileExpression('user:ctr@fp32 _x.y-1 +').variables, ['user:ctr@fp32', '_x.y-1']);
  });

  test('operator and function names are case-sensitive: EXP is a variable', () => {
    assert.deepEqual(compileExpression('a EXP +').variables, ['a', 'EXP']);
  });

  test('an empty or blank expression is rejected', () => {
    assertInvalid(() => compileExpression(''), /^empty expression$/);
    assertInvalid(() => compileExpression(' \t\n'), /^empty expression$/);
  });

  test('stack underflow names the operator, its position and the operand counts', () => {
    assertInvalid(
      () => compileExpression('a b + +'),
      /^operator \+ at token 4 needs 2 operands, has 1 in `a b \+ \+`$/,
    );
    assertInvalid(() => compileExpression('a b + * c'), /^operator \* at token 4 needs 2 operands, has 1/);
    assertInvalid(() => compileExpression('-'), /^operator - at token 1 needs 2 operands, has 0/);
    assertInvalid(() => compileExpression('log'), /^function log at token 1 needs 1 operand, has 0/);
    assertInvalid(() => compileExpression('a b min max'), /^operator max at token 4 needs 2 operands, has 1/);
  });

  test('leftover operands are rejected with the count', () => {
    assertInvalid(() => compileExpression('a b'), /^expression leaves 2 values; expected 1 in `a b`$/);
    assertInvalid(() => compileExpression('a b c +'), /^expression leaves 2 values; expected 1/);
    assertInvalid(() => compileExpression('1 2 3'), /^expression leaves 3 values; expected 1/);
  });

  test('unknown operator-like tokens are rejected with their position', () => {
    for (const [source, token, position] of [
      ['a b %', '%', 3],
      ['a b **', '\\*\\*', 3],
      ['a b !=', '!=', 3],
      ['a b && c', '&&', 3],
      ['a = ', '=', 2],
    ] as const) {
      assertInvalid(
        () => compileExpression(source),
        new RegExp(`^unknown operator \`${token}\` at token ${position}`),
      );
    }
  });

  test('bad number literals are rejected with their position', () => {
    for (const [source, token, position] of [
      ['a 1.2.3 +', '1\\.2\\.3', 2],
      ['1e a +', '1e', 1],
      ['a 0x10 *', '0x10', 2],
      ['a 1e999 *', '1e999', 2],
      ['a -3abc *', '-3abc', 2],
    ] as const) {
      assertInvalid(
        () => compileExpression(source),
        new RegExp(`^bad number literal \`${token}\` at token ${position}`),
      );
    }
  });

  test('a token that is neither a name nor an operator is rejected', () => {
    assertInvalid(() => compileExpression('a+b'), /^invalid variable name `a\+b` at token 1/);
    assertInvalid(() => compileExpression('x (y) +'), /^invalid variable name `\(y\)` at token 2/);
  });
});

describe('planProgram', () => {
  test('constants are scalars: no column is planned for them', () => {
    const plan = planProgram('a 2 * 1 +');
    assert.equal(plan.tempCount, 1);
    assert.equal(plan.literals.length, 2);
    assert.equal(planProgram('1 2 + 3 *').tempCount, 0);
    assert.equal(planProgram('1 2 + 3 *').result.vector, false);
  });

  test('the last operator writes the output; intermediates reuse consumed scratch', () => {
    assert.equal(planProgram('a b *').tempCount, 0);
    assert.equal(planProgram('a b + c + d + e +').tempCount, 1);
    assert.equal(planProgram('a b + c d + *').tempCount, 2);
    assert.equal(planProgram('a b + c d + * e f + -').tempCount, 2);
  });
});

describe('parsePrecision', () => {
  test('fp32/f32 select fp32; fp64/f64/absent select fp64', () => {
    assert.equal(parsePrecision('fp32'), 'fp32');
    assert.equal(parsePrecision('f32'), 'fp32');
    assert.equal(parsePrecision('FP32'), 'fp32');
    assert.equal(parsePrecision('fp64'), 'fp64');
    assert.equal(parsePrecision('f64'), 'fp64');
    assert.equal(parsePrecision(undefined), 'fp64');
  });

  test('anything else is INVALID_ARGUMENT', () => {
    for (const text of ['', 'fp16', 'float', ' fp32']) {
      assertInvalid(() => parsePrecision(text), /^unknown precision/);
    }
  });
});
