/**
 * Job records as one JSON file per job in a directory (named by a digest of the job id), replaced
 * atomically (written beside it, flushed to disk, renamed over it), so a crash leaves the old record
 * or the new one.
 *
 * A claim or save reads the record, checks it and writes it while holding the record's lock file
 * (`<digest>.lock`, dir-lock.ts: the holder's pid, taken over once that process is dead), so the
 * check and the write are one step for every process of the host sharing the directory. The clock
 * is the host's (`Date.now()` of the writer); a directory shared between hosts is not supported.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { type DirLock, lockDirectory } from '../../../platform/dir-lock.js';
import { describeError, isLatticeError, LatticeError } from '../../../platform/errors.js';
import { type JobRecord, type JobStateStore, mayClaim } from './job-state-store.js';

export interface FileJobStateStoreOptions {
  /**
   * Lock the directory (dir-lock.ts) so that no other process opens it while this store is open:
   * FAILED_PRECONDITION naming the holder when a live one has it. For a single-process deployment
   * (embedded defaults), where this makes a predecessor's RUNNING record safe to take over at once.
   */
  exclusive?: boolean;
}

/** How long a write waits for a record's lock another writer holds (its writes take milliseconds). */
const RECORD_LOCK_WAIT_MS = 10_000;

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

  claim(record: JobRecord, leaseMs: number): Promise<boolean> {
    return this.#writeIf(record, (stored) => mayClaim(stored, record, leaseMs, this.exclusive));
  }

  save(record: JobRecord): Promise<boolean> {
    return this.#writeIf(record, (stored) => stored?.owner === record.owner);
  }

  /** Writes `record` when `allowed` says so of the stored one, holding the record's lock throughout. */
  async #writeIf(record: JobRecord, allowed: (stored: JobRecord | undefined) => boolean): Promise<boolean> {
    this.#ready ??= mkdir(this.#dir, { recursive: true });
    try {
      await this.#ready;
    } catch (err) {
      this.#ready = undefined;
      throw this.#failure(`creating the directory for job ${record.jobId}`, err);
    }
    const lock = await this.#lockRecord(record.jobId);
    try {
      if (!allowed(await this.load(record.jobId))) return false;
      await this.#write(record);
      return true;
    } finally {
      lock.release();
    }
  }

  async #write(record: JobRecord): Promise<void> {
    const path = this.#path(record.jobId);
    const temporary = `${path}.${randomUUID()}.tmp`;
    try {
      const handle = await open(temporary, 'w');
      try {
        await handle.writeFile(JSON.stringify(record));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, path);
    } catch (err) {
      throw this.#failure(`saving the record of job ${record.jobId}`, err);
    }
  }

  /** The record's lock; a live holder (this process included) is waited for, briefly. */
  async #lockRecord(jobId: string): Promise<DirLock> {
    const deadline = Date.now() + RECORD_LOCK_WAIT_MS;
    for (;;) {
      try {
        return lockDirectory(this.#path(jobId).replace(/\.json$/, ''), 'job record');
      } catch (err) {
        if (!isLatticeError(err, 'FAILED_PRECONDITION')) throw this.#failure(`locking job ${jobId}`, err);
        if (Date.now() > deadline) throw this.#failure(`locking job ${jobId}`, err);
      }
      await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 4));
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
