/**
 * The reference online feature store: a registry of typed features, storage in memory or Redis, the
 * `retrieve.FeatureService` gRPC API, and a bulk loader for CSV, JSON Lines and Parquet.
 */
export {
  type DemoData,
  type DemoDataOptions,
  type DemoEntity,
  demoRegistry,
  demoRegistryDocument,
  generateDemoData,
  seedDemoData,
  seededRandom,
  toColumnRecords,
} from './demo-data.js';
export { encodeGroupValues, type FeatureRowInput, toStoredRow, writeFeatureRows } from './entity-rows.js';
export { FeatureRetriever, type FeatureRetrieverOptions } from './feature-retriever.js';
export { encodeFeatureValue, type FeatureType } from './feature-value.js';
export { MAX_ROWS_PER_CALL } from './feature-writer-service.js';
export {
  type FeatureStorePart,
  type FeatureStorePartOptions,
  startFeatureStorePart,
} from './featurestore-part.js';
export {
  type FeatureStoreServerOptions,
  type RunningFeatureStore,
  startFeatureStore,
} from './featurestore-server.js';
export { decodeGroup, encodeGroup } from './group-codec.js';
export {
  type BadRow,
  describeBadRow,
  type FileLoadReport,
  LoadAbortedError,
  type LoadFormat,
  type LoadOptions,
  type LoadReport,
  loadFeatureFiles,
} from './loader.js';
export { MemoryFeatureStore } from './memory-feature-store.js';
export { MirroredFeatureStore } from './mirrored-feature-store.js';
export { type FeatureStoreOptions, openFeatureStore } from './open-feature-store.js';
export type { ProgressOptions, ProgressStream } from './progress.js';
export { type PlannedColumn, planQuery, type QueryPlan } from './query-plan.js';
export { RedisFeatureStore, type RedisFeatureStoreOptions } from './redis-feature-store.js';
export {
  type EntityDefinition,
  type EntityDocument,
  type FeatureDefinition,
  type FeatureDocument,
  type FeatureGroupDefinition,
  type FeatureGroupDocument,
  FeatureRegistry,
  type RegistryDocument,
} from './registry.js';
export { RemoteFeatureStore, type RemoteFeatureStoreOptions } from './remote-feature-store.js';
export { type Registration, ServedRegistry } from './served-registry.js';
export { featureStoreMigrations, SqlFeatureStore } from './sql-feature-store.js';
export { type FeatureStore, rowKey, type StoredRow, type WriteOptions } from './store.js';
