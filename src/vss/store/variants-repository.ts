/**
 * Variants: registration (which also gives the entity's embeddings table the variant's
 * `to_be_indexed_<variant>` column, in the same transaction) and the variant state machine's
 * compare-and-set steps. The read-version flip lives in read-version.ts.
 */
import { invalidArgument, notFound } from '../../platform/errors.js';
import type { SqlQueryable, SqlValue } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import { EntityTables } from './entity-tables.js';
import { failFrom, retryFailed } from './failed-state.js';
import { resourceName, variantName } from './identifiers.js';
import { atomically, compareAndSet, integerField, json } from './sql-support.js';
import {
  type CacheSettings,
  type Cluster,
  DEFAULT_CACHE_SETTINGS,
  DEFAULT_MIN_RECALL,
  type JobFrequency,
  type JsonObject,
  type ModelKey,
  type NewVariant,
  type Variant,
  type VariantKey,
  type VariantState,
  type VectorDbType,
} from './types.js';

interface VariantRow {
  entity: string;
  model_name: string;
  variant: string;
  vss_filter: JsonObject;
  vectordb_type: VectorDbType;
  vectordb_config: JsonObject;
  job_frequency: JobFrequency;
  state: VariantState;
  failed_state: VariantState | null;
  failure_reason: string | null;
  read_version: number | null;
  write_version: number | null;
  cluster: Cluster;
  memory_cache_ttl: number;
  distributed_cache_ttl: number;
  cache_ttl_jitter: number;
  ef_search: number | null;
  min_recall: number;
  previous_read_version: number | null;
  created_at: Date;
  updated_at: Date;
}

const columns = `entity, model_name, variant, vss_filter, vectordb_type, vectordb_config, job_frequency,
  state, failed_state, failure_reason, read_version, write_version, cluster, memory_cache_ttl,
  distributed_cache_ttl, cache_ttl_jitter, ef_search, min_recall, previous_read_version, created_at, updated_at`;

export function toVariant(row: VariantRow): Variant {
  return {
    entity: row.entity,
    modelName: row.model_name,
    variant: row.variant,
    vssFilter: row.vss_filter,
    vectorDbType: row.vectordb_type,
    vectorDbConfig: row.vectordb_config,
    jobFrequency: row.job_frequency,
    cache: {
      memoryTtlSeconds: row.memory_cache_ttl,
      distributedTtlSeconds: row.distributed_cache_ttl,
      ttlJitter: row.cache_ttl_jitter,
    },
    state: row.state,
    failedState: row.failed_state,
    failureReason: row.failure_reason,
    readVersion: row.read_version,
    writeVersion: row.write_version,
    minRecall: Number(row.min_recall),
    previousReadVersion: row.previous_read_version,
    cluster: row.cluster,
    efSearch: row.ef_search,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export const variantLabel = (key: VariantKey) =>
  `variant ${key.variant} of model ${key.entity}/${key.modelName}`;

export class VariantsRepository {
  constructor(private readonly db: SqlQueryable) {}

  /**
   * Registers the variant (REGISTERED, in `experiment`) and adds its flag column to the entity's
   * embeddings table, atomically. The column is shared by every model of the entity: registering
   * the same variant name on another model finds it there.
   */
  async create(variant: NewVariant): Promise<Variant> {
    resourceName(variant.entity, 'entity');
    resourceName(variant.modelName, 'model_name');
    variantName(variant.variant, 'variant');
    const cache: CacheSettings = { ...DEFAULT_CACHE_SETTINGS, ...variant.cache };
    integerField(cache.memoryTtlSeconds, 'cache.memory_ttl', 0);
    integerField(cache.distributedTtlSeconds, 'cache.distributed_ttl', 0);
    const minRecall = variant.minRecall ?? DEFAULT_MIN_RECALL;
    if (!(Number.isFinite(minRecall) && minRecall >= 0 && minRecall <= 1)) {
      throw invalidArgument(`min_recall must be a number from 0 to 1, got ${minRecall}`, 'min_recall');
    }
    return atomically(this.db, async (tx) => {
      const { rows: stores } = await tx.query<{ embeddings_table: string }>(
        `SELECT s.embeddings_table
           FROM vss_models m JOIN vss_stores s ON s.store_id = m.store_id AND s.entity = m.entity
          WHERE m.entity = $1 AND m.model_name = $2
          FOR SHARE OF m`,
        [variant.entity, variant.modelName],
      );
      const store = stores[0];
      if (store === undefined) {
        throw notFound(`model ${variant.entity}/${variant.modelName} does not exist`, 'model_name');
      }
      const { rows } = await withConstraintErrors(
        () =>
          tx.query<VariantRow>(
            `INSERT INTO vss_variants (entity, model_name, variant, vss_filter, vectordb_type, vectordb_config,
               job_frequency, memory_cache_ttl, distributed_cache_ttl, cache_ttl_jitter, min_recall)
             VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9, $10, $11)
             RETURNING ${columns}`,
            [
              variant.entity,
              variant.modelName,
              variant.variant,
              json(variant.vssFilter),
              variant.vectorDbType,
              json(variant.vectorDbConfig),
              variant.jobFrequency,
              cache.memoryTtlSeconds,
              cache.distributedTtlSeconds,
              cache.ttlJitter,
              minRecall,
            ],
          ),
        { alreadyExists: `${variantLabel(variant)} already exists` },
      );
      // The transaction's own column cache: the column is only real once this commits.
      await new EntityTables(tx).addVariantColumn(store.embeddings_table, variant.variant);
      return toVariant(rows[0]!);
    });
  }

  async find(key: VariantKey): Promise<Variant | undefined> {
    const { rows } = await this.db.query<VariantRow>(
      `SELECT ${columns} FROM vss_variants WHERE entity = $1 AND model_name = $2 AND variant = $3`,
      [key.entity, key.modelName, key.variant],
    );
    return rows[0] === undefined ? undefined : toVariant(rows[0]);
  }

  async get(key: VariantKey): Promise<Variant> {
    const variant = await this.find(key);
    if (variant === undefined) throw notFound(`${variantLabel(key)} does not exist`, 'variant');
    return variant;
  }

  /** Every variant of every model (the serving configuration reads them in one statement). */
  async listAll(): Promise<Variant[]> {
    const { rows } = await this.db.query<VariantRow>(
      `SELECT ${columns} FROM vss_variants ORDER BY entity, model_name, variant`,
    );
    return rows.map(toVariant);
  }

  /**
   * Sets the HNSW width of the variant's searches (null: back to its vectordb_config's), live:
   * serving hears of the change as of any other (the configuration's NOTIFY) and searches with it
   * from then on. The stored variant, or undefined when there is none.
   */
  async setEfSearch(key: VariantKey, efSearch: number | null): Promise<Variant | undefined> {
    const { rows } = await this.db.query<VariantRow>(
      `UPDATE vss_variants SET ef_search = $4, updated_at = now()
        WHERE entity = $1 AND model_name = $2 AND variant = $3 RETURNING ${columns}`,
      [key.entity, key.modelName, key.variant, efSearch],
    );
    return rows[0] === undefined ? undefined : toVariant(rows[0]);
  }

  /** The model's variants, by name. */
  async list(model: ModelKey): Promise<Variant[]> {
    const { rows } = await this.db.query<VariantRow>(
      `SELECT ${columns} FROM vss_variants WHERE entity = $1 AND model_name = $2 ORDER BY variant`,
      [model.entity, model.modelName],
    );
    return rows.map(toVariant);
  }

  /**
   * Moves the variant from `from` to `to` (optionally pointing it at a new write version, as a reset
   * does); false when it is no longer in `from`. Use flipReadVersion to become READY on a new version.
   */
  async transition(
    key: VariantKey,
    from: VariantState,
    to: Exclude<VariantState, 'FAILED'>,
    changes: { writeVersion?: number } = {},
  ): Promise<boolean> {
    const set: Record<string, SqlValue> = { state: to, failed_state: null, failure_reason: null };
    if (changes.writeVersion !== undefined) {
      set.write_version = integerField(changes.writeVersion, 'write_version', 1);
    }
    return this.cas(key, { state: from }, set);
  }

  /** Marks the variant FAILED (remembering `from`, where a retry resumes); false when not in `from`. */
  async fail(key: VariantKey, from: Exclude<VariantState, 'FAILED'>, reason: string): Promise<boolean> {
    return failFrom((expect, set) => this.cas(key, expect, set), from, reason);
  }

  /** Puts a FAILED variant back in the state it failed in; that state, or undefined when not FAILED. */
  async retry(key: VariantKey): Promise<VariantState | undefined> {
    return retryFailed(await this.get(key), (expect, set) => this.cas(key, expect, set));
  }

  /**
   * The variant in `from` goes back to READY on the version it serves (an operation writing a newer
   * one failed: the failure is the operation's and that version's). It keeps the write version, so
   * events of that version are still accepted for a retry to complete. False when it is not in
   * `from` or serves no version.
   */
  async serveReadVersion(key: VariantKey, from: VariantState): Promise<boolean> {
    const variant = await this.get(key);
    if (variant.state !== from || variant.readVersion === null) return false;
    return this.cas(
      key,
      { state: from, read_version: variant.readVersion },
      { state: 'READY', failed_state: null, failure_reason: null },
    );
  }

  /** Moves the variant from `experiment` to `production`; false when it is already there. */
  async promote(key: VariantKey): Promise<boolean> {
    return this.cas(key, { cluster: 'experiment' }, { cluster: 'production' });
  }

  private async cas(key: VariantKey, expect: Record<string, SqlValue>, set: Record<string, SqlValue>) {
    const { applied, present } = await withConstraintErrors(
      () =>
        compareAndSet(this.db, {
          table: 'vss_variants',
          key: { entity: key.entity, model_name: key.modelName, variant: key.variant },
          expect,
          set,
        }),
      {
        missing: {
          vss_variants_write_version_fkey: {
            field: 'write_version',
            message: `write_version ${String(set.write_version)} of model ${key.entity}/${key.modelName} does not exist`,
          },
        },
      },
    );
    if (!present) throw notFound(`${variantLabel(key)} does not exist`, 'variant');
    return applied;
  }
}
