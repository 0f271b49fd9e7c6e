/**
 * PROMOTE_MODEL: every experiment variant of the model to production (one copy of their shared
 * version: they must serve the same one), then the model's own cluster, in the transaction that
 * switches the variants (steps/promote-steps.ts):
 *
 *   prepare → await_writers → copy → indexing → switch → drop_experiment
 *
 * Variants already in production are left as they are; a model whose variants all are only has its
 * own cluster switched. A failure leaves every variant READY in experiment.
 */
import type { OperationPlan } from '../step-registry.js';
import { promoteSteps } from './promote-steps.js';

export const promoteModelPlan: OperationPlan = {
  kind: 'PROMOTE_MODEL',
  steps: promoteSteps('model'),
};
