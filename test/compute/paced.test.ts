import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileExpression, type EvaluationPacer } from '../../src/compute/index.js';
import { isLatticeError } from '../../src/platform/errors.js';

/** A pacer that pauses before every operator, on the next turn of the event loop. */
const everyOperator = (pauses: { count: number }): EvaluationPacer => ({
  due: () => true,
  pause: () => {
    pauses.count++;
    return new Promise((resolve) => setImmediate(resolve));
  },
});

describe('paced evaluation', () => {
  test('pauses between operators and matches evaluateInto, even when evaluations of one expression interleave', async () => {
    const expression = compileExpression('a 2 * b + log c percentile_rank max');
    const rows = 10_000;
    const inputs = (shift: number) => ({
      a: Float64Array.from({ length: rows }, (_, i) => ((i * 7 + shift) % 101) + 1),
      b: Float64Array.from({ length: rows }, (_, i) => ((i * 13 + shift) % 37) + 0.5),
      c: Float64Array.from({ length: rows }, (_, i) => (i * 31 + shift) % 97),
    });
    const [x, y] = [inputs(0), inputs(5)];
    const want = [
      expression.evaluateInto(x, rows, new Float64Array(rows)),
      expression.evaluateInto(y, rows, new Float64Array(rows)),
    ];
    const pauses = { count: 0 };
    // Both run at once on the one compiled expression: each must keep its own intermediate columns.
    const got = await Promise.all([
      expression.evaluateIntoPaced(x, rows, new Float64Array(rows), everyOperator(pauses)),
      expression.evaluateIntoPaced(y, rows, new Float64Array(rows), everyOperator(pauses)),
    ]);
    assert.deepEqual(got, want);
    assert.ok(pauses.count >= 2 * 5, `${pauses.count} pauses`);
    // fp32 too.
    const fp32 = await expression.evaluateIntoPaced(x, rows, new Float32Array(rows), everyOperator(pauses));
    assert.deepEqual(fp32, expression.evaluateInto(x, rows, new Float32Array(rows)));
  });

  test('a pause that rejects stops the evaluation; row errors are the same as evaluateInto', async () => {
    const expression = compileExpression('a 1 + b /');
    const a = new Float64Array([1, 2, 3]);
    const stop: EvaluationPacer = { due: () => true, pause: () => Promise.reject(new Error('cancelled')) };
    await assert.rejects(
      expression.evaluateIntoPaced({ a, b: a }, 3, new Float64Array(3), stop),
      /cancelled/,
    );
    const never: EvaluationPacer = { due: () => false, pause: () => Promise.resolve() };
    await assert.rejects(
      expression.evaluateIntoPaced({ a, b: new Float64Array([1, 0, 1]) }, 3, new Float64Array(3), never),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && /division by zero at row 1/.test(err.message),
    );
  });
});
