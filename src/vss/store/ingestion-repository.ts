/**
 * Ingestion bookkeeping: which embedding events of a version the consumers processed, which
 * partitions delivered a job's EOF marker, and the job's completion with its counts. The admin reads
 * the completion (`find`) to start indexing.
 *
 * Counts are exact under at-least-once delivery because nothing is ever incremented: every recorded
 * batch of processed events is a ledger row (their keys, a hash of each event's bytes, with each
 * outcome and point count), and a job's counts are derived from the ledger once, in the transaction
 * that records its completion: an event counts once however often it was recorded (a redelivery has
 * the same key), with the outcome it was recorded with last (a dead letter replayed and applied
 * counts as applied), for the job of the first batch that recorded it. Events that name their
 * `job_id` belong to that job; the batches of the others are claimed by the first job of their
 * version to complete after they were recorded, so such an event, delivered again later, stays
 * with the job that counted it.
 */
import { LatticeError } from '../../platform/errors.js';
import type { SqlQueryable, SqlValue } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import { resourceName } from './identifiers.js';
import { atomically, integerField } from './sql-support.js';
import type { ModelKey, VersionKey } from './types.js';

export interface IngestionJobKey extends VersionKey {
  /** The batch job's id, as its EOF markers carry it. */
  jobId: string;
}

/** One processed embedding event, as the ledger keeps it. */
export interface IngestedEvent extends VersionKey {
  /** 32 lower-case hex digits identifying the event (a hash of its bytes). */
  eventKey: string;
  /** The job the event names, if it names one. */
  jobId?: string;
  /** Rejected for good (dead-lettered) rather than applied. */
  rejected: boolean;
  /** Points the event wrote (one per collection it was upserted into). */
  points: number;
}

export interface IngestionCounts {
  /** Distinct embedding events of the job processed, applied or rejected. */
  events: number;
  applied: number;
  rejected: number;
  /** Point upserts: each applied `A` event counts once per collection it wrote. */
  pointsWritten: number;
}

export const INGESTION_STATUSES = ['INGESTING', 'COMPLETE'] as const;
export type IngestionStatus = (typeof INGESTION_STATUSES)[number];

export interface IngestionRecord extends IngestionJobKey {
  /** Partitions of the topic: markers expected. */
  partitions: number;
  /** Partitions whose marker has been consumed, ascending. */
  markedPartitions: number[];
  status: IngestionStatus;
  /** Known once COMPLETE. */
  counts: IngestionCounts | null;
  /** When the first marker arrived. */
  createdAt: Date;
  completedAt: Date | null;
}

/** What recording one EOF marker did. */
export interface MarkerOutcome {
  /** False when this partition's marker had been recorded before (a redelivery). */
  firstDelivery: boolean;
  /** The completed record, when this marker was the one that completed the job. */
  completed: IngestionRecord | undefined;
  record: IngestionRecord;
}

export interface IngestionQuery extends VersionKey {
  /** Without it: the version's most recently started job. */
  jobId?: string;
}

interface JobRow {
  entity: string;
  model_name: string;
  version: number;
  job_id: string;
  partitions: number;
  status: IngestionStatus;
  events: number | string | null;
  rejected: number | string | null;
  points_written: number | string | null;
  created_at: Date;
  completed_at: Date | null;
  marked: number[] | null;
}

const jobColumns = `j.entity, j.model_name, j.version, j.job_id, j.partitions, j.status, j.events, j.rejected,
  j.points_written, j.created_at, j.completed_at,
  (SELECT array_agg(m.partition ORDER BY m.partition) FROM vss_ingestion_markers m
    WHERE m.entity = j.entity AND m.model_name = j.model_name AND m.version = j.version
      AND m.job_id = j.job_id) AS marked`;

function toRecord(row: JobRow): IngestionRecord {
  const events = row.events === null ? null : Number(row.events);
  const rejected = Number(row.rejected ?? 0);
  return {
    entity: row.entity,
    modelName: row.model_name,
    version: row.version,
    jobId: row.job_id,
    partitions: row.partitions,
    markedPartitions: row.marked ?? [],
    status: row.status,
    counts:
      events === null
        ? null
        : { events, applied: events - rejected, rejected, pointsWritten: Number(row.points_written) },
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}

const EVENT_KEY = /^[0-9a-f]{32}$/;

function jobIdField(jobId: unknown, field = 'job_id'): string {
  if (typeof jobId !== 'string' || jobId === '' || jobId.length > 256) {
    throw new LatticeError('INVALID_ARGUMENT', `${field} must be a string of 1 to 256 characters`, { field });
  }
  return jobId;
}

function versionKey(key: VersionKey): void {
  resourceName(key.entity, 'entity');
  resourceName(key.modelName, 'model_name');
  integerField(key.version, 'version', 1);
}

export class IngestionRepository {
  constructor(private readonly db: SqlQueryable) {}

  /**
   * Records processed events in the ledger: one row per model version and job the events name (a
   * batch is usually one), in one transaction. An event recorded twice in `events` keeps its last
   * outcome.
   */
  async recordEvents(events: readonly IngestedEvent[]): Promise<void> {
    const groups = new Map<string, { first: IngestedEvent; byKey: Map<string, IngestedEvent> }>();
    events.forEach((event, i) => {
      versionKey(event);
      if (!EVENT_KEY.test(event.eventKey)) {
        throw new LatticeError('INVALID_ARGUMENT', `events[${i}].event_key must be 32 hex digits`, {
          field: `events[${i}].event_key`,
        });
      }
      if (event.jobId !== undefined) jobIdField(event.jobId, `events[${i}].job_id`);
      integerField(event.points, `events[${i}].points`, 0);
      const group = JSON.stringify([event.entity, event.modelName, event.version, event.jobId ?? null]);
      let found = groups.get(group);
      if (found === undefined) {
        found = { first: event, byKey: new Map() };
        groups.set(group, found);
      }
      found.byKey.delete(event.eventKey);
      found.byKey.set(event.eventKey, event);
    });
    // A key is a hash of the event's bytes, job_id included: it falls in one group only.
    const statements = [...groups.values()].map(({ first, byKey }) => {
      const rows = [...byKey.values()];
      return [
        first.entity,
        first.modelName,
        first.version,
        first.jobId ?? null,
        rows.map((r) => r.eventKey),
        rows.map((r) => r.rejected),
        rows.map((r) => r.points),
      ];
    });
    if (statements.length === 0) return;
    const record = (db: SqlQueryable, params: SqlValue[]) =>
      db.query(
        `INSERT INTO vss_ingestion_batches (entity, model_name, version, job_id, event_keys, rejected, points)
         VALUES ($1::text, $2::text, $3::integer, $4::text, $5::uuid[], $6::boolean[], $7::integer[])`,
        params,
      );
    if (statements.length === 1) await record(this.db, statements[0]!);
    else {
      await atomically(this.db, async (tx) => {
        for (const params of statements) await record(tx, params);
      });
    }
  }

  /**
   * Records partition `partition`'s EOF marker of the job (the job is created by its first marker,
   * expecting `partitions` markers). When this completes the set, the job is marked COMPLETE with its
   * counts in the same transaction; the job's row lock makes that happen exactly once, whichever
   * consumers deliver the last markers, and however often.
   */
  async recordMarker(
    key: IngestionJobKey & { partition: number },
    partitions: number,
  ): Promise<MarkerOutcome> {
    versionKey(key);
    jobIdField(key.jobId);
    integerField(partitions, 'partitions', 1, 65_536);
    integerField(key.partition, 'partition', 0);
    const job = [key.entity, key.modelName, key.version, key.jobId];
    return atomically(this.db, async (tx) => {
      await withConstraintErrors(
        () =>
          tx.query(
            `INSERT INTO vss_ingestion_jobs (entity, model_name, version, job_id, partitions)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
            [...job, partitions],
          ),
        {
          missing: {
            vss_ingestion_jobs_model_fkey: {
              field: 'model_name',
              message: `model ${key.entity}/${key.modelName} does not exist`,
            },
          },
        },
      );
      // Serialises the markers of one job: the count below sees every marker committed before.
      const { rows: locked } = await tx.query<{ partitions: number; status: IngestionStatus }>(
        `SELECT partitions, status FROM vss_ingestion_jobs
          WHERE entity = $1 AND model_name = $2 AND version = $3 AND job_id = $4 FOR UPDATE`,
        job,
      );
      const expected = locked[0]!.partitions;
      if (key.partition >= expected) {
        throw new LatticeError(
          'INVALID_ARGUMENT',
          `partition ${key.partition} is out of range: job ${key.jobId} has ${expected} partitions (0 to ${expected - 1})`,
          { field: 'partition' },
        );
      }
      const inserted = await tx.query(
        `INSERT INTO vss_ingestion_markers (entity, model_name, version, job_id, partition)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
        [...job, key.partition],
      );
      let completed = false;
      if (locked[0]!.status === 'INGESTING') {
        const { rows: marked } = await tx.query<{ count: number | string }>(
          `SELECT count(*) AS count FROM vss_ingestion_markers
            WHERE entity = $1 AND model_name = $2 AND version = $3 AND job_id = $4`,
          job,
        );
        if (Number(marked[0]?.count ?? 0) >= expected) {
          await complete(tx, job);
          completed = true;
        }
      }
      const record = toRecord((await selectJobs(tx, 'j.job_id = $4', job))[0]!);
      return { firstDelivery: inserted.rowCount === 1, completed: completed ? record : undefined, record };
    });
  }

  /** The job's record; without `jobId`, the version's most recently started job. */
  async find(query: IngestionQuery): Promise<IngestionRecord | undefined> {
    versionKey(query);
    const params = [query.entity, query.modelName, query.version];
    if (query.jobId === undefined) {
      const rows = await selectJobs(
        this.db,
        'true ORDER BY j.created_at DESC, j.job_id DESC LIMIT 1',
        params,
      );
      return rows[0] === undefined ? undefined : toRecord(rows[0]);
    }
    const rows = await selectJobs(this.db, 'j.job_id = $4', [...params, jobIdField(query.jobId)]);
    return rows[0] === undefined ? undefined : toRecord(rows[0]);
  }

  /** Every job of the model, newest version first, then by start. */
  async list(model: ModelKey): Promise<IngestionRecord[]> {
    resourceName(model.entity, 'entity');
    resourceName(model.modelName, 'model_name');
    const { rows } = await this.db.query<JobRow>(
      `SELECT ${jobColumns} FROM vss_ingestion_jobs j
        WHERE j.entity = $1 AND j.model_name = $2
        ORDER BY j.version DESC, j.created_at, j.job_id`,
      [model.entity, model.modelName],
    );
    return rows.map(toRecord);
  }

  /** Forgets a version's jobs, markers and ledger (once the version is dropped); the distinct events forgotten. */
  async forgetVersion(key: VersionKey): Promise<number> {
    versionKey(key);
    const params = [key.entity, key.modelName, key.version];
    return atomically(this.db, async (tx) => {
      await tx.query(
        'DELETE FROM vss_ingestion_jobs WHERE entity = $1 AND model_name = $2 AND version = $3',
        params,
      );
      const { rows } = await tx.query<{ events: number | string }>(
        `WITH dropped AS (
           DELETE FROM vss_ingestion_batches WHERE entity = $1 AND model_name = $2 AND version = $3
           RETURNING event_keys)
         SELECT count(DISTINCT k) AS events FROM dropped, unnest(dropped.event_keys) AS k`,
        params,
      );
      return Number(rows[0]?.events ?? 0);
    });
  }
}

/**
 * Claims the version's unclaimed ledger batches for the job, counts the job's events, and completes
 * it. Each distinct event of the version belongs to the job of the first batch that recorded it (the
 * batches of one key all carry its own job, or were unclaimed until a completion claimed them all in
 * order) and has the outcome of the last one.
 */
async function complete(tx: SqlQueryable, job: readonly (string | number)[]): Promise<void> {
  await tx.query(
    `UPDATE vss_ingestion_batches SET job_id = $4
      WHERE entity = $1 AND model_name = $2 AND version = $3 AND job_id IS NULL`,
    job,
  );
  await tx.query(
    `WITH recorded AS (
       SELECT e.key, b.batch_seq, b.job_id, e.rejected, e.points
         FROM vss_ingestion_batches b,
              unnest(b.event_keys, b.rejected, b.points) AS e(key, rejected, points)
        WHERE b.entity = $1 AND b.model_name = $2 AND b.version = $3),
     per_event AS (
       SELECT (array_agg(job_id ORDER BY batch_seq))[1] AS job_id,
              (array_agg(rejected ORDER BY batch_seq DESC))[1] AS rejected,
              (array_agg(points ORDER BY batch_seq DESC))[1] AS points
         FROM recorded GROUP BY key)
     UPDATE vss_ingestion_jobs j
        SET status = 'COMPLETE', completed_at = now(),
            events = c.events, rejected = c.rejected, points_written = c.points
       FROM (SELECT count(*) AS events,
                    count(*) FILTER (WHERE rejected) AS rejected,
                    coalesce(sum(points) FILTER (WHERE NOT rejected), 0) AS points
               FROM per_event WHERE job_id = $4) c
      WHERE j.entity = $1 AND j.model_name = $2 AND j.version = $3 AND j.job_id = $4`,
    job,
  );
}

async function selectJobs(
  db: SqlQueryable,
  where: string,
  params: readonly (string | number)[],
): Promise<JobRow[]> {
  const { rows } = await db.query<JobRow>(
    `SELECT ${jobColumns} FROM vss_ingestion_jobs j
      WHERE j.entity = $1 AND j.model_name = $2 AND j.version = $3 AND ${where}`,
    params,
  );
  return rows;
}
