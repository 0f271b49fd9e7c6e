/**
 * DELTA_MODEL: a delta load (job kind DELTA) into the variants' current write versions, recorded
 * when the delta was accepted; no new version, no flip (vss.md: deltas write into the current
 * version). The variants keep serving meanwhile, so a failed delta leaves them as they are.
 *
 *   start_job → ingesting → indexing
 *
 * The job's counts go into the version when the consumers complete it; `indexing` waits until the
 * version's collection is indexed again (as a reset's does) and records what the version now holds,
 * so its ingested and indexed counts agree (replaced candidates are not counted twice).
 */
import type { OperationPlan } from '../step-registry.js';
import { waitIndexedStep } from './indexing-steps.js';
import { startJobStep, waitIngestionStep } from './ingestion-steps.js';

export const deltaModelPlan: OperationPlan = {
  kind: 'DELTA_MODEL',
  steps: [
    startJobStep('start_job', 'ingesting', 'DELTA', 0.05),
    waitIngestionStep({ name: 'ingesting', next: 'indexing', restartAt: 'start_job', from: 0.05, to: 0.9 }),
    waitIndexedStep('indexing', undefined, 0.9, 0.99),
  ],
};
