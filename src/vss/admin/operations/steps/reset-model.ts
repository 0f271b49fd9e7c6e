/**
 * RESET_MODEL: a full ingestion into the version allocated when the reset was accepted, then
 * indexing and an atomic flip of every variant (vss.md "Concepts"):
 *
 *   create_collections → set_write_versions → start_job → ingesting → indexing → verify_recall → flip
 *   → drop_previous
 *
 * - create_collections: the version's collection on each vector DB the variants use (one per DB,
 *   shared by the variants on it; HNSW from their `vectordb_config`). "Create if absent".
 * - set_write_versions: every variant writes the new version and is INGESTING.
 * - start_job: the JobRunner starts the job (id derived from the operation: idempotent).
 * - ingesting: the job's progress is recorded until the consumers' ingestion record is COMPLETE;
 *   then, in one transaction, the counts go into the version, the version becomes INGESTED, and
 *   the variants INGESTED then INDEXING. (The model's state follows its variants': model-state.ts.) A failed job fails the operation at
 *   start_job, so a retry starts (resumes) the job again.
 * - indexing: until every collection reports indexed ≥ 95 % of its points.
 * - verify_recall: recall@k of the new version against an exact search of it, per variant and
 *   filter-selectivity bucket (recall-gate.ts); below a variant's `min_recall` the operation fails
 *   here with the figures, and the variants keep serving their version.
 * - flip: every variant READY on the new read version, in one transaction (each remembers the
 *   version it read before: rollback-model's target).
 * - drop_previous: versions no variant reads or writes any more are dropped (collections, rows)
 *   once their rollback grace period (`vss.admin.rollbackGraceMs`) is over; those still within it
 *   are left to the engine's sweep (retired-versions.ts).
 *
 * A failed reset leaves variants that serve a version READY on it (failTargets); a retry puts them
 * back in the state of the step it resumes at.
 *
 * A variant on another vector DB kind than the consumers' gets its collection only when this admin
 * reaches that DB (else the reset fails, naming it). The consumers write points only to their own
 * DB, so filling such a collection from the embedding store is promotion's job (PROMOTE_*).
 */
import type { OperationPlan } from '../step-registry.js';
import { dropRetiredStep, flipStep, waitIndexedStep } from './indexing-steps.js';
import { startJobStep, waitIngestionStep } from './ingestion-steps.js';
import { failTargets, loadTargets, operationVersion, retryTargets, variantKey } from './operation-targets.js';
import { verifyRecallStep } from './verify-recall.js';

export const RESET_STEPS = [
  'create_collections',
  'set_write_versions',
  'start_job',
  'ingesting',
  'indexing',
  'verify_recall',
  'flip',
  'drop_previous',
] as const;

export const resetModelPlan: OperationPlan = {
  kind: 'RESET_MODEL',
  steps: [
    {
      name: 'create_collections',
      async run(ctx) {
        const { model, variants } = await loadTargets(ctx.services.store, ctx.operation);
        const version = operationVersion(ctx.operation);
        const created: string[] = [];
        for (const [type, group] of ctx.services.vectorDbs.byType(variants)) {
          await ctx.heartbeat();
          created.push(await ctx.services.vectorDbs.ensureCollection(model, version, type, group));
        }
        return ctx.advance('set_write_versions', 0.02, async (repositories, operation) => {
          await repositories.operations.setResult(operation.operationId, {
            ...operation.result,
            collections: created,
          });
        });
      },
    },
    {
      name: 'set_write_versions',
      run: (ctx) =>
        ctx.advance('start_job', 0.04, async (repositories, operation) => {
          const version = operationVersion(operation);
          for (const variant of (await loadTargets(repositories, operation)).variants) {
            if (variant.state === 'INGESTING' && variant.writeVersion === version) continue;
            await repositories.variants.transition(variant, variant.state, 'INGESTING', {
              writeVersion: version,
            });
          }
        }),
    },
    startJobStep('start_job', 'ingesting', 'RESET', 0.06),
    waitIngestionStep({
      name: 'ingesting',
      next: 'indexing',
      restartAt: 'start_job',
      from: 0.06,
      to: 0.7,
      async onComplete(repositories, operation) {
        const version = operationVersion(operation);
        const key = { entity: operation.entity, modelName: operation.modelName, version };
        await repositories.versions.transition(key, 'INGESTING', 'INGESTED');
        for (const name of Object.keys(operation.result?.variant_version_map ?? {})) {
          const variant = variantKey(operation, name);
          await repositories.variants.transition(variant, 'INGESTING', 'INGESTED');
          await repositories.variants.transition(variant, 'INGESTED', 'INDEXING');
        }
      },
    }),
    waitIndexedStep('indexing', 'verify_recall', 0.7, 0.95),
    verifyRecallStep('verify_recall', 'flip', 0.96),
    flipStep('flip', 'drop_previous', 0.97),
    dropRetiredStep('drop_previous'),
  ],
  onFail: (repositories, operation, reason) =>
    failTargets(repositories, operation, reason, { ownsVersion: true }),
  onRetry: (repositories, operation) =>
    retryTargets(repositories, operation, {
      start_job: 'INGESTING',
      ingesting: 'INGESTING',
      indexing: 'INDEXING',
      verify_recall: 'INDEXING',
      flip: 'INDEXING',
    }),
};
