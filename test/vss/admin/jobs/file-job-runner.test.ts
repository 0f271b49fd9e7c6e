/**
 * The built-in job runner against the memory queue: what it publishes for Parquet directories and
 * JSON Lines files (events matching the rows, EOF markers last on every partition), progress and
 * counts, bad rows, idempotent start, resuming from a checkpoint, cancel, and the failures that
 * stop a job.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Field, Float32, List } from 'apache-arrow';
import { isLatticeError, unavailable } from '../../../../src/platform/errors.js';
import { createQueue, partitionForKey, type Queue } from '../../../../src/platform/queue/index.js';
import {
  FileJobRunner,
  FileJobStateStore,
  type IngestionJob,
  type JobStatus,
  jobFingerprint,
} from '../../../../src/vss/admin/jobs/index.js';
import { eventually, uniqueName } from '../../../support/servers.js';
import {
  jobFor,
  join,
  jsonOf,
  type Published,
  RecordingQueue,
  readTopic,
  tempDir,
  trainingRows,
  vectorOf,
  writeJsonLinesFile,
  writeParquetFile,
} from './training-data.js';

const PARTITIONS = 3;
let queue: Queue;
const dirs: string[] = [];
const runners: FileJobRunner[] = [];

function dir(): string {
  const path = tempDir();
  dirs.push(path);
  return path;
}

function runnerOn(
  q: Queue,
  options: Partial<ConstructorParameters<typeof FileJobRunner>[0]> = {},
): FileJobRunner {
  const runner = new FileJobRunner({ queue: q, batchRows: 50, ...options });
  runners.push(runner);
  return runner;
}

async function topic(partitions = PARTITIONS): Promise<string> {
  const name = uniqueName('jobs');
  await queue.ensureTopic(name, { partitions });
  return name;
}

async function run(runner: FileJobRunner, job: IngestionJob): Promise<JobStatus> {
  await runner.start(job);
  return runner.finished(job.jobId);
}

/** A vector of an event as the consumers store it (float32). */
const stored = (values: unknown) => [...Float32Array.from(values as number[])];
const events = (messages: Published[]) => messages.filter((m) => m.body.eof !== true);
const markers = (messages: Published[]) => messages.filter((m) => m.body.eof === true);

/** Each partition's messages end with exactly one EOF marker of the job, naming that partition. */
function assertEofLast(messages: Published[], jobId: string): void {
  for (let p = 0; p < PARTITIONS; p++) {
    const own = messages.filter((m) => m.partition === p);
    const last = own.at(-1);
    assert.deepEqual(last?.body, {
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

before(async () => {
  queue = await createQueue({ kind: 'memory' });
});

after(async () => {
  for (const runner of runners) await runner.close();
  await queue.close();
  for (const path of dirs) rmSync(path, { recursive: true, force: true });
});

describe('built-in job runner: what it publishes', () => {
  test('a Parquet directory: one event per row, keyed by id, vectors exact, other columns as payload; then EOF on every partition', async () => {
    const root = dir();
    const rows = trainingRows(230);
    // Files in name order across a sub-directory; several row groups; markers and hidden files skipped.
    writeParquetFile(join(root, 'part-00000.parquet'), rows.slice(0, 100), { rowGroupSize: 30 });
    writeParquetFile(join(root, 'part-00001.parquet'), rows.slice(100, 200), { rowGroupSize: 64 });
    writeParquetFile(join(root, 'z', 'part-00002.snappy.parquet'), rows.slice(200));
    writeFileSync(join(root, '_SUCCESS'), '');
    writeFileSync(join(root, '.part-00000.parquet.crc'), 'crc');
    const name = await topic();
    const runner = runnerOn(queue);
    const status = await run(runner, jobFor(pathToFileURL(root).href, { topic: name }));

    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual(
      {
        progress: status.progress,
        read: status.rowsRead,
        published: status.rowsPublished,
        bad: status.badRowCount,
      },
      { progress: 1, read: 230, published: 230, bad: 0 },
    );
    assert.match(status.message, /published 230 events from 230 rows of 3 file\(s\)/);
    assert.equal((await queue.topicStats(name)).messages, 230 + PARTITIONS);

    const messages = await readTopic(queue, name, 230 + PARTITIONS);
    assertEofLast(messages, 'job-1');
    const byId = new Map(events(messages).map((m) => [m.body.candidate_id as string, m]));
    assert.equal(byId.size, 230);
    for (const row of rows) {
      const message = byId.get(row.id)!;
      assert.equal(message.key, row.id);
      assert.equal(message.partition, partitionForKey(row.id, PARTITIONS));
      const body = message.body as Record<string, Record<string, unknown> & unknown>;
      assert.equal(body.entity, 'catalog');
      assert.equal(body.model_name, 'm');
      assert.equal(body.version, 1);
      assert.equal(body.job_id, 'job-1');
      const space = body.index_space as Record<string, unknown>;
      assert.equal(space.operation, 'A');
      assert.deepEqual(stored(space.embedding), row.emb, `vector of ${row.id}`);
      assert.deepEqual(jsonOf(space.variants_version_map), { brand_a: 1, live: 1, organic: 1 });
      assert.deepEqual(jsonOf(space.variants_index_map), {
        brand_a: row.flag,
        live: row.flag,
        organic: row.flag,
      });
      assert.deepEqual(jsonOf(space.payload), { brand: row.brand, is_live: row.is_live, price: row.price });
      assert.equal(body.search_space, undefined);
    }
    // Within a partition, events come in file order.
    for (let p = 0; p < PARTITIONS; p++) {
      const ids = events(messages)
        .filter((m) => m.partition === p)
        .map((m) => Number((m.body.candidate_id as string).slice(1)));
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
      );
    }
  });

  test('JSON Lines, a single file by plain path: search embeddings, index flags in every accepted form, numeric ids', async () => {
    const root = dir();
    const path = join(root, 'embeddings.jsonl');
    writeJsonLinesFile(path, [
      { id: 'a', emb: vectorOf(1), search: vectorOf(11), flag: true, brand: 'a', tags: ['x', 'y'] },
      { id: 'b', emb: vectorOf(2), flag: { organic: false, live: true, unknown_variant: true } },
      { id: 'c', emb: vectorOf(3), flag: ['brand_a'] },
      { id: 'd', emb: JSON.stringify(vectorOf(4)), flag: 'false' },
      { id: 'e', emb: vectorOf(5), flag: null },
      { id: 42, emb: vectorOf(6), flag: 1, note: null },
      // JSON.stringify writes -0 as 0: the line as a producer that keeps it would write it.
      '{"id": "g", "emb": [0.5, -0, 1e-7, -3], "flag": "{\\"live\\": false}"}',
      { id: 'h', emb: [0.1, 1 / 3, 1e-30, 3.4e38] },
    ]);
    const name = await topic();
    const runner = runnerOn(queue);
    const job = jobFor(path, {
      topic: name,
      columns: {
        idColumn: 'id',
        embeddingColumn: 'emb',
        toBeIndexedColumn: 'flag',
        searchEmbeddingColumn: 'search',
      },
      indexDefaults: { organic: true, live: false, brand_a: true },
    });
    const status = await run(runner, job);
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.equal(status.rowsPublished, 8);
    const messages = await readTopic(queue, name, 8 + PARTITIONS);
    assertEofLast(messages, 'job-1');
    const byId = new Map(events(messages).map((m) => [m.body.candidate_id as string, m.body]));
    const space = (id: string) => byId.get(id)!.index_space as Record<string, unknown>;
    const flags = (id: string) => jsonOf(space(id).variants_index_map);

    assert.deepEqual(stored(space('a').embedding), vectorOf(1));
    assert.deepEqual(stored((byId.get('a')!.search_space as { embedding: unknown }).embedding), vectorOf(11));
    assert.deepEqual(jsonOf(space('a').payload), { brand: 'a', tags: ['x', 'y'] });
    assert.deepEqual(flags('a'), { brand_a: true, live: true, organic: true });
    assert.deepEqual(
      flags('b'),
      { brand_a: true, live: true, organic: false },
      'a map; defaults for the rest',
    );
    assert.deepEqual(flags('c'), { brand_a: true, live: false, organic: false }, 'a list of variants');
    assert.deepEqual(stored(space('d').embedding), vectorOf(4), 'a vector as JSON text');
    assert.deepEqual(flags('d'), { brand_a: false, live: false, organic: false });
    assert.deepEqual(flags('e'), { brand_a: true, live: false, organic: true }, 'null: the job defaults');
    assert.equal(space('e').payload, undefined, 'no attributes: no payload');
    assert.deepEqual(flags('42'), { brand_a: true, live: true, organic: true });
    assert.equal(byId.get('42')!.search_space, undefined);
    assert.ok(Object.is((space('g').embedding as number[])[1], -0), 'negative zero survives');
    assert.deepEqual(flags('g'), { brand_a: true, live: false, organic: true });
    // Doubles: the event stores exactly their float32 rounding.
    assert.deepEqual(stored(space('h').embedding), [...Float32Array.from([0.1, 1 / 3, 1e-30, 3.4e38])]);
  });

  test('bad rows are reported with file, row and reason, and skipped; the rest is published', async () => {
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [
      { id: 'ok1', emb: vectorOf(1) },
      { emb: vectorOf(2) },
      '',
      { id: 'short', emb: [1, 2, 3] },
      '{"id": "broken", "emb": [1, 2',
      { id: 'huge', emb: [1, 2, 3, 1e39] },
      '[1, 2]',
      { id: 'bad flag', emb: vectorOf(3), flag: 'maybe' },
      { id: 'EOF', emb: vectorOf(4) },
      { id: 'bad attr', emb: vectorOf(5), 'price usd': 3 },
      { id: 'nested', emb: vectorOf(6), meta: { a: 1 } },
      { id: 'ok2', emb: vectorOf(7) },
    ]);
    // Parquet: a null id, a null vector, a NaN inside a vector.
    const list = new List(new Field('item', new Float32(), true));
    writeParquetFile(
      join(root, 'b.parquet'),
      [
        { id: 'p1', emb: vectorOf(8) },
        { id: null, emb: vectorOf(9) },
        { id: 'p3', emb: null },
        { id: 'p4', emb: [1, Number.NaN, 2, 3] },
        { id: 'p5', emb: [1, null, 2, 3] },
        { id: 'p6', emb: vectorOf(10) },
      ],
      { types: { emb: list } },
    );
    const name = await topic();
    const runner = runnerOn(queue, { maxBadRows: 8 });
    const status = await run(runner, jobFor(root, { topic: name }));
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual(
      {
        read: status.rowsRead,
        published: status.rowsPublished,
        bad: status.badRowCount,
        listed: status.badRows.length,
      },
      { read: 17, published: 4, bad: 13, listed: 8 },
    );
    const reasons = status.badRows.map((b) => `${b.file}:${b.row} ${b.reason}`);
    assert.deepEqual(reasons.slice(0, 8), [
      'a.jsonl:2 id: missing id',
      "a.jsonl:4 emb: has 3 values, the model's vector_dimension is 4",
      `a.jsonl:5 ${status.badRows[2]!.reason}`,
      'a.jsonl:6 emb: value [3] (1e+39) is not a finite number within float32 range',
      'a.jsonl:7 line is not a JSON object',
      `a.jsonl:8 flag: must be a boolean (or 0/1, "true"/"false"), an object of variant → boolean, or a list of variant names`,
      'a.jsonl:9 id: id "EOF" is reserved for end-of-file markers',
      `a.jsonl:10 column "price usd" cannot be a payload attribute (names are 1-128 letters, digits, "_" or "-"); rename it in the data`,
    ]);
    assert.match(status.badRows[2]!.reason, /^line is not JSON: /);
    assert.match(status.message, /skipped 13 bad rows/);

    // The rows past the list's cap are counted; the rest of them, listed with a larger cap:
    const wide = runnerOn(queue, { maxBadRows: 100 });
    const again = await run(wide, jobFor(root, { topic: name, jobId: 'job-wide' }));
    assert.deepEqual(
      again.badRows.slice(8).map((b) => `${b.file}:${b.row} ${b.reason}`),
      [
        'a.jsonl:11 meta: an object cannot be an attribute (flatten it into columns)',
        'b.parquet:2 id: missing id',
        'b.parquet:3 emb: missing embedding',
        'b.parquet:4 emb: value [1] (NaN) is not a finite number within float32 range',
        'b.parquet:5 emb: value [1] (NaN) is not a finite number within float32 range',
      ],
    );
    const messages = await readTopic(queue, name, 2 * (4 + PARTITIONS));
    assert.deepEqual(
      events(messages)
        .filter((m) => m.body.job_id === 'job-1')
        .map((m) => m.body.candidate_id)
        .sort(),
      ['ok1', 'ok2', 'p1', 'p6'],
    );
  });
});

describe('built-in job runner: one run per job, progress, resume', () => {
  test('start is idempotent by job id: concurrent and repeated starts run the job once; other parameters conflict', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(120), { rowGroupSize: 40 });
    const name = await topic();
    const counting = new RecordingQueue(queue);
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
    assert.equal((await queue.topicStats(name)).messages, 120 + PARTITIONS);
  });

  test('progress rises from 0 to 1 while rows are published, counting rows read and published', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(200), { rowGroupSize: 50 });
    writeJsonLinesFile(join(root, 'b.jsonl'), trainingRows(100, { from: 200 }));
    const name = await topic();
    const observed: JobStatus[] = [];
    const watching = new RecordingQueue(queue);
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
    const breaking = new RecordingQueue(queue);
    breaking.failAfter = 125;
    const options = { batchRows: 10, concurrency: 1, checkpointEveryMs: 0 };
    const first = runnerOn(breaking, { ...options, stateStore: new FileJobStateStore(stateDir) });
    const job = jobFor(root, { topic: name });
    const failed = await run(first, job);
    assert.equal(failed.state, 'FAILED');
    assert.match(failed.message, /the queue broke \(test\)/);
    assert.match(failed.message, /start it again to resume after b\.jsonl row 20 \(file 2 of 2\)/);

    // Another runner (a restarted process) over the same records.
    const counting = new RecordingQueue(queue);
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
    assert.equal((await queue.topicStats(name)).messages, 160 + PARTITIONS);
    const messages = await readTopic(queue, name, 160 + PARTITIONS);
    assertEofLast(messages, 'job-1');
    assert.equal(new Set(events(messages).map((m) => m.body.candidate_id)).size, 160);
  });

  test('after a crash: the job shows as interrupted, and a start resumes it; a job another runner holds is left alone', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(90), { rowGroupSize: 30 });
    const name = await topic();
    const stateDir = dir();
    const store = new FileJobStateStore(stateDir);
    const breaking = new RecordingQueue(queue);
    breaking.failAfter = 45;
    const job = jobFor(root, { topic: name, jobId: 'crashing' });
    const options = { batchRows: 15, concurrency: 1, checkpointEveryMs: 0 };
    await run(runnerOn(breaking, { ...options, stateStore: store }), job);
    // What a process that died while running the job leaves behind: its RUNNING record.
    const record = (await store.load('crashing'))!;
    assert.equal(record.checkpoint?.rowsDone, 45);
    await store.save({
      ...record,
      status: { ...record.status, state: 'RUNNING' },
      owner: 'crashed',
      heartbeatAt: 0,
    });

    const counting = new RecordingQueue(queue);
    const runner = runnerOn(counting, { ...options, stateStore: new FileJobStateStore(stateDir) });
    const shown = await runner.status('crashing');
    assert.equal(shown.state, 'FAILED');
    assert.match(shown.message, /^interrupted after a\.parquet row 45 .*start the job again to resume/);
    assert.equal(shown.rowsPublished, 45);
    await runner.start(job);
    const done = await runner.finished('crashing');
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.rowsPublished, 90);
    assert.equal(counting.publishes, 45 + PARTITIONS);

    // A RUNNING record another live runner keeps fresh: neither run here nor cancelled from here.
    const heldJob = { ...job, jobId: 'held' };
    await store.save({
      ...record,
      jobId: 'held',
      fingerprint: jobFingerprint(heldJob),
      status: { ...record.status, jobId: 'held', state: 'RUNNING' },
      owner: 'alive',
      heartbeatAt: Date.now(),
    });
    const other = runnerOn(counting, { ...options, stateStore: store, leaseMs: 3_600_000 });
    const before = counting.publishes;
    const status = await other.start(heldJob);
    assert.equal(status.state, 'RUNNING');
    assert.equal(counting.publishes, before);
    await assert.rejects(other.cancel('held'), (err) => isLatticeError(err, 'FAILED_PRECONDITION'));
    await assert.rejects(other.finished('held'), (err) => isLatticeError(err, 'NOT_FOUND'));
  });

  test('cancel stops a job without EOF markers; starting it again finishes it', async () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(100), { rowGroupSize: 20 });
    const name = await topic();
    const holding = new RecordingQueue(queue);
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
    const stored = (await queue.topicStats(name)).messages;
    assert.ok(stored < 100, `${stored} events`);
    assert.equal(markers(await readTopic(queue, name, stored)).length, 0, 'no EOF marker');

    holding.onPublish = undefined;
    const resumed = await run(runner, job);
    assert.equal(resumed.state, 'SUCCEEDED');
    assert.equal(resumed.rowsPublished, 100);
    // The reader acknowledged the first `stored`; the rest arrived once each (re-sent rows de-duplicated).
    const rest = await readTopic(queue, name, 100 + PARTITIONS - stored);
    assert.equal(rest.length, 100 + PARTITIONS - stored);
    assert.equal((await queue.topicStats(name)).messages, 100 + PARTITIONS - stored, 'nothing stored twice');
    assert.equal(markers(rest).length, PARTITIONS);
  });
  test('an event larger than the topic accepts is a bad row; transient publish failures are retried', async () => {
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [
      { id: 'small', emb: vectorOf(1) },
      { id: 'large', emb: vectorOf(2), text: 'x'.repeat(2000) },
      ...trainingRows(30, { from: 10 }),
    ]);
    const name = uniqueName('jobs');
    await queue.ensureTopic(name, { partitions: PARTITIONS, maxMessageBytes: 1024 });
    const flaky = new RecordingQueue(queue);
    // Every 7th publish call fails once as UNAVAILABLE.
    flaky.onPublish = () => {
      if (flaky.publishes % 7 === 0) throw unavailable('queue briefly away (test)');
    };
    const runner = runnerOn(flaky, { publishRetry: { attempts: 3, baseMs: 1, maxMs: 2 } });
    const status = await run(runner, jobFor(root, { topic: name }));
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual({ published: status.rowsPublished, bad: status.badRowCount }, { published: 31, bad: 1 });
    assert.equal(status.badRows[0]!.row, 2);
    assert.match(status.badRows[0]!.reason, /exceeds the 1024-byte limit of queue topic/);
    assert.ok(flaky.publishes > 31 + PARTITIONS + 1, 'some publishes were retried');
    assert.equal((await queue.topicStats(name)).messages, 31 + PARTITIONS);

    // A queue that stays away fails the job, resumable.
    flaky.onPublish = () => {
      throw unavailable('queue down (test)');
    };
    const down = await run(runner, jobFor(root, { topic: name, jobId: 'down' }));
    assert.equal(down.state, 'FAILED');
    assert.match(down.message, /failed after 3 attempts: queue down \(test\); start it again to retry$/);
  });
});

describe('built-in job runner: what fails a job', () => {
  const failure = async (job: IngestionJob, runner = runnerOn(queue)) => {
    const status = await run(runner, job);
    assert.equal(status.state, 'FAILED');
    return status.message;
  };

  test('a missing path, a file that is not Parquet, an empty directory, an unknown format', async () => {
    const name = await topic();
    const root = dir();
    assert.match(
      await failure(jobFor(join(root, 'nowhere'), { topic: name })),
      /^training_data_path .*nowhere does not exist$/,
    );
    writeFileSync(join(root, 'broken.parquet'), 'PAR1 but not really');
    assert.match(
      await failure(jobFor(join(root, 'broken.parquet'), { topic: name, jobId: 'j2' })),
      /^broken\.parquet is not a readable Parquet file: /,
    );
    const empty = join(root, 'empty');
    mkdirSync(empty);
    writeFileSync(join(empty, '_SUCCESS'), '');
    assert.match(await failure(jobFor(empty, { topic: name, jobId: 'j3' })), /holds no data files/);
    writeFileSync(join(root, 'notes'), 'hello');
    assert.match(
      await failure(jobFor(join(root, 'notes'), { topic: name, jobId: 'j4' })),
      /^notes is neither Parquet nor JSON Lines/,
    );
    mkdirSync(join(root, 'dir.jsonl'));
    assert.match(
      await failure(jobFor(`${pathToFileURL(root).href}/dir.jsonl/`, { topic: name, jobId: 'j5' })),
      /holds no data files/,
    );
    assert.equal((await queue.topicStats(name)).messages, 0);
  });

  test('a Parquet file without the id or embedding column, or with an attribute the payload cannot hold', async () => {
    const name = await topic();
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(3), { columns: ['id', 'flag', 'brand'] });
    assert.equal(
      await failure(jobFor(join(root, 'a.parquet'), { topic: name })),
      'a.parquet has no column "emb" (ingestion_column_mapping.embedding_column); its columns: "id", "flag", "brand"',
    );
    writeParquetFile(
      join(root, 'b.parquet'),
      trainingRows(3).map((row) => ({ ...row, to_be_indexed_live: 'x' })),
      { columns: ['id', 'emb', 'to_be_indexed_live'] },
    );
    assert.match(
      await failure(jobFor(join(root, 'b.parquet'), { topic: name, jobId: 'j2' })),
      /^b\.parquet column "to_be_indexed_live" cannot be a payload attribute/,
    );
  });

  test('every row bad: the job fails before its EOF markers', async () => {
    const name = await topic();
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [
      { ident: 'x', emb: vectorOf(1) },
      { ident: 'y', emb: vectorOf(2) },
    ]);
    const status = await run(runnerOn(queue), jobFor(root, { topic: name }));
    assert.equal(status.state, 'FAILED');
    assert.match(
      status.message,
      /^every one of the 2 rows was bad \(first: a\.jsonl row 1: id: missing id\); no EOF markers were sent/,
    );
    assert.equal(status.badRowCount, 2);
    assert.equal((await queue.topicStats(name)).messages, 0);
  });

  test('a topic that is missing or has another partition count', async () => {
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [{ id: 'x', emb: vectorOf(1) }]);
    assert.match(await failure(jobFor(root, { topic: uniqueName('missing') })), /does not exist/);
    const two = await topic(2);
    assert.match(
      await failure(jobFor(root, { topic: two, jobId: 'j2' })),
      /has 2 partitions but the job says 3/,
    );
  });

  test('an invalid job is refused at start, naming the field', async () => {
    const runner = runnerOn(queue);
    const invalid: [Partial<IngestionJob>, RegExp][] = [
      [{ jobId: '' }, /jobId/],
      [{ entity: 'no spaces' }, /entity/],
      [{ variantVersions: { 'Bad-Name': 1 } }, /variantVersions/],
      [{ variantVersions: {} }, /variantVersions must name at least one variant/],
      [{ vectorDimension: 0 }, /vectorDimension/],
      [
        { indexDefaults: { other: true } },
        /indexDefaults\.other names a variant that variantVersions does not/,
      ],
      [
        { columns: { idColumn: 'x', embeddingColumn: 'x', toBeIndexedColumn: 'f' } },
        /columns must name a different column/,
      ],
      [{ trainingDataPath: 's3://bucket/path' }, /./],
    ];
    for (const [override, field] of invalid.slice(0, -1)) {
      await assert.rejects(runner.start(jobFor('/tmp', override)), (err) => {
        assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
        assert.match(err.message, field);
        return true;
      });
    }
    const name = await topic();
    assert.match(
      await failure(jobFor('s3://bucket/path', { topic: name, jobId: 's3' })),
      /reads local files \(a path or a file:\/\/ URL\), not s3:\/\/; use the HTTP job runner/,
    );
  });
});
