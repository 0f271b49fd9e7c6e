/**
 * TRIGGER_MODEL_MACHINE: starts the indexing pipeline of one variant whose write version is
 * ingested (checked when the trigger is accepted: FAILED_PRECONDITION otherwise, the API's 409):
 *
 *   start_indexing → indexing → flip → drop_previous
 */
import { type OperationPlan, StepFailure } from '../step-registry.js';
import { dropRetiredStep, flipStep, waitIndexedStep } from './indexing-steps.js';
import { failTargets, retryTargets, variantKey } from './operation-targets.js';

export const triggerModelMachinePlan: OperationPlan = {
  kind: 'TRIGGER_MODEL_MACHINE',
  steps: [
    {
      name: 'start_indexing',
      run: (ctx) =>
        ctx.advance('indexing', 0.1, async (repositories, operation) => {
          const key = variantKey(operation, operation.variant!);
          if (!(await repositories.variants.transition(key, 'INGESTED', 'INDEXING'))) {
            const variant = await repositories.variants.get(key);
            if (variant.state !== 'INDEXING') {
              throw new StepFailure(`variant ${key.variant} is ${variant.state}, not INGESTED`);
            }
          }
        }),
    },
    waitIndexedStep('indexing', 'flip', 0.1, 0.9),
    flipStep('flip', 'drop_previous', 0.95),
    dropRetiredStep('drop_previous'),
  ],
  onFail: (repositories, operation, reason) => failTargets(repositories, operation, reason),
  onRetry: (repositories, operation) =>
    retryTargets(repositories, operation, {
      start_indexing: 'INGESTED',
      indexing: 'INDEXING',
      flip: 'INDEXING',
    }),
};
