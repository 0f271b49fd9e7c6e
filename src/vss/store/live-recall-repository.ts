/**
 * Live recall samples (migration 13): serving records each `vss_avg_recall` measurement with the
 * version it was measured on; the admin's automatic rollback reads a variant's mean over a window
 * (admin/operations/recall-watch.ts), from whichever processes served the queries. Windows and ages
 * are judged by the database's clock.
 */
import type { SqlQueryable } from '../../platform/sql/index.js';
import { integerField } from './sql-support.js';
import type { VariantKey } from './types.js';

export interface LiveRecallWindow {
  samples: number;
  /** NaN when there are none. */
  mean: number;
}

export class LiveRecallRepository {
  constructor(private readonly db: SqlQueryable) {}

  /** One measurement (0..1) of a query of `key` served from `version`. */
  async record(key: VariantKey, version: number, recall: number): Promise<void> {
    integerField(version, 'version', 1);
    const value = Math.min(1, Math.max(0, recall));
    await this.db.query(
      `INSERT INTO vss_live_recall (entity, model_name, variant, version, recall) VALUES ($1, $2, $3, $4, $5)`,
      [key.entity, key.modelName, key.variant, version, value],
    );
  }

  /** The samples of `key` on `version` measured in the last `windowMs`, and their mean. */
  async window(key: VariantKey, version: number, windowMs: number): Promise<LiveRecallWindow> {
    integerField(windowMs, 'window_ms', 0, Number.MAX_SAFE_INTEGER);
    const { rows } = await this.db.query<{ samples: number; mean: number | null }>(
      `SELECT count(*)::integer AS samples, avg(recall)::double precision AS mean FROM vss_live_recall
        WHERE entity = $1 AND model_name = $2 AND variant = $3 AND version = $4
          AND measured_at >= now() - make_interval(secs => $5::double precision / 1000)`,
      [key.entity, key.modelName, key.variant, version, windowMs],
    );
    const row = rows[0];
    return {
      samples: Number(row?.samples ?? 0),
      mean: row?.mean === null || row === undefined ? Number.NaN : Number(row.mean),
    };
  }

  /** Deletes samples older than `ageMs`; resolves to the number deleted. */
  async prune(ageMs: number): Promise<number> {
    integerField(ageMs, 'age_ms', 0, Number.MAX_SAFE_INTEGER);
    const { rowCount } = await this.db.query(
      `DELETE FROM vss_live_recall WHERE measured_at < now() - make_interval(secs => $1::double precision / 1000)`,
      [ageMs],
    );
    return rowCount;
  }
}
