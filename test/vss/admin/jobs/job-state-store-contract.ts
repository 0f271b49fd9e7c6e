/**
 * The JobStateStore contract (job-state-store.ts), run against every adapter by
 * job-state-stores.test.ts: records read back as written, claims and owner-conditional saves, leases,
 * and that of racing claims exactly one wins, also between two store instances over the same
 * records (two processes, two replicas).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type JobRecord,
  type JobStateStore,
  type JobStatus,
  jobFingerprint,
} from '../../../../src/vss/admin/jobs/index.js';
import { eventually, uniqueName } from '../../../support/servers.js';
import { jobFor } from './training-data.js';

export interface OpenedStores {
  store: JobStateStore;
  /** Another store over the same records where the adapter allows one (else `store` again). */
  peer: JobStateStore;
  close(): Promise<void>;
}

export interface StoreTarget {
  name: string;
  open(): Promise<OpenedStores>;
  /** The store is exclusive: another owner's RUNNING record is a dead predecessor's. */
  exclusive: boolean;
  /** The store dates writes by its own clock (the SQL store), not by the writer's `heartbeatAt`. */
  ownClock: boolean;
  skip?: string | false;
}

/** Long enough that a lease never lapses during a test; short enough to wait for. */
const HOLDS = 3_600_000;
const LAPSES = 50;

function statusOf(jobId: string, state: JobStatus['state'], rowsPublished: number): JobStatus {
  return {
    jobId,
    state,
    progress: state === 'SUCCEEDED' ? 1 : 0.5,
    rowsRead: rowsPublished + 1,
    rowsPublished,
    badRowCount: 1,
    badRows: [{ file: 'a.parquet', row: 3, reason: 'emb: not a list' }],
    message: `state ${state}`,
  };
}

/** An age of a heartbeat just written (the wall clock may step back a little between two readings). */
const recent = (ageMs: number): boolean => ageMs > -1000 && ageMs < 60_000;

/** A record of a fresh job id, owned by `owner`, RUNNING unless told otherwise. */
function recordOf(owner: string, overrides: Partial<JobRecord> = {}): JobRecord {
  const jobId = overrides.jobId ?? uniqueName('job');
  const job = jobFor('/data/training', { jobId });
  return {
    jobId,
    fingerprint: jobFingerprint(job),
    status: statusOf(jobId, 'RUNNING', 10),
    checkpoint: {
      files: [{ name: 'a.parquet', size: 1234, mtimeMs: 1_700_000_000_123.5 }],
      fileIndex: 0,
      rowsDone: 11,
      counters: {
        rowsRead: 11,
        rowsPublished: 10,
        badRowCount: 1,
        badRows: [{ file: 'a.parquet', row: 3, reason: 'emb: not a list' }],
      },
    },
    owner,
    heartbeatAt: Date.now(),
    job,
    ...overrides,
  };
}

/** The record without its heartbeat (which an own-clock store dates itself). */
function content(record: JobRecord | undefined): Omit<JobRecord, 'heartbeatAt'> | undefined {
  if (record === undefined) return undefined;
  const { heartbeatAt: _heartbeatAt, ...rest } = record;
  return rest;
}

export function jobStateStoreContract(target: StoreTarget): void {
  describe(`job state store contract: ${target.name}`, { skip: target.skip ?? false }, () => {
    let opened: OpenedStores | undefined;
    before(async () => {
      opened = await target.open();
    });
    after(async () => {
      await opened?.close();
    });
    const stores = (): OpenedStores => {
      if (opened === undefined) throw new Error('stores not opened');
      return opened;
    };

    test('a job never written has no record; a claim writes one that reads back as written', async () => {
      const { store, peer } = stores();
      const record = recordOf('runner-a');
      assert.equal(await store.load(record.jobId), undefined);
      assert.equal(await store.claim(record, HOLDS), true);
      for (const reader of [store, peer]) {
        const loaded = await reader.load(record.jobId);
        assert.deepEqual(content(loaded), content(record));
        const age = Date.now() - loaded!.heartbeatAt;
        assert.ok(recent(age), `heartbeat ${age} ms ago`);
      }
      // Finished records keep no checkpoint; older records had no job.
      const { job: _job, ...older } = recordOf('runner-a', {
        status: statusOf('x', 'FAILED', 0),
        checkpoint: null,
      });
      assert.equal(await store.claim(older, HOLDS), true);
      assert.deepEqual(content(await peer.load(older.jobId)), content(older));
    });

    test("the owner's saves replace the record; another owner's save writes nothing and is refused", async () => {
      const { store, peer } = stores();
      const record = recordOf('runner-a');
      assert.equal(await store.save(record), false, 'no record to save over: not held');
      assert.equal(await store.load(record.jobId), undefined);
      assert.equal(await store.claim(record, HOLDS), true);
      const later = { ...record, status: statusOf(record.jobId, 'RUNNING', 40) };
      assert.equal(await peer.save(later), true);
      assert.deepEqual(content(await store.load(record.jobId)), content(later));
      const intruder = { ...later, owner: 'runner-b', status: statusOf(record.jobId, 'FAILED', 99) };
      assert.equal(await store.save(intruder), false);
      assert.equal(await peer.save(intruder), false);
      assert.deepEqual(content(await peer.load(record.jobId)), content(later));
    });

    test(
      target.exclusive
        ? "an exclusive store: another owner's RUNNING record is claimed at once, however fresh, and its owner's saves are refused"
        : 'a RUNNING record is not claimed by another owner while its lease holds; once it lapses one claim takes it over and the former owner is refused',
      async () => {
        const { store, peer } = stores();
        const record = recordOf('runner-a');
        assert.equal(await store.claim(record, HOLDS), true);
        const takeover = { ...record, owner: 'runner-b', status: statusOf(record.jobId, 'RUNNING', 10) };
        if (!target.exclusive) {
          assert.equal(await peer.claim(takeover, HOLDS), false);
          assert.equal((await store.load(record.jobId))?.owner, 'runner-a');
          // The owner renewing it keeps it.
          assert.equal(await store.save(record), true);
          assert.equal(await peer.claim(takeover, HOLDS), false);
          await eventually(() => peer.claim(takeover, LAPSES), 30_000, 'the lease to lapse');
        } else {
          assert.equal(await peer.claim(takeover, HOLDS), true);
        }
        assert.equal((await store.load(record.jobId))?.owner, 'runner-b');
        assert.equal(await store.save(record), false, 'the former owner lost the job');
        if (!target.exclusive) {
          assert.equal(await store.claim(record, HOLDS), false, 'and cannot claim it back while held');
        }
        assert.equal(await peer.save({ ...takeover, status: statusOf(record.jobId, 'SUCCEEDED', 50) }), true);
        assert.equal((await store.load(record.jobId))?.status.state, 'SUCCEEDED');
      },
    );

    test('a FAILED record is claimed by any owner at once; a SUCCEEDED one by none; another fingerprint never', async () => {
      const { store, peer } = stores();
      const failed = recordOf('runner-a', { status: statusOf('f', 'FAILED', 5) });
      assert.equal(await store.claim(failed, HOLDS), true);
      const resumed = { ...failed, owner: 'runner-b', status: statusOf(failed.jobId, 'RUNNING', 5) };
      assert.equal(await peer.claim(resumed, HOLDS), true);
      assert.equal((await store.load(failed.jobId))?.owner, 'runner-b');

      const done = recordOf('runner-a', { status: statusOf('s', 'SUCCEEDED', 5), checkpoint: null });
      assert.equal(await store.claim(done, HOLDS), true);
      const again = { ...done, owner: 'runner-b', status: statusOf(done.jobId, 'RUNNING', 0) };
      assert.equal(await peer.claim(again, 0), false);
      assert.equal(await store.claim({ ...again, owner: 'runner-a' }, 0), false, 'not even by its owner');
      assert.deepEqual(content(await peer.load(done.jobId)), content(done));

      const other = { ...resumed, owner: 'runner-c', fingerprint: 'another job' };
      assert.equal(await store.claim({ ...other, status: statusOf(failed.jobId, 'FAILED', 0) }, 0), false);
      await store.save({ ...resumed, status: statusOf(failed.jobId, 'FAILED', 5) });
      assert.equal(await store.claim(other, 0), false, 'not over a FAILED record of another job');
      assert.equal((await peer.load(failed.jobId))?.fingerprint, failed.fingerprint);
    });

    // An exclusive store has one runner: another owner's claim always wins there (a dead predecessor's record).
    test('claims racing for a new job, or for one whose lease lapsed: exactly one wins', {
      skip: target.exclusive && 'one runner per exclusive store',
    }, async () => {
      const { store, peer } = stores();
      const record = recordOf('runner-0');
      const racers = Array.from({ length: 8 }, (_, i) => ({ ...record, owner: `runner-${i}` }));
      const won = await Promise.all(racers.map((r, i) => (i % 2 === 0 ? store : peer).claim(r, HOLDS)));
      assert.equal(won.filter(Boolean).length, 1, `winners: ${won}`);
      const winner = racers[won.indexOf(true)]!.owner;
      assert.equal((await store.load(record.jobId))?.owner, winner);

      const rivals = racers.filter((r) => r.owner !== winner);
      // The winner's lease lapses (by the writer's clock, a heartbeat in 1970; by the store's own,
      // a wait), while each rival's claim, once written, is fresh for the others: one takes it over.
      assert.equal(await store.save({ ...record, owner: winner, heartbeatAt: 0 }), true);
      const lease = target.ownClock ? 1000 : HOLDS;
      if (target.ownClock) {
        await eventually(
          async () => Date.now() - (await store.load(record.jobId))!.heartbeatAt > lease,
          30_000,
          'the lease to lapse',
        );
      }
      const taken = await Promise.all(
        rivals.map((r, i) => (i % 2 === 0 ? peer : store).claim({ ...r, heartbeatAt: Date.now() }, lease)),
      );
      assert.equal(taken.filter(Boolean).length, 1, `takeovers: ${taken}`);
      assert.equal((await peer.load(record.jobId))?.owner, rivals[taken.indexOf(true)]!.owner);
    });

    if (target.ownClock) {
      test("leases run on the store's clock: a writer's clock set back or ahead neither shortens nor lengthens them", async () => {
        const { store, peer } = stores();
        const behind = recordOf('runner-a', { heartbeatAt: 0 });
        assert.equal(await store.claim(behind, HOLDS), true);
        const age = Date.now() - (await peer.load(behind.jobId))!.heartbeatAt;
        assert.ok(recent(age), `heartbeat ${age} ms ago, not in 1970`);
        assert.equal(await peer.claim({ ...behind, owner: 'runner-b' }, HOLDS), false);

        const ahead = recordOf('runner-a', { heartbeatAt: Date.now() + HOLDS });
        assert.equal(await store.claim(ahead, HOLDS), true);
        await eventually(
          () => peer.claim({ ...ahead, owner: 'runner-b' }, LAPSES),
          30_000,
          'the lease to lapse',
        );
      });
    }
  });
}
