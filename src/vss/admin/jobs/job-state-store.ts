/**
 * Where the built-in runner keeps each job's record between runs: its last status and, while it is
 * unfinished, a checkpoint to resume from. A record outlives the process, so after a crash the
 * admin can ask for the job's status and start it again without republishing what was already on
 * the queue. Two stores here: in memory (a single process's lifetime) and a directory of JSON
 * files; admin may keep records in SQL by implementing the same two methods.
 *
 * A store is `exclusive` when no other live process can write it (the file store locks its directory,
 * like the embedded databases): then a RUNNING record another runner wrote is proven to be a dead
 * predecessor's, and its job is taken over at once rather than after its lease.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { type DirLock, lockDirectory } from '../../../platform/dir-lock.js';
import { describeError, LatticeError } from '../../../platform/errors.js';
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
  /** When the owner last wrote the record: a RUNNING record not written for a lease is interrupted. */
  heartbeatAt: number;
  /** The job itself, so a runner that finds it interrupted can resume it (absent in older records). */
  job?: IngestionJob;
}

export interface JobStateStore {
  /** The job's record, or undefined when it was never saved. */
  load(jobId: string): Promise<JobRecord | undefined>;
  /** Replaces the job's record durably. */
  save(record: JobRecord): Promise<void>;
  /** True when this process alone writes the store while it is open (see the top of this file). */
  readonly exclusive?: boolean;
  /** Releases what the store holds (its directory lock). */
  close?(): void;
}

/** Records in process memory: status survives in-process restarts of a job, not a crash. */
export class MemoryJobStateStore implements JobStateStore {
  readonly #records = new Map<string, string>();

  async load(jobId: string): Promise<JobRecord | undefined> {
    const text = this.#records.get(jobId);
    return text === undefined ? undefined : (JSON.parse(text) as JobRecord);
  }

  async save(record: JobRecord): Promise<void> {
    this.#records.set(record.jobId, JSON.stringify(record));
  }
}

export interface FileJobStateStoreOptions {
  /**
   * Lock the directory (dir-lock.ts) so that no other process opens it while this store is open:
   * FAILED_PRECONDITION naming the holder when a live one has it. For a single-process deployment
   * (embedded defaults), where this makes a predecessor's RUNNING record safe to take over at once.
   */
  exclusive?: boolean;
}

/**
 * One JSON file per job in `dir` (named by a digest of the job id), replaced atomically (written
 * beside it, flushed to disk, renamed over it), so a crash leaves the old record or the new one.
 */
export class FileJobStateStore implements JobStateStore {
  readonly #dir: string;
  readonly #lock: DirLock | undefined;
  #ready: Promise<unknown> | undefined;

  constructor(dir: string, options: FileJobStateStoreOptions = {}) {
    this.#dir = dir;
    this.#lock = options.exclusive ? lockDirectory(dir, 'job state directory') : undefined;
  }

  get exclusive(): boolean {
    return this.#lock !== undefined;
  }

  close(): void {
    this.#lock?.release();
  }

  async load(jobId: string): Promise<JobRecord | undefined> {
    let text: string;
    try {
      text = await readFile(this.#path(jobId), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw this.#failure(`reading the record of job ${jobId}`, err);
    }
    try {
      const record = JSON.parse(text) as JobRecord;
      if (record.jobId === jobId) return record;
    } catch {
      // fall through: a record this store did not write
    }
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `job record ${this.#path(jobId)} is not the record of job ${jobId}; remove it to start the job afresh`,
    );
  }

  async save(record: JobRecord): Promise<void> {
    this.#ready ??= mkdir(this.#dir, { recursive: true });
    try {
      await this.#ready;
      const path = this.#path(record.jobId);
      const temporary = `${path}.${randomUUID()}.tmp`;
      const handle = await open(temporary, 'w');
      try {
        await handle.writeFile(JSON.stringify(record));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, path);
    } catch (err) {
      this.#ready = undefined;
      throw this.#failure(`saving the record of job ${record.jobId}`, err);
    }
  }

  #path(jobId: string): string {
    return join(this.#dir, `${createHash('sha256').update(jobId).digest('hex').slice(0, 40)}.json`);
  }

  #failure(what: string, err: unknown): LatticeError {
    return new LatticeError('UNAVAILABLE', `job state store ${this.#dir}: ${what}: ${describeError(err)}`, {
      cause: err,
    });
  }
}
