/**
 * The vss admin operations engine: `startAdminEngine` composes the ModelLifecycle the HTTP API
 * calls (operations recorded with their outbox row in one transaction), the outbox relay, the admin
 * consumers that advance operations step by step, and the reset scheduler. Every kind (promotion
 * included) is an `OperationPlan` (step-registry.ts); further ones plug in through `plans`.
 */

export {
  type AdminEngine,
  type AdminEngineOptions,
  defaultPlans,
  type ServedIndex,
  startAdminEngine,
} from './admin-engine.js';
export { ADMIN_METRIC_NAMES } from './admin-metrics.js';
export type { StepEvent } from './operation-worker.js';
export type { AdminLifecycle } from './operations-lifecycle.js';
export {
  bucketOf,
  RECALL_BUCKETS,
  RECALL_GATE_DEFAULTS,
  type RecallBucket,
  type RecallGateSettings,
} from './recall-gate.js';
export { AUTO_ROLLBACK_DEFAULTS, type AutoRollbackSettings, storeLiveRecall } from './recall-watch.js';
export { FREQUENCY_MS } from './reset-scheduler.js';
export {
  type OperationPlan,
  type StepContext,
  type StepDefinition,
  type StepEffect,
  StepFailure,
  type StepOutcome,
  StepRegistry,
  type StepServices,
} from './step-registry.js';
export { dropRetiredStep, flipStep, measureIndexing, waitIndexedStep } from './steps/indexing-steps.js';
export {
  failTargets,
  loadTargets,
  operationVariants,
  operationVersion,
  retryTargets,
  variantVersionMap,
} from './steps/operation-targets.js';
export { PROMOTE_STEPS } from './steps/promote-steps.js';
export { RESET_STEPS } from './steps/reset-model.js';
export { type DbTarget, targetOf, VectorDbs } from './vector-dbs.js';
