/**
 * The compute server: `numerix.Numerix/Compute` over expressions kept in the ConfigStore under
 * `compute/<compute_id>`, reloaded live. `startComputeServer` runs it in-process; `lattice compute`
 * runs it as a process.
 */

export { type ComputePart, type ComputePartOptions, startComputePart } from './compute-part.js';
export {
  type ComputeExpression,
  compileExpressionDocument,
  EXPRESSIONS_PREFIX,
  type ExpressionDocument,
  ExpressionRegistry,
  type ExpressionRegistryOptions,
  type ExpressionStatus,
  expressionKey,
} from './expression-registry.js';
export {
  type ComputeOutcome,
  type ComputeResult,
  computeNumerix,
  type ExpressionLookup,
} from './numerix-compute.js';
export {
  type ComputeServer,
  type ComputeServerOptions,
  type NumerixHandlerOptions,
  numerixHandlers,
  startComputeServer,
} from './numerix-server.js';
