/**
 * The read-version flip: a variant whose write version is fully indexed starts serving it. In one
 * transaction the variant becomes READY on the new read version, the version becomes SERVING, and
 * the version it read before is RETIRED when no variant of the model reads or writes it any more
 * (its collection and embeddings may then be dropped). Readers see the old state or the new one,
 * never a mix.
 */
import { LatticeError, notFound } from '../../platform/errors.js';
import type { SqlQueryable } from '../../platform/sql/index.js';
import { atomically, integerField } from './sql-support.js';
import type { VariantKey, VariantState, VersionStatus } from './types.js';
import { variantLabel } from './variants-repository.js';

export interface ReadVersionFlip {
  /** False when the variant was not INDEXING this version (another worker flipped it, or it moved on). */
  applied: boolean;
  /** The version the variant read before (after a no-op: the one it reads now). */
  previousReadVersion: number | null;
  /** Versions this flip left without readers or writers (now RETIRED). */
  retiredVersions: number[];
}

/** Flips `key`'s read version to `version`, which must be its write version and ingested. */
export async function flipReadVersion(
  db: SqlQueryable,
  key: VariantKey,
  version: number,
): Promise<ReadVersionFlip> {
  integerField(version, 'version', 1);
  return atomically(db, async (tx) => {
    const { rows } = await tx.query<{
      state: VariantState;
      read_version: number | null;
      write_version: number | null;
    }>(
      `SELECT state, read_version, write_version FROM vss_variants
        WHERE entity = $1 AND model_name = $2 AND variant = $3 FOR UPDATE`,
      [key.entity, key.modelName, key.variant],
    );
    const variant = rows[0];
    if (variant === undefined) throw notFound(`${variantLabel(key)} does not exist`, 'variant');
    const previous = variant.read_version;
    if (variant.state !== 'INDEXING' || variant.write_version !== version) {
      return { applied: false, previousReadVersion: previous, retiredVersions: [] };
    }

    // Flips of sibling variants serialise on the version rows (locked in order, so no deadlock):
    // the last one to leave the previous version sees that nobody reads it any more.
    const versions = previous === null || previous === version ? [version] : [version, previous];
    const { rows: locked } = await tx.query<{ version: number; status: VersionStatus }>(
      `SELECT version, status FROM vss_versions
        WHERE entity = $1 AND model_name = $2 AND version = ANY($3::int[])
        ORDER BY version FOR UPDATE`,
      [key.entity, key.modelName, versions],
    );
    const target = locked.find((row) => row.version === version);
    if (target === undefined || (target.status !== 'INGESTED' && target.status !== 'SERVING')) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `version ${version} of model ${key.entity}/${key.modelName} is ${target?.status ?? 'missing'}: only an ingested version can be served`,
        { field: 'version' },
      );
    }

    // The version read before is remembered: a rollback within its grace period goes back to it.
    await tx.query(
      `UPDATE vss_variants
          SET read_version = $4, state = 'READY', updated_at = now(),
              previous_read_version = CASE WHEN read_version IS NULL OR read_version = $4
                                           THEN previous_read_version ELSE read_version END
        WHERE entity = $1 AND model_name = $2 AND variant = $3`,
      [key.entity, key.modelName, key.variant, version],
    );
    await tx.query(
      `UPDATE vss_versions
          SET status = 'SERVING', indexed_at = coalesce(indexed_at, now()), updated_at = now()
        WHERE entity = $1 AND model_name = $2 AND version = $3 AND status = 'INGESTED'`,
      [key.entity, key.modelName, version],
    );
    if (previous === null || previous === version) {
      return { applied: true, previousReadVersion: previous, retiredVersions: [] };
    }
    const { rows: retired } = await tx.query<{ version: number }>(
      `UPDATE vss_versions v
          SET status = 'RETIRED', retired_at = now(), updated_at = now()
        WHERE v.entity = $1 AND v.model_name = $2 AND v.version = $3 AND v.status = 'SERVING'
          AND NOT EXISTS (
            SELECT 1 FROM vss_variants r
             WHERE r.entity = v.entity AND r.model_name = v.model_name
               AND (r.read_version = v.version OR r.write_version = v.version))
        RETURNING v.version`,
      [key.entity, key.modelName, previous],
    );
    return {
      applied: true,
      previousReadVersion: previous,
      retiredVersions: retired.map((row) => row.version),
    };
  });
}
