/**
 * Models: registration and the model's ingestion state. State changes are compare-and-set: each
 * names the state it expects and reports whether it applied, so two workers cannot both take a step.
 */
import { notFound } from '../../platform/errors.js';
import type { SqlQueryable } from '../../platform/sql/index.js';
import { withConstraintErrors } from './database-errors.js';
import { failFrom, retryFailed } from './failed-state.js';
import { resourceName } from './identifiers.js';
import { compareAndSet, integerField, json } from './sql-support.js';
import type {
  Cluster,
  IngestionColumnMapping,
  Model,
  ModelConfig,
  ModelKey,
  ModelState,
  NewModel,
} from './types.js';

interface ModelRow {
  entity: string;
  model_name: string;
  store_id: number;
  ingestion_column_mapping: {
    id_column: string;
    embedding_column: string;
    to_be_indexed_column: string;
    search_embedding_column?: string;
  };
  embedding_store_enabled: boolean;
  embedding_store_ttl: number;
  mq_id: number;
  model_config: { distance_function: ModelConfig['distanceFunction']; vector_dimension: number };
  training_data_path: string;
  state: ModelState;
  failed_state: ModelState | null;
  failure_reason: string | null;
  cluster: Cluster;
  created_at: Date;
  updated_at: Date;
}

const columns = `entity, model_name, store_id, ingestion_column_mapping, embedding_store_enabled,
  embedding_store_ttl, mq_id, model_config, training_data_path, state, failed_state, failure_reason,
  cluster, created_at, updated_at`;

function toModel(row: ModelRow): Model {
  const mapping = row.ingestion_column_mapping;
  const ingestionColumnMapping: IngestionColumnMapping = {
    idColumn: mapping.id_column,
    embeddingColumn: mapping.embedding_column,
    toBeIndexedColumn: mapping.to_be_indexed_column,
  };
  if (mapping.search_embedding_column !== undefined) {
    ingestionColumnMapping.searchEmbeddingColumn = mapping.search_embedding_column;
  }
  return {
    entity: row.entity,
    modelName: row.model_name,
    storeId: row.store_id,
    ingestionColumnMapping,
    embeddingStoreEnabled: row.embedding_store_enabled,
    embeddingStoreTtlSeconds: row.embedding_store_ttl,
    mqId: row.mq_id,
    modelConfig: {
      distanceFunction: row.model_config.distance_function,
      vectorDimension: row.model_config.vector_dimension,
    },
    trainingDataPath: row.training_data_path,
    state: row.state,
    failedState: row.failed_state,
    failureReason: row.failure_reason,
    cluster: row.cluster,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const modelLabel = (key: ModelKey) => `model ${key.entity}/${key.modelName}`;
const keyColumns = (key: ModelKey) => ({ entity: key.entity, model_name: key.modelName });

export class ModelsRepository {
  constructor(private readonly db: SqlQueryable) {}

  /** Registers a model (REGISTERED, in `experiment`) on its entity's store. */
  async create(model: NewModel): Promise<Model> {
    resourceName(model.entity, 'entity');
    resourceName(model.modelName, 'model_name');
    integerField(model.storeId, 'store_id', 1);
    integerField(model.mqId, 'mq_id', 0);
    integerField(model.embeddingStoreTtlSeconds, 'embedding_store_ttl', 0);
    integerField(model.modelConfig.vectorDimension, 'model_config.vector_dimension', 1, 65536);
    const mapping = model.ingestionColumnMapping;
    const { rows } = await withConstraintErrors(
      () =>
        this.db.query<ModelRow>(
          `INSERT INTO vss_models (entity, model_name, store_id, ingestion_column_mapping,
             embedding_store_enabled, embedding_store_ttl, mq_id, model_config, training_data_path)
           VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8::jsonb, $9)
           RETURNING ${columns}`,
          [
            model.entity,
            model.modelName,
            model.storeId,
            json({
              id_column: mapping.idColumn,
              embedding_column: mapping.embeddingColumn,
              to_be_indexed_column: mapping.toBeIndexedColumn,
              ...(mapping.searchEmbeddingColumn === undefined
                ? {}
                : { search_embedding_column: mapping.searchEmbeddingColumn }),
            }),
            model.embeddingStoreEnabled,
            model.embeddingStoreTtlSeconds,
            model.mqId,
            json({
              distance_function: model.modelConfig.distanceFunction,
              vector_dimension: model.modelConfig.vectorDimension,
            }),
            model.trainingDataPath,
          ],
        ),
      {
        alreadyExists: `${modelLabel(model)} already exists`,
        missing: {
          vss_models_store_fkey: {
            field: 'store_id',
            message: `store ${model.storeId} of entity ${model.entity} does not exist`,
          },
        },
      },
    );
    return toModel(rows[0]!);
  }

  async find(key: ModelKey): Promise<Model | undefined> {
    const { rows } = await this.db.query<ModelRow>(
      `SELECT ${columns} FROM vss_models WHERE entity = $1 AND model_name = $2`,
      [key.entity, key.modelName],
    );
    return rows[0] === undefined ? undefined : toModel(rows[0]);
  }

  async get(key: ModelKey): Promise<Model> {
    const model = await this.find(key);
    if (model === undefined) throw notFound(`${modelLabel(key)} does not exist`, 'model_name');
    return model;
  }

  /** All models, or the entity's. */
  async list(filter: { entity?: string } = {}): Promise<Model[]> {
    const { rows } =
      filter.entity === undefined
        ? await this.db.query<ModelRow>(`SELECT ${columns} FROM vss_models ORDER BY entity, model_name`)
        : await this.db.query<ModelRow>(
            `SELECT ${columns} FROM vss_models WHERE entity = $1 ORDER BY model_name`,
            [filter.entity],
          );
    return rows.map(toModel);
  }

  /** Moves the model from `from` to `to`; false when it is no longer in `from`. */
  async transition(key: ModelKey, from: ModelState, to: Exclude<ModelState, 'FAILED'>): Promise<boolean> {
    return this.cas(key, { state: from }, { state: to });
  }

  /** Marks the model FAILED (remembering `from`, where a retry resumes); false when not in `from`. */
  async fail(key: ModelKey, from: Exclude<ModelState, 'FAILED'>, reason: string): Promise<boolean> {
    return failFrom((expect, set) => this.cas(key, expect, set), from, reason);
  }

  /** Puts a FAILED model back in the state it failed in; that state, or undefined when not FAILED. */
  async retry(key: ModelKey): Promise<ModelState | undefined> {
    return retryFailed(await this.get(key), (expect, set) => this.cas(key, expect, set));
  }

  /**
   * Sets the state its variants give the model (FAILED with the state it failed in and why), in the
   * caller's transaction; the row is locked first, so concurrent operations on sibling variants
   * settle on their combined result. Unchanged rows are not rewritten.
   */
  async settle(
    key: ModelKey,
    derive: () => Promise<{ state: ModelState; failedState?: ModelState; reason?: string }>,
  ): Promise<void> {
    const locked = await this.db.query(
      'SELECT 1 FROM vss_models WHERE entity = $1 AND model_name = $2 FOR UPDATE',
      [key.entity, key.modelName],
    );
    if (locked.rowCount === 0) throw notFound(`${modelLabel(key)} does not exist`, 'model_name');
    const { state, failedState, reason } = await derive();
    const failed = state === 'FAILED';
    await this.db.query(
      `UPDATE vss_models SET state = $3, failed_state = $4, failure_reason = $5, updated_at = now()
        WHERE entity = $1 AND model_name = $2
          AND (state, failed_state, failure_reason) IS DISTINCT FROM ($3, $4, $5)`,
      [
        key.entity,
        key.modelName,
        state,
        failed ? (failedState ?? 'REGISTERED') : null,
        failed ? (reason ?? 'a variant failed') : null,
      ],
    );
  }

  /** Moves the model from `experiment` to `production`; false when it is already there. */
  async promote(key: ModelKey): Promise<boolean> {
    return this.cas(key, { cluster: 'experiment' }, { cluster: 'production' });
  }

  private async cas(
    key: ModelKey,
    expect: Record<string, string>,
    set: Record<string, string | null>,
  ): Promise<boolean> {
    const { applied, present } = await withConstraintErrors(() =>
      compareAndSet(this.db, { table: 'vss_models', key: keyColumns(key), expect, set }),
    );
    if (!present) throw notFound(`${modelLabel(key)} does not exist`, 'model_name');
    return applied;
  }
}
