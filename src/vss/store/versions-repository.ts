/**
 * Versions: one full ingestion (reset) of a model each, numbered 1, 2, 3, ... per model, with their
 * status, timestamps and counts. Status changes are compare-and-set and stamp their time.
 */
import { notFound } from '../../platform/errors.js';
import type { SqlQueryable, SqlValue } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import { atomically, compareAndSet, integerField, json, type SqlExpression } from './sql-support.js';
import type { JsonObject, ModelKey, ModelVersion, VersionKey, VersionStatus } from './types.js';

interface VersionRow {
  entity: string;
  model_name: string;
  version: number;
  status: VersionStatus;
  failure_reason: string | null;
  ingested_count: number;
  failed_count: number;
  indexed_count: number | null;
  created_at: Date;
  ingested_at: Date | null;
  indexed_at: Date | null;
  retired_at: Date | null;
  recall: JsonObject | null;
  rolled_back_at: Date | null;
  updated_at: Date;
}

const columns = `entity, model_name, version, status, failure_reason, ingested_count, failed_count,
  indexed_count, created_at, ingested_at, indexed_at, retired_at, recall, rolled_back_at, updated_at`;

function toVersion(row: VersionRow): ModelVersion {
  return {
    entity: row.entity,
    modelName: row.model_name,
    version: row.version,
    status: row.status,
    failureReason: row.failure_reason,
    ingestedCount: Number(row.ingested_count),
    failedCount: Number(row.failed_count),
    indexedCount: row.indexed_count === null ? null : Number(row.indexed_count),
    createdAt: row.created_at,
    ingestedAt: row.ingested_at,
    indexedAt: row.indexed_at,
    retiredAt: row.retired_at,
    recall: row.recall,
    rolledBackAt: row.rolled_back_at,
    updatedAt: row.updated_at,
  };
}

const versionLabel = (key: VersionKey) => `version ${key.version} of model ${key.entity}/${key.modelName}`;
const modelMissing = (key: ModelKey) =>
  notFound(`model ${key.entity}/${key.modelName} does not exist`, 'model_name');

/** The timestamp each status stamps when entered (kept if already set). */
const stamps: Partial<Record<VersionStatus, Record<string, SqlExpression>>> = {
  INGESTED: { ingested_at: { sql: 'coalesce(ingested_at, now())' } },
  SERVING: {
    ingested_at: { sql: 'coalesce(ingested_at, now())' },
    indexed_at: { sql: 'coalesce(indexed_at, now())' },
  },
  RETIRED: { retired_at: { sql: 'coalesce(retired_at, now())' } },
  DROPPED: { retired_at: { sql: 'coalesce(retired_at, now())' } },
};

export class VersionsRepository {
  constructor(private readonly db: SqlQueryable) {}

  /** Records `version` of the model as INGESTING. */
  async create(key: VersionKey): Promise<ModelVersion> {
    integerField(key.version, 'version', 1);
    const { rows } = await withConstraintErrors(
      () =>
        this.db.query<VersionRow>(
          `INSERT INTO vss_versions (entity, model_name, version) VALUES ($1, $2, $3) RETURNING ${columns}`,
          [key.entity, key.modelName, key.version],
        ),
      {
        alreadyExists: `${versionLabel(key)} already exists`,
        missing: {
          vss_versions_model_fkey: {
            field: 'model_name',
            message: `model ${key.entity}/${key.modelName} does not exist`,
          },
        },
      },
    );
    return toVersion(rows[0]!);
  }

  /** Records the model's next version (highest + 1, or 1) as INGESTING; resets of one model queue up. */
  async createNext(model: ModelKey): Promise<ModelVersion> {
    return atomically(this.db, async (tx) => {
      const locked = await tx.query(
        'SELECT 1 FROM vss_models WHERE entity = $1 AND model_name = $2 FOR UPDATE',
        [model.entity, model.modelName],
      );
      if (locked.rowCount === 0) throw modelMissing(model);
      const { rows } = await tx.query<VersionRow>(
        `INSERT INTO vss_versions (entity, model_name, version)
         SELECT $1, $2, coalesce(max(version), 0) + 1 FROM vss_versions WHERE entity = $1 AND model_name = $2
         RETURNING ${columns}`,
        [model.entity, model.modelName],
      );
      return toVersion(rows[0]!);
    });
  }

  async find(key: VersionKey): Promise<ModelVersion | undefined> {
    const { rows } = await this.db.query<VersionRow>(
      `SELECT ${columns} FROM vss_versions WHERE entity = $1 AND model_name = $2 AND version = $3`,
      [key.entity, key.modelName, key.version],
    );
    return rows[0] === undefined ? undefined : toVersion(rows[0]);
  }

  async get(key: VersionKey): Promise<ModelVersion> {
    const version = await this.find(key);
    if (version === undefined) throw notFound(`${versionLabel(key)} does not exist`, 'version');
    return version;
  }

  /** The model's versions, newest first. */
  async list(model: ModelKey): Promise<ModelVersion[]> {
    const { rows } = await this.db.query<VersionRow>(
      `SELECT ${columns} FROM vss_versions WHERE entity = $1 AND model_name = $2 ORDER BY version DESC`,
      [model.entity, model.modelName],
    );
    return rows.map(toVersion);
  }

  async latest(model: ModelKey): Promise<ModelVersion | undefined> {
    return (await this.list(model))[0];
  }

  /** Moves the version from `from` to `to`, stamping `to`'s time; false when not in `from`. */
  async transition(
    key: VersionKey,
    from: VersionStatus,
    to: Exclude<VersionStatus, 'FAILED'>,
  ): Promise<boolean> {
    return this.cas(key, { status: from }, { status: to, failure_reason: null, ...stamps[to] });
  }

  /** Marks the version FAILED with its reason; false when not in `from`. */
  async fail(key: VersionKey, from: Exclude<VersionStatus, 'FAILED'>, reason: string): Promise<boolean> {
    return this.cas(key, { status: from }, { status: 'FAILED', failure_reason: reason });
  }

  /** Puts a FAILED version back: INGESTED when its ingestion had completed, else INGESTING. */
  async retry(key: VersionKey): Promise<boolean> {
    return this.cas(
      key,
      { status: 'FAILED' },
      {
        status: { sql: "CASE WHEN ingested_at IS NULL THEN 'INGESTING' ELSE 'INGESTED' END" },
        failure_reason: null,
      },
    );
  }

  /** Adds to the ingestion counters (consumers report in batches). */
  async addCounts(key: VersionKey, counts: { ingested?: number; failed?: number }): Promise<void> {
    const ingested = integerField(counts.ingested ?? 0, 'ingested', 0, Number.MAX_SAFE_INTEGER);
    const failed = integerField(counts.failed ?? 0, 'failed', 0, Number.MAX_SAFE_INTEGER);
    const updated = await withConstraintErrors(() =>
      this.db.query(
        `UPDATE vss_versions
            SET ingested_count = ingested_count + $4, failed_count = failed_count + $5, updated_at = now()
          WHERE entity = $1 AND model_name = $2 AND version = $3`,
        [key.entity, key.modelName, key.version, ingested, failed],
      ),
    );
    if (updated.rowCount === 0) throw notFound(`${versionLabel(key)} does not exist`, 'version');
  }

  /**
   * Records what the version's collection holds, measured in one look: its candidates (the ingested
   * count, which events that replaced a candidate or deleted one have changed) and those indexed.
   */
  async setHeldCounts(key: VersionKey, counts: { points: number; indexed: number }): Promise<void> {
    integerField(counts.points, 'ingested_count', 0, Number.MAX_SAFE_INTEGER);
    integerField(counts.indexed, 'indexed_count', 0, Number.MAX_SAFE_INTEGER);
    await this.cas(key, {}, { ingested_count: counts.points, indexed_count: counts.indexed });
  }

  /**
   * RETIRED versions (of every model) whose rollback grace period is over: retired more than
   * `graceMs` ago by the database's clock, the clock rollback.ts judges the grace period by.
   */
  async listExpiredRetired(graceMs: number): Promise<ModelVersion[]> {
    integerField(graceMs, 'grace_ms', 0, Number.MAX_SAFE_INTEGER);
    const { rows } = await this.db.query<VersionRow>(
      `SELECT ${columns} FROM vss_versions
        WHERE status = 'RETIRED' AND retired_at <= now() - make_interval(secs => $1::double precision / 1000)
        ORDER BY entity, model_name, version`,
      [graceMs],
    );
    return rows.map(toVersion);
  }

  /**
   * RETIRED → DROPPED when the grace period is (still) over, judged under the row's lock, so a
   * rollback that took the version back first wins; false when it did (or the version moved on).
   */
  async dropIfExpired(key: VersionKey, graceMs: number): Promise<boolean> {
    integerField(graceMs, 'grace_ms', 0, Number.MAX_SAFE_INTEGER);
    const { rowCount } = await this.db.query(
      `UPDATE vss_versions SET status = 'DROPPED', updated_at = now()
        WHERE entity = $1 AND model_name = $2 AND version = $3 AND status = 'RETIRED'
          AND retired_at <= now() - make_interval(secs => $4::double precision / 1000)`,
      [key.entity, key.modelName, key.version, graceMs],
    );
    return rowCount > 0;
  }

  /** Records the recall figures a reset's verify_recall step measured on this version. */
  async setRecall(key: VersionKey, figures: JsonObject): Promise<void> {
    await this.cas(key, {}, { recall: json(figures) });
  }

  /** Records the vector count the index reports for this version. */
  async setIndexedCount(key: VersionKey, indexed: number): Promise<void> {
    integerField(indexed, 'indexed_count', 0, Number.MAX_SAFE_INTEGER);
    await this.cas(key, {}, { indexed_count: indexed });
  }

  private async cas(
    key: VersionKey,
    expect: Record<string, SqlValue>,
    set: Record<string, SqlValue | SqlExpression>,
  ): Promise<boolean> {
    const { applied, present } = await withConstraintErrors(() =>
      compareAndSet(this.db, {
        table: 'vss_versions',
        key: { entity: key.entity, model_name: key.modelName, version: key.version },
        expect,
        set,
      }),
    );
    if (!present) throw notFound(`${versionLabel(key)} does not exist`, 'version');
    return applied;
  }
}
