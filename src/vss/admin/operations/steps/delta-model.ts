/**
 * DELTA_MODEL: a delta load (job kind DELTA) into the variants' current write versions, recorded
 * when the delta was accepted; no new version, no flip (vss.md: deltas write into the current
 * version). The variants keep serving meanwhile, so a failed delta leaves them as they are.
 *
 *   start_job → ingesting (the job's counts go into the version when the consumers complete it)
 */
import type { OperationPlan } from '../step-registry.js';
import { startJobStep, waitIngestionStep } from './ingestion-steps.js';

export const deltaModelPlan: OperationPlan = {
  kind: 'DELTA_MODEL',
  steps: [
    startJobStep('start_job', 'ingesting', 'DELTA', 0.05),
    waitIngestionStep({ name: 'ingesting', next: undefined, restartAt: 'start_job', from: 0.05, to: 1 }),
  ],
};
