/**
 * Random expressions and inputs (seeded) evaluated by the engine and by a naive per-row
 * reference written here: same results, or the same error at the same row and token.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileExpression, type Precision } from '../../src/compute/index.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { seededRandom } from '../../src/platform/random.js';

const BINARY = ['+', '-', '*', '/', '^', 'min', 'max', '<', '<=', '>', '>=', '==', '&', '|'];
const UNARY = [
  'exp',
  'log',
  'abs',
  'sigmoid',
  'norm_min_max',
  'percentile_rank',
  'norm_percentile_0_99',
  'norm_percentile_5_95',
];
const VARIABLES = ['a', 'b', 'c', 'd'];
const LITERALS = ['0', '1', '2', '-1.5', '0.5', '3e-1', '10'];

class RowError {
  constructor(
    readonly kind: string,
    readonly row: number,
    readonly token: number,
  ) {}
}

function percentileOf(sorted: number[], p: number): number {
  const h = ((sorted.length - 1) * p) / 100;
  const k = Math.floor(h);
  return h === k ? sorted[k]! : sorted[k]! + (h - k) * (sorted[k + 1]! - sorted[k]!);
}

function clipScale(column: number[], lo: number, hi: number): number[] {
  return column.map((x) => {
    if (Number.isNaN(x)) return x;
    if (!(hi - lo > 0)) return 0;
    return ((x < lo ? lo : x > hi ? hi : x) - lo) / (hi - lo);
  });
}

function columnFunction(fn: string, column: number[]): number[] {
  const present = column.filter((x) => !Number.isNaN(x));
  switch (fn) {
    case 'norm_min_max': {
      let lo = Number.POSITIVE_INFINITY;
      let hi = Number.NEGATIVE_INFINITY;
      for (const x of present) {
        if (x < lo) lo = x;
        if (x > hi) hi = x;
      }
      return clipScale(column, lo, hi);
    }
    case 'percentile_rank':
      return column.map((x) => {
        if (Number.isNaN(x)) return x;
        if (present.length === 1) return 0.5;
        const less = present.filter((v) => v < x).length;
        const equal = present.filter((v) => v === x).length;
        return (less + (equal - 1) / 2) / (present.length - 1);
      });
    default: {
      const sorted = [...present].sort((x, y) => x - y);
      if (sorted.length === 0) return column.map((x) => (Number.isNaN(x) ? x : 0));
      const [lo, hi] = fn === 'norm_percentile_0_99' ? [0, 99] : [5, 95];
      return clipScale(column, percentileOf(sorted, lo), percentileOf(sorted, hi));
    }
  }
}

function elementwise(fn: string, x: number, row: number, token: number): number {
  switch (fn) {
    case 'exp':
      return Math.exp(x);
    case 'log':
      if (x <= 0) throw new RowError('log of non-positive value', row, token);
      return Math.log(x);
    case 'abs':
      return Math.abs(x);
    default:
      return 1 / (1 + Math.exp(-x));
  }
}

function binary(op: string, x: number, y: number, row: number, token: number): number {
  const isBoolean = (v: number) => v === 0 || v === 1;
  switch (op) {
    case '+':
      return x + y;
    case '-':
      return x - y;
    case '*':
      return x * y;
    case '/':
      if (y === 0) throw new RowError('division by zero', row, token);
      return x / y;
    case '^':
      return x ** y;
    case 'min':
      return Number.isNaN(x) || Number.isNaN(y) ? Number.NaN : x < y ? x : y;
    case 'max':
      return Number.isNaN(x) || Number.isNaN(y) ? Number.NaN : x > y ? x : y;
    case '<':
      return x < y ? 1 : 0;
    case '<=':
      return x <= y ? 1 : 0;
    case '>':
      return x > y ? 1 : 0;
    case '>=':
      return x >= y ? 1 : 0;
    case '==':
      return x === y ? 1 : 0;
    default:
      if (!isBoolean(x) || !isBoolean(y)) throw new RowError(`operator ${op} needs 0/1 operands`, row, token);
      return op === '&' ? (x === 1 && y === 1 ? 1 : 0) : x === 1 || y === 1 ? 1 : 0;
  }
}

/** Column-at-a-time interpretation with plain arrays, each row computed on its own. */
function reference(
  source: string,
  inputs: Record<string, number[]>,
  rows: number,
  precision: Precision,
): number[] {
  const round = precision === 'fp32' ? Math.fround : (v: number) => v;
  const stack: number[][] = [];
  source.split(' ').forEach((token, i) => {
    const position = i + 1;
    if (BINARY.includes(token)) {
      const b = stack.pop()!;
      const a = stack.pop()!;
      const out: number[] = [];
      for (let row = 0; row < rows; row++) out.push(round(binary(token, a[row]!, b[row]!, row, position)));
      stack.push(out);
    } else if (UNARY.includes(token)) {
      const a = stack.pop()!;
      if (token === 'exp' || token === 'log' || token === 'abs' || token === 'sigmoid') {
        const out: number[] = [];
        for (let row = 0; row < rows; row++) out.push(round(elementwise(token, a[row]!, row, position)));
        stack.push(out);
      } else stack.push(columnFunction(token, a).map(round));
    } else if (VARIABLES.includes(token)) {
      stack.push(inputs[token]!.slice(0, rows).map(round));
    } else {
      stack.push(new Array<number>(rows).fill(round(Number(token))));
    }
  });
  return stack[0]!;
}

function generate(random: () => number, depth: number): string[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  if (depth === 0 || random() < 0.25) return [random() < 0.75 ? pick(VARIABLES) : pick(LITERALS)];
  if (random() < 0.3) return [...generate(random, depth - 1), pick(UNARY)];
  return [...generate(random, depth - 1), ...generate(random, depth - 1), pick(BINARY)];
}

function randomValue(random: () => number): number {
  const r = random();
  if (r < 0.3) return random() < 0.5 ? 0 : 1;
  if (r < 0.5) return Math.floor(random() * 7) - 3;
  return Math.round((random() * 20 - 10) * 1000) / 1000;
}

function sameNumbers(actual: ArrayLike<number>, expected: number[], precision: Precision): boolean {
  if (actual.length !== expected.length) return false;
  const tolerance = precision === 'fp32' ? 1e-6 : 1e-12;
  for (let i = 0; i < expected.length; i++) {
    const x = actual[i]!;
    const y = expected[i]!;
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (!(Number.isNaN(x) && Number.isNaN(y))) return false;
    } else if (x !== y && Math.abs(x - y) > tolerance * Math.max(1, Math.abs(y))) return false;
  }
  return true;
}

test('vectorised evaluation matches a naive per-row reference over random expressions', () => {
  const random = seededRandom(20240611);
  let computed = 0;
  let failed = 0;
  for (let trial = 0; trial < 400; trial++) {
    const source = generate(random, 1 + Math.floor(random() * 4)).join(' ');
    const expression = compileExpression(source);
    // Two input sets per expression so scratch reuse (smaller and larger rows) is exercised too.
    for (let call = 0; call < 2; call++) {
      const rows = random() < 0.1 ? Math.floor(random() * 2) : Math.floor(random() * 40);
      const values: Record<string, number[]> = {};
      const columns: Record<string, Float32Array | Float64Array> = {};
      for (const name of VARIABLES) {
        const column = Array.from({ length: rows + Math.floor(random() * 3) }, () => randomValue(random));
        values[name] = column;
        columns[name] = random() < 0.5 ? Float64Array.from(column) : Float32Array.from(column);
      }
      const precision: Precision = random() < 0.5 ? 'fp32' : 'fp64';
      // The reference sees what the engine sees: fp32 inputs arrive already rounded.
      const seen: Record<string, number[]> = {};
      for (const name of VARIABLES) seen[name] = Array.from(columns[name]!);
      const label = `\`${source}\` rows=${rows} ${precision} trial ${trial}.${call}`;
      let expected: number[] | RowError;
      try {
        expected = reference(source, seen, rows, precision);
      } catch (err) {
        if (!(err instanceof RowError)) throw err;
        expected = err;
      }
      if (expected instanceof RowError) {
        const { kind, row, token } = expected;
        assert.throws(
          () => expression.evaluate(columns, rows, precision),
          (err) => {
            assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), label);
            assert.ok(err.message.startsWith(kind), `${label}: ${err.message}`);
            assert.ok(err.message.includes(` at row ${row} in \``), `${label}: ${err.message}`);
            assert.ok(err.message.endsWith(`(token ${token})`), `${label}: ${err.message}`);
            return true;
          },
        );
        failed++;
      } else {
        const actual = expression.evaluate(columns, rows, precision);
        assert.ok(actual instanceof (precision === 'fp32' ? Float32Array : Float64Array), label);
        assert.ok(
          sameNumbers(actual, expected, precision),
          `${label}\n actual   ${Array.from(actual)}\n expected ${expected}`,
        );
        computed++;
      }
    }
  }
  // Both outcomes must be well represented for the comparison to mean something.
  assert.ok(computed > 300, `only ${computed} computed cases`);
  assert.ok(failed > 50, `only ${failed} error cases`);
});
