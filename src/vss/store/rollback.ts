/**
 * The rollback flip (docs/vss.md "Recall gate and rollback"): every READY variant of a model that
 * remembers a previous read version goes back to it, in one transaction, as the reset's flip went
 * forward (read-version.ts): readers see the rolled-back state or the one before, never a mix. The
 * previous version must still be kept: SERVING (another variant reads it), or RETIRED within the
 * grace period (`retired_at` later than `now() - grace`, the database's clock, the same clock the
 * sweep that drops expired versions uses). The variants write the version they read again (deltas
 * land where they are served), forget their previous version (a rollback is not rolled back), and
 * the version they left becomes RETIRED with `rolled_back_at` once nobody reads or writes it.
 */
import { LatticeError, notFound } from '../../platform/errors.js';
import type { SqlQueryable } from '../../platform/sql/index.js';
import { atomically, integerField } from './sql-support.js';
import type { ModelKey, VariantState, VersionStatus } from './types.js';

export interface RolledBackVariant {
  variant: string;
  /** The version it served before the rollback. */
  fromVersion: number;
  /** The version it serves now (its previous one). */
  toVersion: number;
}

export interface ModelRollback {
  variants: RolledBackVariant[];
  /** Versions the rollback left without readers or writers (now RETIRED, `rolled_back_at` set). */
  retiredVersions: number[];
}

const label = (key: ModelKey) => `model ${key.entity}/${key.modelName}`;

/** Rolls every READY variant of the model back to its previous read version (see the module comment). */
export async function rollBackModel(
  db: SqlQueryable,
  model: ModelKey,
  options: { graceMs: number },
): Promise<ModelRollback> {
  const graceMs = integerField(options.graceMs, 'grace_ms', 0, Number.MAX_SAFE_INTEGER);
  return atomically(db, async (tx) => {
    const { rows: variants } = await tx.query<{
      variant: string;
      state: VariantState;
      read_version: number | null;
      write_version: number | null;
      previous_read_version: number | null;
    }>(
      `SELECT variant, state, read_version, write_version, previous_read_version FROM vss_variants
        WHERE entity = $1 AND model_name = $2 ORDER BY variant FOR UPDATE`,
      [model.entity, model.modelName],
    );
    if (variants.length === 0) {
      const { rowCount } = await tx.query('SELECT 1 FROM vss_models WHERE entity = $1 AND model_name = $2', [
        model.entity,
        model.modelName,
      ]);
      if (rowCount === 0) throw notFound(`${label(model)} does not exist`, 'model_name');
    }
    const busy = variants.filter(
      (v) => v.state !== 'READY' && v.state !== 'REGISTERED' && v.state !== 'FAILED',
    );
    if (busy.length > 0) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${label(model)} cannot be rolled back while ${busy.map((v) => `variant ${v.variant} is ${v.state}`).join(', ')}: wait for (or fix) the running operation first`,
        { field: 'model_name' },
      );
    }
    const movable = variants.filter(
      (v) => v.state === 'READY' && v.previous_read_version !== null && v.read_version !== null,
    );
    if (movable.length === 0) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${label(model)} has no previous version to roll back to: no variant has been flipped from one since its last rollback`,
        { field: 'model_name' },
      );
    }
    const targets = [...new Set(movable.map((v) => v.previous_read_version!))];
    const current = [...new Set(movable.map((v) => v.read_version!))];
    const { rows: versions } = await tx.query<{
      version: number;
      status: VersionStatus;
      retired_at: Date | null;
      kept: boolean;
    }>(
      `SELECT version, status, retired_at,
              (status = 'SERVING' OR (status = 'RETIRED' AND retired_at > now() - make_interval(secs => $4::double precision / 1000))) AS kept
         FROM vss_versions
        WHERE entity = $1 AND model_name = $2 AND version = ANY($3::int[])
        ORDER BY version FOR UPDATE`,
      [model.entity, model.modelName, [...new Set([...targets, ...current])], graceMs],
    );
    for (const target of targets) {
      const row = versions.find((v) => v.version === target);
      if (row?.kept === true) continue;
      const why =
        row === undefined || row.status === 'DROPPED'
          ? `version ${target} has been dropped`
          : row.status === 'RETIRED'
            ? `version ${target} was retired at ${row.retired_at?.toISOString() ?? 'an unknown time'}, and its grace period of ${graceMs / 1000} s (vss.admin.rollbackGraceMs) is over`
            : `version ${target} is ${row.status}`;
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `${label(model)} cannot be rolled back to version ${target}: ${why}. Reset the model to serve new data instead`,
        { field: 'model_name' },
      );
    }
    for (const v of movable) {
      await tx.query(
        `UPDATE vss_variants
            SET read_version = $4, write_version = $4, previous_read_version = NULL, updated_at = now()
          WHERE entity = $1 AND model_name = $2 AND variant = $3`,
        [model.entity, model.modelName, v.variant, v.previous_read_version],
      );
    }
    await tx.query(
      `UPDATE vss_versions SET status = 'SERVING', retired_at = NULL, updated_at = now()
        WHERE entity = $1 AND model_name = $2 AND version = ANY($3::int[]) AND status = 'RETIRED'`,
      [model.entity, model.modelName, targets],
    );
    const { rows: retired } = await tx.query<{ version: number }>(
      `UPDATE vss_versions v
          SET status = 'RETIRED', retired_at = now(), rolled_back_at = now(), updated_at = now()
        WHERE v.entity = $1 AND v.model_name = $2 AND v.version = ANY($3::int[]) AND v.status = 'SERVING'
          AND NOT EXISTS (
            SELECT 1 FROM vss_variants r
             WHERE r.entity = v.entity AND r.model_name = v.model_name
               AND (r.read_version = v.version OR r.write_version = v.version))
        RETURNING v.version`,
      [model.entity, model.modelName, current.filter((c) => !targets.includes(c))],
    );
    return {
      variants: movable.map((v) => ({
        variant: v.variant,
        fromVersion: v.read_version!,
        toVersion: v.previous_read_version!,
      })),
      retiredVersions: retired.map((r) => r.version).sort((a, b) => a - b),
    };
  });
}
