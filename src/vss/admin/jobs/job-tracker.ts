/**
 * A running job's live counters and progress, and the status the runner reports from them. Progress
 * weighs each file by its size: the files already read, plus the share of the current one.
 */
import type { BadRow, JobState, JobStatus } from './job-runner.js';
import type { JobCounters } from './job-state-store.js';

export class JobTracker {
  readonly jobId: string;
  readonly #maxBadRows: number;
  #counters: JobCounters;
  #state: JobState = 'RUNNING';
  #message = 'starting';
  #sizes: number[] = [];
  #fileIndex = 0;
  #fileFraction: () => number = () => 0;

  constructor(jobId: string, maxBadRows: number, counters?: JobCounters) {
    this.jobId = jobId;
    this.#maxBadRows = maxBadRows;
    this.#counters = counters
      ? structuredClone(counters)
      : { rowsRead: 0, rowsPublished: 0, badRowCount: 0, badRows: [] };
  }

  /** Back to the counters of a checkpoint (a run that starts over, or resumes). */
  reset(counters?: JobCounters): void {
    this.#counters = counters
      ? structuredClone(counters)
      : { rowsRead: 0, rowsPublished: 0, badRowCount: 0, badRows: [] };
  }

  setFiles(sizes: readonly number[]): void {
    this.#sizes = [...sizes];
  }

  /** The file now being read, and how to tell the share of it read so far. */
  atFile(index: number, fraction: () => number, message: string): void {
    this.#fileIndex = index;
    this.#fileFraction = fraction;
    this.#message = message;
  }

  read(): void {
    this.#counters.rowsRead++;
  }

  published(): void {
    this.#counters.rowsPublished++;
  }

  bad(row: BadRow): void {
    this.#counters.badRowCount++;
    if (this.#counters.badRows.length < this.#maxBadRows) this.#counters.badRows.push(row);
  }

  note(message: string): void {
    this.#message = message;
  }

  finish(state: Exclude<JobState, 'RUNNING'>, message: string): void {
    this.#state = state;
    this.#message = message;
  }

  get counters(): JobCounters {
    return structuredClone(this.#counters);
  }

  get state(): JobState {
    return this.#state;
  }

  status(): JobStatus {
    const { rowsRead, rowsPublished, badRowCount, badRows } = this.#counters;
    return {
      jobId: this.jobId,
      state: this.#state,
      progress: this.#progress(),
      rowsRead,
      rowsPublished,
      badRowCount,
      badRows: badRows.map((row) => ({ ...row })),
      message: this.#message,
    };
  }

  #progress(): number {
    if (this.#state === 'SUCCEEDED') return 1;
    const total = this.#sizes.reduce((sum, size) => sum + size, 0);
    if (total === 0) return 0;
    let done = 0;
    for (let i = 0; i < this.#fileIndex && i < this.#sizes.length; i++) done += this.#sizes[i]!;
    done += (this.#sizes[this.#fileIndex] ?? 0) * Math.min(1, Math.max(0, this.#fileFraction()));
    // 1 is kept for a job whose EOF markers are out.
    return Math.min(0.99, done / total);
  }
}
