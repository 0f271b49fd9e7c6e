/**
 * Job records in the vss SQL schema (`vss_job_records`, migration 11): what admin replicas sharing
 * one PostgreSQL database use, so a job whose replica died is seen, waited for and taken over by any
 * other, and resumed from its checkpoint.
 *
 * A claim is one `INSERT … ON CONFLICT DO UPDATE … WHERE` (the rule of `mayClaim` in SQL) and a save
 * one `UPDATE … WHERE owner = $me`: the row lock makes racing claims take turns, each judging the row
 * the previous one left, so at most one wins.
 *
 * Clocks: only the database's is ever compared. `heartbeat_at` is the database's `now()` at the write
 * and a lease lapses when the database's `now()` is `leaseMs` past it, so skew between the replicas'
 * clocks changes nothing. A loaded record reports its age by the database's clock as
 * `heartbeatAt = Date.now() - age`, so the runner's own arithmetic on it judges the lease as the
 * database does. (The runner that holds a job times its lease on its monotonic clock from before
 * each write was sent, so it gives the job up no later than the database lets another claim it:
 * file-job-runner.ts.)
 */
import type { SqlQueryable } from '../../../platform/sql/index.js';
import type { IngestionJob, JobState, JobStatus } from './job-runner.js';
import type { JobCheckpoint, JobRecord, JobStateStore } from './job-state-store.js';

interface JobRecordRow {
  job_id: string;
  fingerprint: string;
  owner: string;
  status: JobStatus;
  checkpoint: JobCheckpoint | null;
  job: IngestionJob | null;
  age_ms: number;
}

export class SqlJobStateStore implements JobStateStore {
  readonly exclusive = false;

  /** `db` must have the vss schema migrated (openVssStore / migrateVssStore); the caller owns it. */
  constructor(private readonly db: SqlQueryable) {}

  async load(jobId: string): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRecordRow>(
      `SELECT job_id, fingerprint, owner, status, checkpoint, job,
              greatest(0, extract(epoch FROM now() - heartbeat_at) * 1000)::float8 AS age_ms
         FROM vss_job_records WHERE job_id = $1`,
      [jobId],
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    return {
      jobId: row.job_id,
      fingerprint: row.fingerprint,
      status: row.status,
      checkpoint: row.checkpoint,
      owner: row.owner,
      heartbeatAt: Math.round(Date.now() - row.age_ms),
      ...(row.job === null ? {} : { job: row.job }),
    };
  }

  async claim(record: JobRecord, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO vss_job_records AS r (job_id, fingerprint, state, owner, status, checkpoint, job, heartbeat_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::jsonb, now())
       ON CONFLICT (job_id) DO UPDATE
          SET state = excluded.state, owner = excluded.owner, status = excluded.status,
              checkpoint = excluded.checkpoint, job = excluded.job, heartbeat_at = now()
        WHERE r.fingerprint = excluded.fingerprint AND r.state <> 'SUCCEEDED'
          AND (r.owner = excluded.owner OR r.state <> 'RUNNING'
               OR r.heartbeat_at <= now() - $8::integer * interval '1 millisecond')
       RETURNING 1`,
      [
        record.jobId,
        record.fingerprint,
        ...this.#values(record),
        Math.min(2 ** 31 - 1, Math.max(0, Math.round(leaseMs))),
      ],
    );
    return rowCount === 1;
  }

  async save(record: JobRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE vss_job_records
          SET state = $3, status = $5::jsonb, checkpoint = $6::jsonb, job = $7::jsonb, heartbeat_at = now()
        WHERE job_id = $1 AND owner = $4 AND fingerprint = $2`,
      [record.jobId, record.fingerprint, ...this.#values(record)],
    );
    return rowCount === 1;
  }

  /** state, owner, status, checkpoint and job as parameters $3 to $7. */
  #values(record: JobRecord): [JobState, string, string, string | null, string | null] {
    return [
      record.status.state,
      record.owner,
      JSON.stringify(record.status),
      record.checkpoint === null ? null : JSON.stringify(record.checkpoint),
      record.job === undefined ? null : JSON.stringify(record.job),
    ];
  }
}
