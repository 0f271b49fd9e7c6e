/**
 * Compute: numerix-compatible RPN expressions over score columns. Compile once (validation with
 * token positions), then evaluate per request over typed-array columns in fp32 or fp64.
 */
export { type EvaluationPacer, type Precision, parsePrecision } from './evaluate.js';
export { type CompiledExpression, compileExpression } from './expression.js';
export {
  BINARY_OPERATORS,
  type BinaryOperator,
  UNARY_FUNCTIONS,
  type UnaryFunction,
} from './functions.js';
