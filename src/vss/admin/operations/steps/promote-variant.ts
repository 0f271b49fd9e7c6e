/**
 * PROMOTE_VARIANT: one variant from the experiment cluster to production, its data copied from the
 * embedding store and its serving switched there (steps/promote-steps.ts):
 *
 *   prepare → await_writers → copy → indexing → switch → drop_experiment
 *
 * A variant already in production succeeds at once, with nothing copied. A failure leaves the
 * variant READY in experiment (it is never marked FAILED: it kept serving throughout).
 */
import type { OperationPlan } from '../step-registry.js';
import { promoteSteps } from './promote-steps.js';

export const promoteVariantPlan: OperationPlan = {
  kind: 'PROMOTE_VARIANT',
  steps: promoteSteps('variant'),
};
