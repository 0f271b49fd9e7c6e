/**
 * The built-in `JobRunner`: runs ingestion jobs in this process, reading `training_data_path`
 * (Parquet or JSON Lines, see training-files.ts and event-encoder.ts) and publishing to the queue.
 *
 * What it guarantees beyond the port (job-runner.ts):
 *
 * - **Checkpoints.** At least every `checkpointEveryMs`, and after each file, it waits for the
 *   events in flight and records in its {@link JobStateStore} the row reached and the counters up
 *   to it. A job started again after a crash, a cancel or a failure resumes from that point
 *   (re-reading at most the rows since it; those events keep their message ids, so within the
 *   queue's de-duplication window they are not stored again) unless a training file changed since,
 *   in which case it starts over. A SUCCEEDED job is never run again under its id.
 * - **One run per job id** in a runner, and across runners sharing a state store: a RUNNING record
 *   that another runner wrote within `leaseMs` is that runner's (start and status return its
 *   status); one older than that was interrupted, and the next start or status takes it over and
 *   resumes it (the record holds the job). Each runner rewrites its RUNNING records at least every
 *   `leaseMs / 3`. With an exclusive store (a locked directory: no other live process writes it)
 *   another runner's RUNNING record is a dead predecessor's, taken over at once: a process killed
 *   and restarted resumes its jobs without waiting for a lease.
 * - **Never two live runs.** A run begins with the store's atomic claim of the record, and each later
 *   write succeeds only while this runner still holds it. A write refused (another runner claimed the
 *   job: this process was stalled past its lease) stops the run at once, as does a lease not renewed
 *   in time (its writes failing): on a shared store the runner times its lease on its monotonic clock
 *   from the moment it sent its last successful write, which is no later than the moment the store
 *   dates the write, so it stops before any other runner may claim the job, whatever the clocks of
 *   the hosts say. A run that stopped so writes nothing more; its job goes on in the runner that
 *   claimed it, or is taken back by this runner's next start or status.
 * - With the in-memory state store (the default) the records live as long as the process: after a
 *   crash the job is unknown (NOT_FOUND) and a start runs it from the beginning.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { describeError, isLatticeError, LatticeError, notFound } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logging/index.js';
import type { Queue } from '../../../platform/queue/index.js';
import { quote } from '../../../platform/quote.js';
import { type IngestionRunSettings, JobCancelledError, runFileIngestion } from './file-ingestion.js';
import { conflictMessage, jobFingerprint, validateJob } from './ingestion-job.js';
import type { IngestionJob, JobRunner, JobStatus } from './job-runner.js';
import {
  type JobCheckpoint,
  type JobRecord,
  type JobStateStore,
  MemoryJobStateStore,
} from './job-state-store.js';
import { JobTracker } from './job-tracker.js';
import type { PublishRetry } from './publish-window.js';

export interface FileJobRunnerOptions {
  queue: Queue;
  /** Where job records and checkpoints are kept; default in memory (lost with the process). */
  stateStore?: JobStateStore;
  logger?: Logger;
  /** Publishes in flight per job; default 256. */
  concurrency?: number;
  /** Rows read per batch; default 1000. */
  batchRows?: number;
  /** Bad rows listed in a job's status (all are counted); default 100. */
  maxBadRows?: number;
  /** Least time between checkpoints, ms; default 1000. */
  checkpointEveryMs?: number;
  /** A RUNNING record not rewritten for this long was interrupted, ms; default 30,000. */
  leaseMs?: number;
  /** Retries of a publish failing for a transient reason; default 8 attempts, 100 ms doubling to 5 s. */
  publishRetry?: PublishRetry;
  /** Directories training data may be read from (symlinks resolved); absent: anywhere. */
  trainingDataRoots?: readonly string[];
}

interface Run {
  readonly job: IngestionJob;
  readonly fingerprint: string;
  readonly tracker: JobTracker;
  readonly controller: AbortController;
  checkpoint: JobCheckpoint | null;
  /** Record writes of the run, in order. */
  saving: Promise<void>;
  heartbeat: NodeJS.Timeout | undefined;
  /** Stops the run when its lease runs out unrenewed (shared stores only). */
  lease: NodeJS.Timeout | undefined;
  /** Why the run gave the job up (lost its claim, or its lease lapsed): it writes nothing more. */
  relinquished: string | undefined;
  done: Promise<JobStatus>;
}

export class FileJobRunner implements JobRunner {
  readonly kind = 'file';
  readonly #queue: Queue;
  readonly #store: JobStateStore;
  readonly #logger: Logger;
  readonly #settings: IngestionRunSettings;
  readonly #maxBadRows: number;
  readonly #leaseMs: number;
  /** Identifies this runner in the records of the jobs it runs. */
  readonly #owner = randomUUID();
  readonly #runs = new Map<string, Run>();
  /** Starts in progress per job id, so two starts of one job decide one after the other. */
  readonly #starting = new Map<string, Promise<unknown>>();
  #closed = false;

  constructor(options: FileJobRunnerOptions) {
    this.#queue = options.queue;
    this.#store = options.stateStore ?? new MemoryJobStateStore();
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#settings = {
      concurrency: options.concurrency ?? 256,
      batchRows: options.batchRows ?? 1000,
      checkpointEveryMs: options.checkpointEveryMs ?? 1000,
      publishRetry: options.publishRetry ?? { attempts: 8, baseMs: 100, maxMs: 5000 },
      ...(options.trainingDataRoots === undefined ? {} : { trainingDataRoots: options.trainingDataRoots }),
    };
    this.#maxBadRows = options.maxBadRows ?? 100;
    this.#leaseMs = options.leaseMs ?? 30_000;
  }

  async start(job: IngestionJob): Promise<JobStatus> {
    if (this.#closed) throw new LatticeError('FAILED_PRECONDITION', 'the job runner is closed');
    const valid = validateJob(job);
    const previous = this.#starting.get(valid.jobId) ?? Promise.resolve();
    const decided = previous.then(() => this.#start(valid));
    const settled = decided.catch(() => undefined);
    this.#starting.set(valid.jobId, settled);
    void settled.then(() => {
      if (this.#starting.get(valid.jobId) === settled) this.#starting.delete(valid.jobId);
    });
    return decided;
  }

  async status(jobId: string): Promise<JobStatus> {
    const run = this.#runs.get(jobId);
    if (run !== undefined) return run.tracker.status();
    const record = await this.#store.load(jobId);
    if (record === undefined)
      throw notFound(`ingestion job ${quote(jobId)} is not known to this job runner`, 'job_id');
    if (this.#runningElsewhere(record)) return elsewhere(record, this.#leaseMs);
    // Interrupted (its runner died): taken over here, so whoever waits on it sees it finish.
    if (record.status.state === 'RUNNING' && record.job !== undefined && !this.#closed)
      return this.start(record.job);
    return interrupted(record);
  }

  async cancel(jobId: string): Promise<JobStatus> {
    const run = this.#runs.get(jobId);
    if (run !== undefined) {
      if (run.tracker.state === 'RUNNING') run.controller.abort('cancelled');
      return run.done;
    }
    const record = await this.#store.load(jobId);
    if (record === undefined)
      throw notFound(`ingestion job ${quote(jobId)} is not known to this job runner`, 'job_id');
    if (this.#runningElsewhere(record)) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `ingestion job ${quote(jobId)} runs in another job runner (${record.owner}); cancel it there`,
      );
    }
    return interrupted(record);
  }

  /** Resolves with the job's final status once its run in this runner ends. NOT_FOUND when none runs here. */
  async finished(jobId: string): Promise<JobStatus> {
    const run = this.#runs.get(jobId);
    if (run === undefined)
      throw notFound(`ingestion job ${quote(jobId)} does not run in this job runner`, 'job_id');
    return run.done;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const runs = [...this.#runs.values()];
    for (const run of runs) {
      if (run.tracker.state === 'RUNNING') run.controller.abort('stopped: the job runner closed');
    }
    await Promise.all(runs.map((run) => run.done));
    this.#store.close?.();
  }

  async #start(job: IngestionJob): Promise<JobStatus> {
    const fingerprint = jobFingerprint(job);
    const run = this.#runs.get(job.jobId);
    if (run !== undefined) {
      if (run.fingerprint !== fingerprint)
        throw new LatticeError('ALREADY_EXISTS', conflictMessage(job.jobId));
      // Running or done: never a second run. A failed run is resumed below.
      if (run.tracker.state !== 'FAILED') return run.tracker.status();
      await run.done;
    }
    const record = await this.#store.load(job.jobId);
    if (record !== undefined) {
      if (record.fingerprint !== fingerprint)
        throw new LatticeError('ALREADY_EXISTS', conflictMessage(job.jobId));
      if (record.status.state === 'SUCCEEDED') return record.status;
      if (this.#runningElsewhere(record)) return elsewhere(record, this.#leaseMs);
      if (record.status.state === 'RUNNING' && record.owner !== this.#owner) {
        this.#logger.info(
          { jobId: job.jobId, previousOwner: record.owner, heartbeatAt: new Date(record.heartbeatAt) },
          this.#store.exclusive
            ? 'ingestion job taken over from the process that ran it before this one (it died)'
            : 'ingestion job taken over: its runner stopped renewing its lease',
        );
      }
    }
    return this.#launch(job, fingerprint, record?.checkpoint ?? null);
  }

  async #launch(
    job: IngestionJob,
    fingerprint: string,
    resumeFrom: JobCheckpoint | null,
  ): Promise<JobStatus> {
    const tracker = new JobTracker(job.jobId, this.#maxBadRows, resumeFrom?.counters);
    if (resumeFrom !== null) tracker.note(`resuming after ${describeCheckpoint(resumeFrom)}`);
    const run: Run = {
      job,
      fingerprint,
      tracker,
      controller: new AbortController(),
      checkpoint: resumeFrom,
      saving: Promise.resolve(),
      heartbeat: undefined,
      lease: undefined,
      relinquished: undefined,
      done: Promise.resolve(tracker.status()),
    };
    // Claimed before start returns, so a crash right after still leaves the job known.
    const sentAt = performance.now();
    if (!(await this.#store.claim(this.#record(run), this.#leaseMs)))
      return this.#claimedElsewhere(job, fingerprint);
    this.#runs.set(job.jobId, run);
    this.#renewed(run, sentAt);
    run.heartbeat = setInterval(() => void this.#save(run), Math.max(10, Math.floor(this.#leaseMs / 3)));
    run.heartbeat.unref();
    this.#logger.info(
      {
        jobId: job.jobId,
        entity: job.entity,
        model: job.modelName,
        version: job.version,
        resumed: resumeFrom !== null,
      },
      'ingestion job started',
    );
    run.done = runFileIngestion({
      queue: this.#queue,
      job,
      tracker,
      signal: run.controller.signal,
      settings: this.#settings,
      resumeFrom,
      checkpoint: async (point) => {
        run.checkpoint = point;
        await this.#save(run);
      },
    }).then(
      (message) => this.#finish(run, 'SUCCEEDED', message),
      (err: unknown) => this.#finish(run, 'FAILED', failureMessage(err, run)),
    );
    return tracker.status();
  }

  async #finish(run: Run, state: 'SUCCEEDED' | 'FAILED', message: string): Promise<JobStatus> {
    clearInterval(run.heartbeat);
    if (run.relinquished === undefined) {
      run.tracker.finish(state, message);
      if (state === 'SUCCEEDED') run.checkpoint = null;
      await this.#save(run);
    } else {
      run.tracker.finish('FAILED', `stopped: ${run.relinquished}`);
    }
    clearTimeout(run.lease);
    const status = run.tracker.status();
    if (run.relinquished !== undefined) {
      // The record, not this run, tells the job's status now (another runner's, or this one's to take back).
      if (this.#runs.get(run.job.jobId) === run) this.#runs.delete(run.job.jobId);
      return status;
    }
    const log = { jobId: run.job.jobId, rowsPublished: status.rowsPublished, badRows: status.badRowCount };
    if (state === 'SUCCEEDED') this.#logger.info(log, `ingestion job succeeded: ${message}`);
    else this.#logger.warn(log, `ingestion job failed: ${message}`);
    return status;
  }

  /**
   * Writes the run's record after its earlier writes while the run holds the job; a write refused
   * (another runner claimed the job) stops the run, a failed one is logged (the next one retries).
   */
  #save(run: Run): Promise<void> {
    run.saving = run.saving.then(async () => {
      if (run.relinquished !== undefined) return;
      const sentAt = performance.now();
      try {
        if (await this.#store.save(this.#record(run))) this.#renewed(run, sentAt);
        else this.#relinquish(run, 'another job runner took the job over');
      } catch (err) {
        this.#logger.warn(
          { jobId: run.job.jobId, err: describeError(err) },
          'saving the ingestion job record failed',
        );
      }
    });
    return run.saving;
  }

  /**
   * A write sent at `sentAt` (monotonic) succeeded: the store dated it no earlier, so no other runner
   * may claim the job before `sentAt + leaseMs`. The run stops then unless a later write renews it.
   * Not with an exclusive store, which no other runner writes.
   */
  #renewed(run: Run, sentAt: number): void {
    if (this.#store.exclusive === true || run.relinquished !== undefined) return;
    clearTimeout(run.lease);
    run.lease = setTimeout(
      () =>
        this.#relinquish(
          run,
          `its lease lapsed: no write of the job record succeeded for ${this.#leaseMs} ms`,
        ),
      Math.max(0, sentAt + this.#leaseMs - performance.now()),
    );
    run.lease.unref();
  }

  /** Stops a run that no longer holds its job: no more publishes, no more writes. */
  #relinquish(run: Run, why: string): void {
    if (run.relinquished !== undefined) return;
    run.relinquished = why;
    clearInterval(run.heartbeat);
    clearTimeout(run.lease);
    run.controller.abort(`stopped: ${why}`);
    this.#logger.warn({ jobId: run.job.jobId }, `ingestion job run stopped here: ${why}`);
  }

  /** What start answers when another runner's claim won the race for the job. */
  async #claimedElsewhere(job: IngestionJob, fingerprint: string): Promise<JobStatus> {
    const record = await this.#store.load(job.jobId);
    if (record === undefined) {
      throw new LatticeError(
        'UNAVAILABLE',
        `ingestion job ${quote(job.jobId)} could not be claimed; start it again`,
      );
    }
    if (record.fingerprint !== fingerprint)
      throw new LatticeError('ALREADY_EXISTS', conflictMessage(job.jobId));
    return record.status.state === 'RUNNING' ? elsewhere(record, this.#leaseMs) : record.status;
  }

  #record(run: Run): JobRecord {
    return {
      jobId: run.job.jobId,
      fingerprint: run.fingerprint,
      status: run.tracker.status(),
      checkpoint: run.checkpoint,
      owner: this.#owner,
      heartbeatAt: Date.now(),
      job: run.job,
    };
  }

  /** Whether a live runner other than this one holds the job (an exclusive store has none). */
  #runningElsewhere(record: JobRecord): boolean {
    return (
      record.status.state === 'RUNNING' &&
      record.owner !== this.#owner &&
      this.#store.exclusive !== true &&
      Date.now() - record.heartbeatAt < this.#leaseMs
    );
  }
}

/** The status of a job another runner holds: its last one, saying so. */
function elsewhere(record: JobRecord, leaseMs: number): JobStatus {
  const lapses = Math.max(0, Math.ceil((record.heartbeatAt + leaseMs - Date.now()) / 1000));
  return {
    ...record.status,
    message: `${record.status.message} (in job runner ${record.owner}; taken over if it does not renew its lease within ${lapses} s)`,
  };
}

function describeCheckpoint(checkpoint: JobCheckpoint): string {
  const file = checkpoint.files[checkpoint.fileIndex];
  if (file === undefined) return `all ${checkpoint.files.length} file(s) were read`;
  return `${file.name} row ${checkpoint.rowsDone} (file ${checkpoint.fileIndex + 1} of ${checkpoint.files.length})`;
}

/** The status of a job whose record says RUNNING but that nothing runs any more. */
function interrupted(record: JobRecord): JobStatus {
  if (record.status.state !== 'RUNNING') return record.status;
  const where =
    record.checkpoint === null
      ? 'before its first checkpoint'
      : `after ${describeCheckpoint(record.checkpoint)}`;
  return {
    ...record.status,
    ...(record.checkpoint?.counters ?? {}),
    state: 'FAILED',
    message: `interrupted ${where} (the process running it stopped); start the job again to resume`,
  };
}

function failureMessage(err: unknown, run: Run): string {
  const resumable =
    run.checkpoint === null
      ? 'start it again to retry'
      : `start it again to resume after ${describeCheckpoint(run.checkpoint)}`;
  if (err instanceof JobCancelledError) return `${err.message}; ${resumable}`;
  if (
    isLatticeError(err, 'NOT_FOUND') ||
    isLatticeError(err, 'FAILED_PRECONDITION') ||
    isLatticeError(err, 'INVALID_ARGUMENT')
  ) {
    return err.message;
  }
  return `${describeError(err)}; ${resumable}`;
}
