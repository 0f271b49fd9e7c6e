/**
 * RPN (postfix) expressions as numerix defines them: whitespace-separated tokens, each a number
 * literal, an operator or function, or a variable naming an input column. Compiling validates the
 * expression and plans where every intermediate lives, so evaluation is only kernel calls.
 *
 * Tokens:
 * - operators (two operands): `+ - * / ^ min max < <= > >= == & |`; functions (one operand):
 *   `exp log abs sigmoid norm_min_max percentile_rank norm_percentile_0_99 norm_percentile_5_95`.
 *   Case-sensitive, so `EXP` is a variable.
 * - number literals: optional sign, digits with an optional fraction, optional exponent
 *   (`2`, `-0.5`, `.5`, `1e-3`); they are constants, never materialised as columns.
 * - variables: a letter or `_`, then letters, digits, `_ . : @ -`.
 */
import { invalidArgument } from '../platform/errors.js';
import { type EvaluationPacer, Evaluator, type Precision } from './evaluate.js';
import { BINARY_OPERATORS, type BinaryOperator, UNARY_FUNCTIONS, type UnaryFunction } from './functions.js';
import type { Instruction, Operand, Program } from './program.js';

export interface CompiledExpression {
  readonly source: string;
  /** Variable names in first-use order (tokens that are not numbers, operators or functions). */
  readonly variables: readonly string[];
  /**
   * Evaluates over `rows` rows. Each input column has at least `rows` elements. Returns a new array
   * of `rows` results (Float32Array for fp32, Float64Array for fp64; default fp64). In fp32 every
   * operator's result is rounded to fp32. Throws INVALID_ARGUMENT naming the variable when an
   * input is missing or short, and naming the 0-based row and the token when an operation is
   * undefined there (division by zero, log of a non-positive value, `&`/`|` on a value not 0 or 1).
   */
  evaluate(
    inputs: Readonly<Record<string, Float32Array | Float64Array>>,
    rows: number,
    precision?: Precision,
  ): Float32Array | Float64Array;
  /**
   * As `evaluate`, writing the results into the first `rows` elements of `output` (which must be
   * at least that long) instead of a new array; `output`'s type picks the precision. Saves the
   * allocation when the caller has a column buffer to fill. `output` may be one of the inputs; after an
   * error its contents are unspecified.
   */
  evaluateInto<T extends Float32Array | Float64Array>(
    inputs: Readonly<Record<string, Float32Array | Float64Array>>,
    rows: number,
    output: T,
  ): T;
  /**
   * As `evaluateInto`, for many rows: between operators, `pacer` may pause the evaluation (giving
   * the event loop a turn) or stop it by rejecting. Evaluations of one expression may then
   * interleave; each has its own scratch buffers.
   */
  evaluateIntoPaced<T extends Float32Array | Float64Array>(
    inputs: Readonly<Record<string, Float32Array | Float64Array>>,
    rows: number,
    output: T,
    pacer: EvaluationPacer,
  ): Promise<T>;
}

type Token =
  | { readonly kind: 'literal'; readonly value: number }
  | { readonly kind: 'variable'; readonly index: number }
  | { readonly kind: 'binary'; readonly op: BinaryOperator }
  | { readonly kind: 'unary'; readonly fn: UnaryFunction };

const binaryOperators: ReadonlySet<string> = new Set(BINARY_OPERATORS);
const unaryFunctions: ReadonlySet<string> = new Set(UNARY_FUNCTIONS);
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const STARTS_LIKE_NUMBER = /^[+-]?\.?\d/;
const VARIABLE = /^[A-Za-z_][\w.:@-]*$/;
const HAS_NAME_CHARACTER = /[\w]/;
const SORTING_FUNCTIONS: ReadonlySet<UnaryFunction> = new Set([
  'percentile_rank',
  'norm_percentile_0_99',
  'norm_percentile_5_95',
]);

/** Compiles `source`; INVALID_ARGUMENT naming the token and its 1-based position when it is not a valid expression. */
export function compileExpression(source: string): CompiledExpression {
  const program = planProgram(source);
  const evaluator = new Evaluator(program);
  return {
    source,
    variables: program.variables,
    evaluate: (inputs, rows, precision = 'fp64') => {
      if (!Number.isSafeInteger(rows) || rows < 0) {
        throw invalidArgument(`rows must be a non-negative integer, got ${rows}`);
      }
      return evaluator.evaluate(
        inputs,
        rows,
        precision === 'fp32' ? new Float32Array(rows) : new Float64Array(rows),
      );
    },
    evaluateInto: (inputs, rows, output) => evaluator.evaluate(inputs, rows, output),
    evaluateIntoPaced: (inputs, rows, output, pacer) => evaluator.evaluatePaced(inputs, rows, output, pacer),
  };
}

/** Validates `source` and assigns registers. Exported for tests and tools that inspect the plan. */
export function planProgram(source: string): Program {
  const texts = source.trim().split(/\s+/);
  if (texts.length === 1 && texts[0] === '') throw invalidArgument('empty expression');
  const where = (text: string, position: number): string =>
    `\`${text}\` at token ${position} in \`${source}\``;

  const variables: string[] = [];
  const tokens = texts.map((text, i) => classify(text, i + 1, variables, where));

  const stack: Operand[] = [];
  const freeTemps: number[] = [];
  const literals: { register: number; value: number }[] = [];
  const instructions: Instruction[] = [];
  const outputRegister = variables.length;
  let tempCount = 0;
  let scalarCount = 0;
  let usesSort = false;

  // The last operator writes straight into the output; others reuse a consumed temporary if they can.
  const target = (operands: Operand[], position: number): number => {
    let out = -1;
    if (position === tokens.length) out = outputRegister;
    else {
      const temp = operands.find((o) => o.vector && o.index > outputRegister);
      if (temp !== undefined) out = temp.index;
      else {
        freeTemps.sort((x, y) => y - x);
        out = freeTemps.pop() ?? outputRegister + 1 + tempCount++;
      }
    }
    for (const o of operands)
      if (o.vector && o.index > outputRegister && o.index !== out) freeTemps.push(o.index);
    return out;
  };

  tokens.forEach((token, i) => {
    const position = i + 1;
    switch (token.kind) {
      case 'literal':
        literals.push({ register: scalarCount, value: token.value });
        stack.push({ vector: false, index: scalarCount++ });
        return;
      case 'variable':
        stack.push({ vector: true, index: token.index });
        return;
      case 'unary': {
        const a = stack.pop();
        if (a === undefined) {
          throw invalidArgument(
            `function ${token.fn} at token ${position} needs 1 operand, has 0 in \`${source}\``,
          );
        }
        const out = a.vector ? target([a], position) : scalarCount++;
        if (SORTING_FUNCTIONS.has(token.fn)) usesSort = true;
        instructions.push({ kind: 'unary', fn: token.fn, token: position, a, out });
        stack.push({ vector: a.vector, index: out });
        return;
      }
      case 'binary': {
        if (stack.length < 2) {
          throw invalidArgument(
            `operator ${token.op} at token ${position} needs 2 operands, has ${stack.length} in \`${source}\``,
          );
        }
        const b = stack.pop()!;
        const a = stack.pop()!;
        const vector = a.vector || b.vector;
        const out = vector ? target([a, b], position) : scalarCount++;
        instructions.push({ kind: 'binary', op: token.op, token: position, a, b, out });
        stack.push({ vector, index: out });
        return;
      }
    }
  });

  if (stack.length !== 1) {
    throw invalidArgument(`expression leaves ${stack.length} values; expected 1 in \`${source}\``);
  }
  return {
    source,
    variables,
    literals,
    instructions,
    result: stack[0]!,
    tempCount,
    scalarCount,
    usesSort,
  };
}

function classify(
  text: string,
  position: number,
  variables: string[],
  where: (text: string, position: number) => string,
): Token {
  if (binaryOperators.has(text)) return { kind: 'binary', op: text as BinaryOperator };
  if (unaryFunctions.has(text)) return { kind: 'unary', fn: text as UnaryFunction };
  if (STARTS_LIKE_NUMBER.test(text)) {
    const value = Number(text);
    if (!NUMBER.test(text) || !Number.isFinite(value))
      throw invalidArgument(`bad number literal ${where(text, position)}`);
    return { kind: 'literal', value };
  }
  if (VARIABLE.test(text)) {
    let index = variables.indexOf(text);
    if (index < 0) index = variables.push(text) - 1;
    return { kind: 'variable', index };
  }
  if (!HAS_NAME_CHARACTER.test(text)) throw invalidArgument(`unknown operator ${where(text, position)}`);
  throw invalidArgument(
    `invalid variable name ${where(text, position)}; a name starts with a letter or _ and continues with letters, digits, _ . : @ -`,
  );
}
