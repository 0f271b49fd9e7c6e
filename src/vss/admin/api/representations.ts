/**
 * The admin API's JSON for the store's domain values: snake_case fields as in vss.md, dates as ISO
 * strings, JSON-holding fields as objects. The shapes are those of response-schemas.ts.
 */
import { searchWidthOf } from '../../model/index.js';
import type { Model, ModelVersion, Operation, Store, Variant } from '../../store/index.js';
import { rollbackWindow } from '../rollback-window.js';

type Json = Record<string, unknown>;

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

export function storeJson(store: Store): Json {
  return {
    store_id: store.storeId,
    entity: store.entity,
    db_conf_id: store.dbConfId,
    embeddings_table: store.embeddingsTable,
    aggregator_table: store.aggregatorTable,
    created_at: iso(store.createdAt),
  };
}

export function ingestionColumnMappingJson(model: Model): Json {
  const mapping = model.ingestionColumnMapping;
  return {
    id_column: mapping.idColumn,
    embedding_column: mapping.embeddingColumn,
    to_be_indexed_column: mapping.toBeIndexedColumn,
    ...(mapping.searchEmbeddingColumn === undefined
      ? {}
      : { search_embedding_column: mapping.searchEmbeddingColumn }),
  };
}

export function modelJson(model: Model): Json {
  return {
    entity: model.entity,
    model_name: model.modelName,
    store_id: model.storeId,
    ingestion_column_mapping: ingestionColumnMappingJson(model),
    embedding_store_enabled: model.embeddingStoreEnabled,
    embedding_store_ttl: model.embeddingStoreTtlSeconds,
    mq_id: model.mqId,
    model_config: {
      distance_function: model.modelConfig.distanceFunction,
      vector_dimension: model.modelConfig.vectorDimension,
    },
    training_data_path: model.trainingDataPath,
    state: model.state,
    failed_state: model.failedState,
    failure_reason: model.failureReason,
    cluster: model.cluster,
    created_at: iso(model.createdAt),
    updated_at: iso(model.updatedAt),
  };
}

export function variantJson(variant: Variant): Json {
  return {
    entity: variant.entity,
    model_name: variant.modelName,
    variant: variant.variant,
    vss_filter: variant.vssFilter,
    vectordb_type: variant.vectorDbType,
    vectordb_config: variant.vectorDbConfig,
    job_frequency: variant.jobFrequency,
    cache: {
      memory_ttl: variant.cache.memoryTtlSeconds,
      distributed_ttl: variant.cache.distributedTtlSeconds,
      ttl_jitter: variant.cache.ttlJitter,
    },
    state: variant.state,
    failed_state: variant.failedState,
    failure_reason: variant.failureReason,
    read_version: variant.readVersion,
    write_version: variant.writeVersion,
    min_recall: variant.minRecall,
    previous_read_version: variant.previousReadVersion,
    cluster: variant.cluster,
    ef_search: searchWidthOf(variant),
    created_at: iso(variant.createdAt),
    updated_at: iso(variant.updatedAt),
  };
}

function versionCountsJson(version: ModelVersion | undefined): Json | null {
  if (version === undefined) return null;
  return {
    version: version.version,
    status: version.status,
    ingested_count: version.ingestedCount,
    failed_count: version.failedCount,
    indexed_count: version.indexedCount,
  };
}

/** A variant in a listing: with the counts of the versions it reads and writes, and its rollback window. */
export function listedVariantJson(
  variant: Variant,
  versions: readonly ModelVersion[],
  rollbackGraceMs = 0,
): Json {
  const find = (number: number | null) =>
    number === null ? undefined : versions.find((v) => v.version === number);
  return {
    ...variantJson(variant),
    read_counts: versionCountsJson(find(variant.readVersion)),
    write_counts: versionCountsJson(find(variant.writeVersion)),
    rollback: rollbackWindow(variant, versions, rollbackGraceMs),
  };
}

export function versionJson(version: ModelVersion): Json {
  return {
    version: version.version,
    status: version.status,
    failure_reason: version.failureReason,
    ingested_count: version.ingestedCount,
    failed_count: version.failedCount,
    indexed_count: version.indexedCount,
    created_at: iso(version.createdAt),
    ingested_at: iso(version.ingestedAt),
    indexed_at: iso(version.indexedAt),
    retired_at: iso(version.retiredAt),
    recall: version.recall,
    rolled_back_at: iso(version.rolledBackAt),
    updated_at: iso(version.updatedAt),
  };
}

export function operationJson(operation: Operation): Json {
  return {
    operation_id: operation.operationId,
    kind: operation.kind,
    entity: operation.entity,
    model_name: operation.modelName,
    variant: operation.variant,
    status: operation.status,
    step: operation.step,
    progress: operation.progress,
    attempts: operation.attempts,
    last_error: operation.lastError,
    result: operation.result,
    payload: operation.payload,
    created_at: iso(operation.createdAt),
    updated_at: iso(operation.updatedAt),
    started_at: iso(operation.startedAt),
    finished_at: iso(operation.finishedAt),
  };
}
