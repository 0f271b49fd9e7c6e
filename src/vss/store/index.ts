/**
 * vss SQL store: control-plane state (stores, models, variants, versions, operations) and the
 * per-entity embedding and aggregator tables, over the SqlClient port. `openVssStore(sql)` migrates
 * and returns the repositories; `store.transaction(fn)` binds them all to one transaction.
 */
export type {
  AggregatorRepository,
  AppliedRow,
  Attributes,
  AttributeUpdate,
  TimedAttributeUpdate,
} from './aggregator-repository.js';
export type {
  EmbeddingBatch,
  EmbeddingIds,
  EmbeddingRow,
  EmbeddingScan,
  EmbeddingsRepository,
  ExpiredKey,
  IndexFlags,
  StoredEmbedding,
} from './embeddings-repository.js';
export { APPLIED_AT_COLUMN, attributeColumn, type EntityTables } from './entity-tables.js';
export {
  attributeLabel,
  resourceName,
  type SqlIdentifier,
  tableName,
  variantColumn,
  variantName,
} from './identifiers.js';
export {
  INGESTION_STATUSES,
  type IngestedEvent,
  type IngestionCounts,
  type IngestionJobKey,
  type IngestionQuery,
  type IngestionRecord,
  IngestionRepository,
  type IngestionStatus,
  type MarkerOutcome,
} from './ingestion-repository.js';
export type { LiveRecallRepository, LiveRecallWindow } from './live-recall-repository.js';
export { VSS_CONFIG_CHANNEL, VSS_MIGRATIONS_TABLE, vssMigrations } from './migrations.js';
export type { ModelsRepository } from './models-repository.js';
export type { CreatedOperation, OperationFilter, OperationsRepository } from './operations-repository.js';
export type { ReadVersionFlip } from './read-version.js';
export type { ModelRollback, RolledBackVariant } from './rollback.js';
export type { StoresRepository } from './stores-repository.js';
export * from './types.js';
export type { VariantsRepository } from './variants-repository.js';
export type { VersionsRepository } from './versions-repository.js';
export { migrateVssStore, openVssStore, type VssRepositories, VssStore } from './vss-store.js';
