/**
 * Admin replicas on PostgreSQL, each with its own data directory, sharing the job records through
 * the database (the store `lattice vss` picks: jobStateStoreOf) and the queue: a replica that dies
 * mid-job has its job waited for, then taken over and resumed by another; a replica that was
 * taken over stops; a replica that cannot renew its lease stops by itself.
 *
 * A replica "dies" by freezing: its record writes never complete and its publishes never land, as
 * for a process that stopped (SIGKILL, a lost host). Thawing it afterwards shows what such a
 * process would do if it came back.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { LatticeError } from '../../../../src/platform/errors.js';
import { createLogger } from '../../../../src/platform/logging/index.js';
import { loadSettings } from '../../../../src/platform/settings/index.js';
import type { SqlClient } from '../../../../src/platform/sql/index.js';
import type {
  FileJobRunner,
  JobRecord,
  JobStateStore,
  JobStatus,
} from '../../../../src/vss/admin/jobs/index.js';
import { jobStateStoreOf } from '../../../../src/vss/index.js';
import { migrateVssStore } from '../../../../src/vss/store/index.js';
import { postgresSchema } from '../../../support/postgres-schema.js';
import { eventually, realServer } from '../../../support/servers.js';
import { assertEofLast, events, markers, PARTITIONS, RunnerTestBed } from './runner-test-bed.js';
import { jobFor, join, RecordingQueue, readTopic, trainingRows, writeParquetFile } from './training-data.js';

const url = await realServer('postgres');
const schema = postgresSchema(url, 'lattice_shared_jobs');
const bed = new RunnerTestBed();
const { dir, runnerOn, topic } = bed;

const ROWS = 90;
/** Rows a replica has published, and checkpointed, when it dies (three batches of 15). */
const CHECKPOINTED = 45;
/** The replicas' lease: generous beside a heartbeat every third of it, short enough to wait for. */
const LEASE_MS = 3000;
const options = { batchRows: 15, concurrency: 1, checkpointEveryMs: 0 };

/** A store whose calls can be made to fail, or to wait until thawed (a frozen process). */
class FreezableStore implements JobStateStore {
  #frozen: Promise<void> | undefined;
  #thaw: () => void = () => undefined;
  failing = false;

  constructor(readonly inner: JobStateStore) {}

  get exclusive(): boolean | undefined {
    return this.inner.exclusive;
  }

  freeze(): void {
    this.#frozen ??= new Promise((resolve) => {
      this.#thaw = resolve;
    });
  }

  thaw(): void {
    this.#frozen = undefined;
    this.#thaw();
  }

  load = (jobId: string) => this.#call(() => this.inner.load(jobId));
  claim = (record: JobRecord, leaseMs: number) => this.#call(() => this.inner.claim(record, leaseMs));
  save = (record: JobRecord) => this.#call(() => this.inner.save(record));

  async #call<T>(work: () => Promise<T>): Promise<T> {
    await this.#frozen;
    if (this.failing) throw new LatticeError('UNAVAILABLE', 'the database is unreachable (test)');
    return work();
  }
}

describe('job records shared by admin replicas on PostgreSQL', { skip: url === undefined }, () => {
  const clients: SqlClient[] = [];
  before(async () => {
    clients.push(await schema.open(2));
    await migrateVssStore(clients[0]!);
  });
  after(async () => {
    for (const client of clients) await client.close();
  });

  /** A replica's job state store: `lattice vss`'s choice for its settings, on a client of its own. */
  const replicaStore = async (): Promise<JobStateStore> => {
    const client = await schema.open(2);
    clients.push(client);
    const settings = loadSettings({
      env: { LATTICE_DATA_DIR: dir(), LATTICE_SQL: 'postgres', LATTICE_POSTGRES_URL: url ?? '' },
    });
    return jobStateStoreOf(settings, client);
  };

  /** Replica A, frozen while publishing the row after its checkpoint at row 45. */
  const dyingReplica = async (job: ReturnType<typeof jobFor>, leaseMs: number) => {
    const store = new FreezableStore(await replicaStore());
    const queue = new RecordingQueue(bed.queue);
    queue.onPublish = () => {
      if (queue.publishes === CHECKPOINTED + 1) {
        store.freeze();
        queue.hold();
      }
    };
    const runner = runnerOn(queue, { ...options, stateStore: store, leaseMs });
    assert.equal((await runner.start(job)).state, 'RUNNING');
    await eventually(() => queue.heldCount === 1, 30_000, 'replica A stopped mid-job');
    return { runner, store, queue };
  };

  /** Polls B's status as the ingesting step does until the job succeeds; every status on the way is RUNNING. */
  const waitForSuccess = async (runner: FileJobRunner, jobId: string): Promise<JobStatus[]> => {
    const seen: JobStatus[] = [];
    await eventually(
      async () => {
        const status = await runner.status(jobId);
        seen.push(status);
        assert.notEqual(status.state, 'FAILED', status.message);
        return status.state === 'SUCCEEDED';
      },
      60_000,
      'the job taken over and finished',
    );
    return seen;
  };

  const trainingData = () => {
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(ROWS), { rowGroupSize: 30 });
    return root;
  };

  test('a replica dies mid-job: another reports its RUNNING status while its lease holds, then takes the job over and resumes from its checkpoint; every row lands once', async () => {
    const name = await topic();
    const job = jobFor(trainingData(), { topic: name, jobId: 'reset-dead-replica' });
    const a = await dyingReplica(job, LEASE_MS);

    const counting = new RecordingQueue(bed.queue);
    const b = runnerOn(counting, { ...options, stateStore: await replicaStore(), leaseMs: LEASE_MS });
    const held = await b.start(job);
    assert.equal(held.state, 'RUNNING');
    assert.match(
      held.message,
      /\(in job runner [0-9a-f-]+; taken over if it does not renew its lease within \d+ s\)$/,
    );
    assert.equal(held.rowsPublished, CHECKPOINTED, "replica A's recorded progress");
    assert.equal((await b.status(job.jobId)).state, 'RUNNING');
    assert.equal(counting.publishes, 0, 'not run by B while A holds it');

    const seen = await waitForSuccess(b, job.jobId);
    assert.ok(
      seen.some((s) => /taken over if it does not renew its lease/.test(s.message)),
      'B waited on A before taking the job over',
    );
    const done = seen.at(-1)!;
    assert.equal(done.rowsPublished, ROWS);
    assert.equal(
      counting.publishes,
      ROWS - CHECKPOINTED + PARTITIONS,
      "B published rows 46-90 and the markers, nothing before A's checkpoint",
    );
    const messages = await readTopic(bed.queue, name, ROWS + PARTITIONS);
    assert.equal(messages.length, ROWS + PARTITIONS);
    assert.equal(new Set(messages.map((m) => m.messageId)).size, ROWS + PARTITIONS, 'each message id once');
    assert.equal(new Set(events(messages).map((m) => m.body.candidate_id)).size, ROWS);
    assertEofLast(messages, job.jobId);

    // Were A to come back, its lease long lapsed by its own clock: it stops, publishing and writing nothing more.
    a.store.thaw();
    a.queue.release();
    const stopped = await a.runner.finished(job.jobId);
    // By its lease timer, or (were the timer late) by its first write, refused.
    assert.match(stopped.message, /^stopped: (its lease lapsed|another job runner took the job over)/);
    assert.equal(a.queue.publishes, CHECKPOINTED + 1, 'nothing after the publish it was frozen in');
    assert.deepEqual(await a.runner.status(job.jobId), done, 'A reports the job as the record has it');
    assert.equal((await bed.queue.topicStats(name)).messages, 0, 'its last row was a duplicate');
  });

  test('a replica whose job was taken over stops at its next write, sends no EOF markers and never overwrites the record', async () => {
    const name = await topic();
    const job = jobFor(trainingData(), { topic: name, jobId: 'reset-stalled-replica' });
    // A's own clock never tells it to stop (an hour's lease): only the refused write can.
    const a = await dyingReplica(job, 3_600_000);
    const counting = new RecordingQueue(bed.queue);
    const b = runnerOn(counting, { ...options, stateStore: await replicaStore(), leaseMs: LEASE_MS });
    const done = (await waitForSuccess(b, job.jobId)).at(-1)!;
    assert.equal(done.rowsPublished, ROWS);
    assert.equal(counting.publishes, ROWS - CHECKPOINTED + PARTITIONS);

    // A comes back (a stalled process resumes) and goes on until its next write, the checkpoint
    // after its batch: refused, so it stops there, its re-sent rows duplicates.
    a.store.thaw();
    a.queue.release();
    const stopped = await a.runner.finished(job.jobId);
    assert.equal(stopped.state, 'FAILED');
    assert.equal(stopped.message, 'stopped: another job runner took the job over');
    assert.equal(a.queue.publishes, CHECKPOINTED + options.batchRows, 'the rest of its batch, then nothing');
    assert.equal((await bed.queue.topicStats(name)).messages, ROWS + PARTITIONS, 'nothing stored twice');
    const record = await a.store.load(job.jobId);
    assert.equal(record?.status.state, 'SUCCEEDED');
    assert.deepEqual(record?.status, done);
    assert.deepEqual(await a.runner.status(job.jobId), done);
    const messages = await readTopic(bed.queue, name, ROWS + PARTITIONS);
    assert.equal(messages.length, ROWS + PARTITIONS);
    assert.equal(markers(messages).length, PARTITIONS, 'one EOF marker per partition: B’s');
  });

  test('a replica that cannot renew its lease stops by itself before another may claim the job, and resumes it once it can', async () => {
    const name = await topic();
    const job = jobFor(trainingData(), { topic: name, jobId: 'reset-cut-off-replica' });
    const store = new FreezableStore(await replicaStore());
    const queue = new RecordingQueue(bed.queue);
    queue.onPublish = () => {
      if (queue.publishes === CHECKPOINTED + 1) {
        store.failing = true; // the database unreachable from this replica
        queue.hold();
      }
    };
    const logs: string[] = [];
    const destination = new PassThrough();
    destination.on('data', (line: Buffer) => logs.push(line.toString()));
    const logger = createLogger('vss-admin', { level: 'warn', destination });
    const a = runnerOn(queue, { ...options, stateStore: store, leaseMs: LEASE_MS, logger });
    await a.start(job);
    await eventually(() => queue.heldCount === 1, 30_000, 'replica A mid-job');
    // Its writes fail: once its lease lapses by its own clock it stops, its publish still in flight.
    await eventually(() => logs.some((line) => line.includes('run stopped here')), 30_000, 'A to stop');
    queue.release();
    const stopped = await a.finished(job.jobId);
    assert.equal(
      stopped.message,
      'stopped: its lease lapsed: no write of the job record succeeded for 3000 ms',
    );
    store.failing = false;
    assert.equal(queue.publishes, CHECKPOINTED + 1, 'nothing published after it stopped');
    // Its record still says RUNNING, its own: the next status takes it back and finishes it.
    const seen = await waitForSuccess(a, job.jobId);
    assert.equal(seen.at(-1)!.rowsPublished, ROWS);
    assert.equal(
      queue.publishes,
      ROWS + 1 + PARTITIONS,
      'resumed after row 45: row 46 once more, as the queue dedups it',
    );
    assert.equal((await bed.queue.topicStats(name)).messages, ROWS + PARTITIONS);
  });
});
