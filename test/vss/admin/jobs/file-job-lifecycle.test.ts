/**
 * The built-in job runner's lifecycle: start idempotent by job id, progress, resuming from a
 * checkpoint after a failure or a crash, jobs another runner holds, cancel.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLatticeError } from '../../../../src/platform/errors.js';
import {
  FileJobStateStore,
  type JobRecord,
  type JobStatus,
  jobFingerprint,
} from '../../../../src/vss/admin/jobs/index.js';
import { eventually } from '../../../support/servers.js';
import { assertEofLast, events, markers, PARTITIONS, RunnerTestBed } from './runner-test-bed.js';
import {
  jobFor,
  join,
  RecordingQueue,
  readTopic,
  trainingRows,
  writeJsonLinesFile,
  writeParquetFile,
} from './training-data.js';

const bed = new RunnerTestBed();
const { dir, runnerOn, topic, run } = bed;

/** Writes what a process that died while running the job leaves behind: its RUNNING record, lease long lapsed. */
async function leaveRunning(
  store: FileJobStateStore,
  record: Omit<JobRecord, 'job'> & { job?: JobRecord['job'] },
) {
  assert.ok(
    await store.claim(
      { ...record, status: { ...record.status, state: 'RUNNING' }, owner: 'crashed', heartbeatAt: 0 },
      0,
    ),
  );
}

describe('built-in job runner: one run per job, progress, resume', () => {
  test('start is idempotent by job id: concurrent and repeated starts run the job once; other parameters conflict', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(120), { rowGroupSize: 40 });
    const name = await topic();
    const counting = new RecordingQueue(bed.queue);
    const runner = runnerOn(counting);
    const job = jobFor(root, { topic: name });
    const [first, second] = await Promise.all([runner.start(job), runner.start({ ...job })]);
    assert.equal(first.state, 'RUNNING');
    assert.equal(second.state, 'RUNNING');
    const done = await runner.finished(job.jobId);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(counting.publishes, 120 + PARTITIONS);

    const again = await runner.start(job);
    assert.deepEqual(again, done, 'a succeeded job is not run again');
    assert.equal(counting.publishes, 120 + PARTITIONS);
    assert.deepEqual(await runner.status(job.jobId), done);
    assert.deepEqual(await runner.cancel(job.jobId), done, 'cancelling a finished job changes nothing');

    await assert.rejects(runner.start({ ...job, version: 2, variantVersions: { organic: 2 } }), (err) =>
      isLatticeError(err, 'ALREADY_EXISTS'),
    );
    await assert.rejects(runner.status('never-started'), (err) => isLatticeError(err, 'NOT_FOUND'));
    await assert.rejects(runner.cancel('never-started'), (err) => isLatticeError(err, 'NOT_FOUND'));
    assert.equal((await bed.queue.topicStats(name)).messages, 120 + PARTITIONS);
  });

  test('progress rises from 0 to 1 while rows are published, counting rows read and published', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(200), { rowGroupSize: 50 });
    writeJsonLinesFile(join(root, 'b.jsonl'), trainingRows(100, { from: 200 }));
    const name = await topic();
    const observed: JobStatus[] = [];
    const watching = new RecordingQueue(bed.queue);
    const runner = runnerOn(watching, { batchRows: 25, concurrency: 4 });
    watching.onPublish = async () => {
      observed.push(await runner.status('job-1'));
    };
    const status = await run(runner, jobFor(root, { topic: name }));
    assert.equal(status.state, 'SUCCEEDED');
    assert.equal(status.progress, 1);
    const progress = observed.map((s) => s.progress);
    assert.ok(progress.length >= 300, `${progress.length} observations`);
    for (let i = 1; i < progress.length; i++)
      assert.ok(progress[i]! >= progress[i - 1]!, `progress never falls (${i})`);
    assert.ok(
      progress.every((p) => p < 1),
      'below 1 until the job succeeded',
    );
    assert.ok(
      progress.some((p) => p > 0.3 && p < 0.9),
      'in between while reading',
    );
    const published = observed.map((s) => s.rowsPublished);
    for (let i = 1; i < published.length; i++) assert.ok(published[i]! >= published[i - 1]!);
    assert.ok(observed.every((s) => s.rowsRead >= s.rowsPublished && s.state === 'RUNNING'));
  });

  test('a failed job started again resumes from its checkpoint: rows before it are not published again', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(100), { rowGroupSize: 30 });
    writeJsonLinesFile(join(root, 'b.jsonl'), [...trainingRows(60, { from: 100 }), { id: 'bad', emb: [1] }]);
    const name = await topic();
    const stateDir = dir();
    const breaking = new RecordingQueue(bed.queue);
    breaking.failAfter = 125;
    const options = { batchRows: 10, concurrency: 1, checkpointEveryMs: 0 };
    const first = runnerOn(breaking, { ...options, stateStore: new FileJobStateStore(stateDir) });
    const job = jobFor(root, { topic: name });
    const failed = await run(first, job);
    assert.equal(failed.state, 'FAILED');
    assert.match(failed.message, /the queue broke \(test\)/);
    assert.match(failed.message, /start it again to resume after b\.jsonl row 20 \(file 2 of 2\)/);

    // Another runner (a restarted process) over the same records.
    const counting = new RecordingQueue(bed.queue);
    const second = runnerOn(counting, { ...options, stateStore: new FileJobStateStore(stateDir) });
    assert.equal((await second.status(job.jobId)).state, 'FAILED');
    const resumed = await second.start(job);
    assert.equal(resumed.state, 'RUNNING');
    assert.match(resumed.message, /resuming after b\.jsonl row 20/);
    const done = await second.finished(job.jobId);
    assert.equal(done.state, 'SUCCEEDED', done.message);
    assert.deepEqual(
      { read: done.rowsRead, published: done.rowsPublished, bad: done.badRowCount },
      { read: 161, published: 160, bad: 1 },
    );
    assert.deepEqual(done.badRows, [
      { file: 'b.jsonl', row: 61, reason: "emb: has 1 values, the model's vector_dimension is 4" },
    ]);
    // Lines 21-61 of b.jsonl (40 events) and the markers; nothing of a.parquet.
    assert.equal(counting.publishes, 40 + PARTITIONS);
    // The rows the broken run published after its checkpoint went out again under their ids: stored once.
    assert.equal((await bed.queue.topicStats(name)).messages, 160 + PARTITIONS);
    const messages = await readTopic(bed.queue, name, 160 + PARTITIONS);
    assertEofLast(messages, 'job-1');
    assert.equal(new Set(events(messages).map((m) => m.body.candidate_id)).size, 160);
  });

  test('after a crash: once its lease lapsed the job is taken over by the next status or start and resumes from its checkpoint; a job another runner holds is left alone', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(90), { rowGroupSize: 30 });
    const name = await topic();
    const stateDir = dir();
    const store = new FileJobStateStore(stateDir);
    const breaking = new RecordingQueue(bed.queue);
    breaking.failAfter = 45;
    const job = jobFor(root, { topic: name, jobId: 'crashing' });
    const options = { batchRows: 15, concurrency: 1, checkpointEveryMs: 0 };
    await run(runnerOn(breaking, { ...options, stateStore: store }), job);
    // What a process that died while running the job leaves behind: its RUNNING record.
    const record = (await store.load('crashing'))!;
    assert.equal(record.checkpoint?.rowsDone, 45);
    await leaveRunning(store, record);

    // A record written before records held their job: shown as interrupted, resumed by a start.
    const { job: _job, ...older } = record;
    await leaveRunning(store, older);
    const counting = new RecordingQueue(bed.queue);
    const runner = runnerOn(counting, { ...options, stateStore: new FileJobStateStore(stateDir) });
    const shown = await runner.status('crashing');
    assert.equal(shown.state, 'FAILED');
    assert.match(shown.message, /^interrupted after a\.parquet row 45 .*start the job again to resume/);
    assert.equal(shown.rowsPublished, 45);

    // Whoever polls the status of an interrupted job sees it taken over and finished, not failed.
    await leaveRunning(store, record);
    const resumed = await runner.status('crashing');
    assert.equal(resumed.state, 'RUNNING');
    assert.match(resumed.message, /resuming after a\.parquet row 45/);
    const done = await runner.finished('crashing');
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.rowsPublished, 90);
    assert.equal(counting.publishes, 45 + PARTITIONS);
    assert.deepEqual(await runner.status('crashing'), done);

    // A RUNNING record another live runner keeps fresh: neither run here nor cancelled from here.
    const heldJob = { ...job, jobId: 'held' };
    assert.ok(
      await store.claim(
        {
          ...record,
          jobId: 'held',
          fingerprint: jobFingerprint(heldJob),
          status: { ...record.status, jobId: 'held', state: 'RUNNING' },
          owner: 'alive',
          heartbeatAt: Date.now(),
        },
        0,
      ),
    );
    const other = runnerOn(counting, { ...options, stateStore: store, leaseMs: 3_600_000 });
    const before = counting.publishes;
    const status = await other.start(heldJob);
    assert.equal(status.state, 'RUNNING');
    assert.match(
      status.message,
      /in job runner alive; taken over if it does not renew its lease within \d+ s/,
    );
    assert.equal((await other.status('held')).state, 'RUNNING');
    assert.equal(counting.publishes, before);
    await assert.rejects(other.cancel('held'), (err) => isLatticeError(err, 'FAILED_PRECONDITION'));
    await assert.rejects(other.finished('held'), (err) => isLatticeError(err, 'NOT_FOUND'));
  });

  test('a lease that lapses while a runner waits on the job: the waiting runner takes the job over and finishes it', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(60), { rowGroupSize: 30 });
    const name = await topic();
    const stateDir = dir();
    const store = new FileJobStateStore(stateDir);
    const job = jobFor(root, { topic: name, jobId: 'lapsing' });
    // The record a runner in a process that just died left: RUNNING, its lease fresh.
    assert.ok(
      await store.claim(
        {
          jobId: 'lapsing',
          fingerprint: jobFingerprint(job),
          status: {
            jobId: 'lapsing',
            state: 'RUNNING',
            progress: 0,
            rowsRead: 0,
            rowsPublished: 0,
            badRowCount: 0,
            badRows: [],
            message: 'starting',
          },
          checkpoint: null,
          owner: 'killed',
          heartbeatAt: Date.now(),
          job,
        },
        0,
      ),
    );
    const runner = runnerOn(bed.queue, { batchRows: 15, stateStore: store, leaseMs: 1500 });
    assert.equal((await runner.start(job)).state, 'RUNNING');
    await assert.rejects(
      runner.finished('lapsing'),
      (err) => isLatticeError(err, 'NOT_FOUND'),
      'not run here yet',
    );
    // Polled as the ingesting step polls it: RUNNING while the lease holds, then taken over here.
    let status = await runner.status('lapsing');
    await eventually(
      async () => {
        status = await runner.status('lapsing');
        assert.notEqual(status.state, 'FAILED', status.message);
        return status.state === 'SUCCEEDED';
      },
      60_000,
      'the job taken over and finished',
    );
    assert.equal(status.rowsPublished, 60);
    assert.equal((await bed.queue.topicStats(name)).messages, 60 + PARTITIONS);
  });

  test('an exclusive store (a locked directory): a predecessor’s RUNNING record is taken over at once, however fresh its lease', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(90), { rowGroupSize: 30 });
    const name = await topic();
    const stateDir = dir();
    const breaking = new RecordingQueue(bed.queue);
    breaking.failAfter = 45;
    const job = jobFor(root, { topic: name, jobId: 'killed' });
    const options = { batchRows: 15, concurrency: 1, checkpointEveryMs: 0 };
    const first = new FileJobStateStore(stateDir, { exclusive: true });
    await run(runnerOn(breaking, { ...options, stateStore: first }), job);
    const record = (await first.load('killed'))!;
    // A killed process wrote its record a moment ago; its lock died with it.
    assert.ok(
      await first.claim(
        {
          ...record,
          status: { ...record.status, state: 'RUNNING' },
          owner: 'killed',
          heartbeatAt: Date.now(),
        },
        0,
      ),
    );
    first.close();

    const store = new FileJobStateStore(stateDir, { exclusive: true });
    assert.throws(
      () => new FileJobStateStore(stateDir, { exclusive: true }),
      /job state directory .* is in use by process/,
    );
    const counting = new RecordingQueue(bed.queue);
    const runner = runnerOn(counting, { ...options, stateStore: store, leaseMs: 3_600_000 });
    const resumed = await runner.start(job);
    assert.match(resumed.message, /resuming after a\.parquet row 45/);
    const done = await runner.finished('killed');
    assert.equal(done.state, 'SUCCEEDED', done.message);
    assert.equal(done.rowsPublished, 90);
    assert.equal(
      counting.publishes,
      45 + PARTITIONS,
      'rows 46-90 and the markers, nothing before the checkpoint',
    );
    await runner.close();
    new FileJobStateStore(stateDir, { exclusive: true }).close();
  });

  test('cancel stops a job without EOF markers; starting it again finishes it', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(100), { rowGroupSize: 20 });
    const name = await topic();
    const holding = new RecordingQueue(bed.queue);
    const runner = runnerOn(holding, { batchRows: 10, concurrency: 2, checkpointEveryMs: 0 });
    const job = jobFor(root, { topic: name, jobId: 'to-cancel' });
    holding.onPublish = () => {
      if (holding.publishes === 25) holding.hold();
    };
    await runner.start(job);
    await eventually(() => holding.heldCount === 2, 5000, 'publishes held');
    const cancelling = runner.cancel('to-cancel');
    holding.release();
    const cancelled = await cancelling;
    assert.equal(cancelled.state, 'FAILED');
    assert.match(cancelled.message, /^cancelled; start it again to resume after a\.parquet row \d+/);
    assert.ok(cancelled.progress < 1);
    const stored = (await bed.queue.topicStats(name)).messages;
    assert.ok(stored < 100, `${stored} events`);
    assert.equal(markers(await readTopic(bed.queue, name, stored)).length, 0, 'no EOF marker');

    holding.onPublish = undefined;
    const resumed = await run(runner, job);
    assert.equal(resumed.state, 'SUCCEEDED');
    assert.equal(resumed.rowsPublished, 100);
    // The reader acknowledged the first `stored`; the rest arrived once each (re-sent rows de-duplicated).
    const rest = await readTopic(bed.queue, name, 100 + PARTITIONS - stored);
    assert.equal(rest.length, 100 + PARTITIONS - stored);
    assert.equal(
      (await bed.queue.topicStats(name)).messages,
      100 + PARTITIONS - stored,
      'nothing stored twice',
    );
    assert.equal(markers(rest).length, PARTITIONS);
  });
});
