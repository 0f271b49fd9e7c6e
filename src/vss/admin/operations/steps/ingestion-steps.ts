/**
 * The two ingestion steps resets and deltas share: starting the batch job, and waiting for the
 * consumers to complete it (their ingestion record turns COMPLETE once every partition's EOF marker
 * was consumed: ingestion-repository.ts).
 *
 * The job id is derived from the operation id, so starting it again (after a crash, or on retry) is
 * the JobRunner's idempotent start of the same job: it returns the running job's status, resumes a
 * failed one from its checkpoint, and never runs a job twice at once.
 */
import { isLatticeError } from '../../../../platform/errors.js';
import type { IngestionRecord, JsonObject, Model, Operation } from '../../../store/index.js';
import type { IngestionJob, JobKind, JobStatus } from '../../jobs/index.js';
import { type StepContext, type StepDefinition, type StepEffect, StepFailure } from '../step-registry.js';
import { operationVersion, variantVersionMap } from './operation-targets.js';

/** Bad rows listed in the operation's result (all are counted). */
const LISTED_BAD_ROWS = 20;

export function jobIdOf(operation: Operation): string {
  return `${operation.kind.toLowerCase()}-${operation.operationId}`;
}

/** The batch job of the operation, from the model as registered and the versions recorded at submit. */
export function ingestionJob(ctx: StepContext, model: Model, kind: JobKind): IngestionJob {
  const { operation, services } = ctx;
  return {
    jobId: jobIdOf(operation),
    kind,
    entity: model.entity,
    modelName: model.modelName,
    version: operationVersion(operation),
    trainingDataPath: model.trainingDataPath,
    columns: model.ingestionColumnMapping,
    vectorDimension: model.modelConfig.vectorDimension,
    variantVersions: variantVersionMap(operation),
    // A row without its own index flag is indexed by every variant (the job's default).
    indexDefaults: {},
    topic: services.embeddingsTopic,
    partitions: services.partitions,
  };
}

/** Starts (or finds running) the operation's job, then moves on recording its id. */
export function startJobStep(name: string, next: string, kind: JobKind, progress: number): StepDefinition {
  return {
    name,
    async run(ctx) {
      const model = await ctx.services.store.models.get(ctx.operation);
      const job = ingestionJob(ctx, model, kind);
      const status = await ctx.services.jobRunner.start(job);
      ctx.services.startedJobs.add(job.jobId);
      return ctx.advance(next, progress, async (repositories, operation) => {
        await repositories.operations.setResult(operation.operationId, {
          ...operation.result,
          job_id: job.jobId,
          job: jobSummary(status),
        });
      });
    },
  };
}

export interface WaitIngestionOptions {
  name: string;
  /** The step after; undefined: the operation succeeds. */
  next: string | undefined;
  /** Where a retry starts when the job fails (the start step). */
  restartAt: string;
  /** Progress while the job runs goes from `from` to `to`. */
  from: number;
  to: number;
  /** More effects of completion, in its transaction (variant and version transitions). */
  onComplete?: StepEffect;
}

/**
 * Waits for the consumers' record of the job to be COMPLETE, reporting the job's progress meanwhile;
 * on completion adds the job's counts to the version, in the transaction that moves on.
 */
export function waitIngestionStep(options: WaitIngestionOptions): StepDefinition {
  return {
    name: options.name,
    async run(ctx) {
      const { operation, services } = ctx;
      const jobId = jobIdOf(operation);
      const version = operationVersion(operation);
      const record = await services.store.ingestion.find({
        entity: operation.entity,
        modelName: operation.modelName,
        version,
        jobId,
      });
      if (record?.status === 'COMPLETE' && record.counts !== null) {
        // The job's last status, so the operation does not keep a snapshot from mid-run.
        const finalJob = await jobStatus(ctx).then(jobSummary, () => undefined);
        const effect: StepEffect = async (repositories, op) => {
          await repositories.versions.addCounts(
            { entity: op.entity, modelName: op.modelName, version },
            { ingested: record.counts!.applied, failed: record.counts!.rejected },
          );
          await repositories.operations.setResult(op.operationId, {
            ...op.result,
            ...(finalJob === undefined ? {} : { job: finalJob }),
            ingestion: countsOf(record),
          });
          await options.onComplete?.(repositories, op);
        };
        return options.next === undefined
          ? ctx.succeed(undefined, effect)
          : ctx.advance(options.next, options.to, effect);
      }
      const status = await jobStatus(ctx);
      if (status.state === 'FAILED') {
        throw new StepFailure(`ingestion job ${jobId} failed: ${status.message}`, {
          resumeAt: options.restartAt,
        });
      }
      const share = status.state === 'SUCCEEDED' ? 1 : status.progress;
      // Just short of `to`: the job done is not yet the ingestion complete.
      const progress = options.from + (options.to - options.from) * Math.min(share, 0.99);
      return ctx.wait(progress, { job: jobSummary(status) });
    },
  };
}

/**
 * The job's status. The first time this process looks at the job it starts it again (the runner's
 * idempotent start: the status of a running or finished job, a resume of one interrupted by a
 * crash); so does a runner that lost the job (in-memory records, restarted).
 */
async function jobStatus(ctx: StepContext): Promise<JobStatus> {
  const { services } = ctx;
  const jobId = jobIdOf(ctx.operation);
  const restart = async () => {
    const model = await services.store.models.get(ctx.operation);
    const kind: JobKind = ctx.operation.kind === 'DELTA_MODEL' ? 'DELTA' : 'RESET';
    const status = await services.jobRunner.start(ingestionJob(ctx, model, kind));
    services.startedJobs.add(jobId);
    return status;
  };
  if (!services.startedJobs.has(jobId)) return restart();
  try {
    return await services.jobRunner.status(jobId);
  } catch (err) {
    if (!isLatticeError(err, 'NOT_FOUND')) throw err;
    return restart();
  }
}

function jobSummary(status: JobStatus): JsonObject {
  return {
    state: status.state,
    percent: Math.round(status.progress * 1000) / 10,
    rows_read: status.rowsRead,
    rows_published: status.rowsPublished,
    bad_row_count: status.badRowCount,
    bad_rows: status.badRows
      .slice(0, LISTED_BAD_ROWS)
      .map((b) => ({ file: b.file, row: b.row, reason: b.reason })),
    message: status.message,
  };
}

function countsOf(record: IngestionRecord): JsonObject {
  const counts = record.counts!;
  return {
    events: counts.events,
    applied: counts.applied,
    rejected: counts.rejected,
    points_written: counts.pointsWritten,
  };
}
