/**
 * A planned expression: what the planner (expression.ts) writes and the evaluator (evaluate.ts)
 * runs; in its own file so that neither imports the other for it.
 */
import type { BinaryOperator, UnaryFunction } from './functions.js';

/** Where a value lives during evaluation: a vector register (column) or a scalar register (constant). */
export interface Operand {
  readonly vector: boolean;
  readonly index: number;
}

export type Instruction =
  | {
      readonly kind: 'unary';
      readonly fn: UnaryFunction;
      /** 1-based token position, for error messages. */
      readonly token: number;
      readonly a: Operand;
      /** Register written: vector register when `a` is a vector, else scalar register. */
      readonly out: number;
    }
  | {
      readonly kind: 'binary';
      readonly op: BinaryOperator;
      readonly token: number;
      readonly a: Operand;
      readonly b: Operand;
      /** Vector register when either operand is a vector, else scalar register. */
      readonly out: number;
    };

/**
 * A planned program. Vector registers are numbered: inputs `0..variables.length−1` (in variable
 * order), the output `variables.length`, then `tempCount` scratch columns. Scalar registers hold
 * the literals (loaded per call, rounded to the call's precision) and operators on constants.
 */
export interface Program {
  readonly source: string;
  readonly variables: readonly string[];
  readonly literals: readonly { readonly register: number; readonly value: number }[];
  readonly instructions: readonly Instruction[];
  readonly result: Operand;
  readonly tempCount: number;
  readonly scalarCount: number;
  /** Whether a ranking function needs the sort buffer. */
  readonly usesSort: boolean;
}
