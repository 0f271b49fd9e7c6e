/**
 * Where the built-in runner keeps each job's record between runs: its last status and, while it is
 * unfinished, a checkpoint to resume from. A record outlives the process, so after a crash the
 * admin can ask for the job's status and start it again without republishing what was already on
 * the queue. Three adapters: in memory (a single process's lifetime, below), a directory of JSON
 * files (file-job-state-store.ts) and a table of the vss SQL schema (sql-job-state-store.ts, what
 * admin replicas sharing a PostgreSQL database use, so any of them sees and takes over the jobs of
 * another). One contract suite runs against all three.
 *
 * Writes are claims: a runner holds a job from a successful `claim` until another runner's claim
 * wins, and every later write of its (`save`) succeeds only while it still holds the job, so two live
 * runners never both write, and the one that lost finds out at its next write and stops.
 *
 * A store is `exclusive` when no other live process can write it (the file store locks its directory,
 * like the embedded databases): then a RUNNING record another runner wrote is proven to be a dead
 * predecessor's, and its job is taken over at once rather than after its lease.
 */
import type { BadRow, IngestionJob, JobStatus } from './job-runner.js';

/** A file as it was when the run read it; a resumed run starts over if any differs. */
export interface FileStamp {
  name: string;
  size: number;
  mtimeMs: number;
}

/** The counters of a job up to its checkpoint. */
export interface JobCounters {
  rowsRead: number;
  rowsPublished: number;
  badRowCount: number;
  badRows: BadRow[];
}

/**
 * A consistent point of an unfinished run: every row of `files[0 .. fileIndex - 1]` and rows
 * `1 .. rowsDone` of `files[fileIndex]` are either on the queue or counted as bad, and `counters`
 * count exactly those rows.
 */
export interface JobCheckpoint {
  files: FileStamp[];
  fileIndex: number;
  /** The last row (Parquet) or line (JSON Lines) of the current file that is done. */
  rowsDone: number;
  counters: JobCounters;
}

export interface JobRecord {
  jobId: string;
  /** The job's fingerprint (ingestion-job.ts): a start with other parameters is a conflict. */
  fingerprint: string;
  /** The last status the runner reported. */
  status: JobStatus;
  /** Where to resume; null once the job SUCCEEDED, or before the first checkpoint. */
  checkpoint: JobCheckpoint | null;
  /** The runner instance running it (while RUNNING). */
  owner: string;
  /**
   * When the owner last wrote the record, as an epoch in the reading process's clock: a RUNNING
   * record not written for a lease is interrupted. The memory and file stores keep the writer's
   * `Date.now()` (one host, one clock); the SQL store ignores it, stamps the database's clock, and
   * reports the record's age by that clock subtracted from the reader's `Date.now()`.
   */
  heartbeatAt: number;
  /** The job itself, so a runner that finds it interrupted can resume it (absent in older records). */
  job?: IngestionJob;
}

export interface JobStateStore {
  /** The job's record, or undefined when it was never saved. */
  load(jobId: string): Promise<JobRecord | undefined>;
  /**
   * Writes `record` durably as `record.owner`'s claim on its job, atomically with the check that the
   * owner may hold it (see {@link mayClaim}). Of claims racing for one job at most one wins; each
   * resolves whether it did.
   */
  claim(record: JobRecord, leaseMs: number): Promise<boolean>;
  /**
   * Replaces the job's record durably while `record.owner` still holds the job (the stored record is
   * that owner's). Once another owner claimed it (or the record is gone) writes nothing and resolves
   * false: the caller lost the job and must stop running it.
   */
  save(record: JobRecord): Promise<boolean>;
  /** True when this process alone writes the store while it is open (see the top of this file). */
  readonly exclusive?: boolean;
  /** Releases what the store holds (its directory lock). */
  close?(): void;
}

/**
 * Whether `claim.owner` may write `claim` over `stored`: there is no record yet, or the stored one
 * is the owner's own, FAILED, or RUNNING but not rewritten for `leaseMs` (with an `exclusive` store,
 * any other owner's: a dead predecessor's). Never over a SUCCEEDED record (the job is done) nor one
 * of another job with the same id (another fingerprint). The SQL store states the same rule in SQL.
 */
export function mayClaim(
  stored: JobRecord | undefined,
  claim: JobRecord,
  leaseMs: number,
  exclusive: boolean,
): boolean {
  if (stored === undefined) return true;
  if (stored.fingerprint !== claim.fingerprint || stored.status.state === 'SUCCEEDED') return false;
  return (
    stored.owner === claim.owner ||
    stored.status.state !== 'RUNNING' ||
    exclusive ||
    Date.now() - stored.heartbeatAt >= leaseMs
  );
}

/**
 * Records in process memory: status survives in-process restarts of a job, not a crash. Runners of
 * one process may share it; each check and write happens in one synchronous step, so claims are atomic.
 */
export class MemoryJobStateStore implements JobStateStore {
  readonly #records = new Map<string, string>();

  async load(jobId: string): Promise<JobRecord | undefined> {
    return this.#stored(jobId);
  }

  async claim(record: JobRecord, leaseMs: number): Promise<boolean> {
    if (!mayClaim(this.#stored(record.jobId), record, leaseMs, false)) return false;
    this.#records.set(record.jobId, JSON.stringify(record));
    return true;
  }

  async save(record: JobRecord): Promise<boolean> {
    if (this.#stored(record.jobId)?.owner !== record.owner) return false;
    this.#records.set(record.jobId, JSON.stringify(record));
    return true;
  }

  /** Synchronous, so that a check and the write after it are one step. */
  #stored(jobId: string): JobRecord | undefined {
    const text = this.#records.get(jobId);
    return text === undefined ? undefined : (JSON.parse(text) as JobRecord);
  }
}
