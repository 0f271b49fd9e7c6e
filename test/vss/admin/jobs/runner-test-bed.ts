/**
 * What the built-in job runner's tests share: a memory queue, temporary directories and runners
 * that are cleaned up after the file, topics of the test partition count, and checks of what a job
 * published.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before } from 'node:test';
import { createQueue, type Queue } from '../../../../src/platform/queue/index.js';
import {
  FileJobRunner,
  type FileJobRunnerOptions,
  type IngestionJob,
  type JobStatus,
} from '../../../../src/vss/admin/jobs/index.js';
import { uniqueName } from '../../../support/servers.js';
import { type Published, tempDir } from './training-data.js';

/** Partitions of the test topics (and of the jobs' EOF markers). */
export const PARTITIONS = 3;

export class RunnerTestBed {
  queue!: Queue;
  readonly #dirs: string[] = [];
  readonly #runners: FileJobRunner[] = [];

  /** Registers the file's before and after hooks. */
  constructor() {
    before(async () => {
      this.queue = await createQueue({ kind: 'memory' });
    });
    after(async () => {
      for (const runner of this.#runners) await runner.close();
      await this.queue.close();
      for (const path of this.#dirs) rmSync(path, { recursive: true, force: true });
    });
  }

  dir = (): string => {
    const path = tempDir();
    this.#dirs.push(path);
    return path;
  };

  /** A runner on `queue` (default the bed's), 50 rows a batch unless told otherwise. */
  runnerOn = (queue: Queue = this.queue, options: Partial<FileJobRunnerOptions> = {}): FileJobRunner => {
    const runner = new FileJobRunner({ queue, batchRows: 50, ...options });
    this.#runners.push(runner);
    return runner;
  };

  topic = async (partitions = PARTITIONS): Promise<string> => {
    const name = uniqueName('jobs');
    await this.queue.ensureTopic(name, { partitions });
    return name;
  };

  /** Starts the job and waits for its run to end. */
  run = async (runner: FileJobRunner, job: IngestionJob): Promise<JobStatus> => {
    await runner.start(job);
    return runner.finished(job.jobId);
  };
}

/** A vector of an event as the consumers store it (float32). */
export const stored = (values: unknown): number[] => [...Float32Array.from(values as number[])];
export const events = (messages: Published[]): Published[] => messages.filter((m) => m.body.eof !== true);
export const markers = (messages: Published[]): Published[] => messages.filter((m) => m.body.eof === true);

/** Each partition's messages end with exactly one EOF marker of the job, naming that partition. */
export function assertEofLast(messages: Published[], jobId: string): void {
  for (let p = 0; p < PARTITIONS; p++) {
    const own = messages.filter((m) => m.partition === p);
    assert.deepEqual(own.at(-1)?.body, {
      eof: true,
      entity: 'catalog',
      model_name: 'm',
      version: 1,
      job_id: jobId,
      partition: p,
    });
    assert.equal(own.filter((m) => m.body.eof === true).length, 1, `one marker on partition ${p}`);
  }
}
