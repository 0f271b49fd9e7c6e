/**
 * The vss domain as the SQL store keeps it. Field names follow the design (vss.md) in camelCase;
 * the tables use the same names in snake_case. The value lists below are also the CHECK constraints
 * of the tables (migrations.ts), so a value outside them cannot be stored.
 */

export type JsonValue = string | number | boolean | null | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

export const DISTANCE_FUNCTIONS = ['DOT', 'COSINE', 'EUCLIDEAN'] as const;
export type DistanceFunction = (typeof DISTANCE_FUNCTIONS)[number];

/** The two named clusters; models and variants start in `experiment`. */
export const CLUSTERS = ['experiment', 'production'] as const;
export type Cluster = (typeof CLUSTERS)[number];

/**
 * The state of the model's variants as a whole (derived from theirs whenever an operation changes
 * them: admin/operations/model-state.ts): the least advanced of them, FAILED when one failed.
 */
export const MODEL_STATES = ['REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY', 'FAILED'] as const;
export type ModelState = (typeof MODEL_STATES)[number];

/** REGISTERED → INGESTING → INGESTED → INDEXING → READY; FAILED from any step (with its reason). */
export const VARIANT_STATES = ['REGISTERED', 'INGESTING', 'INGESTED', 'INDEXING', 'READY', 'FAILED'] as const;
export type VariantState = (typeof VARIANT_STATES)[number];

/**
 * One full ingestion of a model: INGESTING → INGESTED → SERVING (some variant reads it) → RETIRED
 * (no variant reads or writes it any more) → DROPPED (its data deleted); FAILED with a reason.
 */
export const VERSION_STATUSES = ['INGESTING', 'INGESTED', 'SERVING', 'RETIRED', 'DROPPED', 'FAILED'] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];

export const JOB_FREQUENCIES = ['FREQ_1H', 'FREQ_3H', 'FREQ_6H', 'FREQ_1D', 'FREQ_1W'] as const;
export type JobFrequency = (typeof JOB_FREQUENCIES)[number];

/** The VectorDb adapters (architecture.md): the in-process index, Qdrant and pgvector. */
export const VECTOR_DB_TYPES = ['EMBEDDED', 'QDRANT', 'PGVECTOR'] as const;
export type VectorDbType = (typeof VECTOR_DB_TYPES)[number];

export const OPERATION_KINDS = [
  'RESET_MODEL',
  /** A scheduled delta load: events into the current write version, no flip. */
  'DELTA_MODEL',
  'TRIGGER_MODEL_MACHINE',
  /** A variant registered on a model with data: membership from the embedding store, no re-ingestion. */
  'FILL_VARIANT',
  'PROMOTE_MODEL',
  'PROMOTE_VARIANT',
] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];
/** Kinds that act on one variant (and so name it). */
export const VARIANT_OPERATION_KINDS: readonly OperationKind[] = [
  'TRIGGER_MODEL_MACHINE',
  'FILL_VARIANT',
  'PROMOTE_VARIANT',
];

export const OPERATION_STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/** Per entity: where its embeddings and real-time attributes live. One store per entity. */
export interface Store {
  storeId: number;
  entity: string;
  dbConfId: string;
  embeddingsTable: string;
  aggregatorTable: string;
  createdAt: Date;
}

export type NewStore = Omit<Store, 'createdAt'>;

/** Source columns of the training data (the ingestion job reads these). */
export interface IngestionColumnMapping {
  idColumn: string;
  embeddingColumn: string;
  toBeIndexedColumn: string;
  searchEmbeddingColumn?: string;
}

export interface ModelConfig {
  distanceFunction: DistanceFunction;
  vectorDimension: number;
}

export interface ModelKey {
  entity: string;
  modelName: string;
}

export interface NewModel extends ModelKey {
  ingestionColumnMapping: IngestionColumnMapping;
  embeddingStoreEnabled: boolean;
  /** Seconds a stored embedding lives after its last write; 0: no expiry. */
  embeddingStoreTtlSeconds: number;
  mqId: number;
  modelConfig: ModelConfig;
  storeId: number;
  trainingDataPath: string;
}

export interface Model extends NewModel {
  state: ModelState;
  /** The state a FAILED model failed in: retrying resumes there. */
  failedState: ModelState | null;
  failureReason: string | null;
  cluster: Cluster;
  createdAt: Date;
  updatedAt: Date;
}

export interface VariantKey extends ModelKey {
  variant: string;
}

/** Result-cache lifetimes of a variant; 0 turns a level off. */
export interface CacheSettings {
  memoryTtlSeconds: number;
  distributedTtlSeconds: number;
  /** Fraction (0..1) by which each TTL is randomly shortened, so entries do not expire together. */
  ttlJitter: number;
}

export const DEFAULT_CACHE_SETTINGS: Readonly<CacheSettings> = {
  memoryTtlSeconds: 60,
  distributedTtlSeconds: 300,
  ttlJitter: 0.1,
};

/** A variant's `min_recall` when its registration gives none. */
export const DEFAULT_MIN_RECALL = 0.95;

export interface NewVariant extends VariantKey {
  vssFilter: JsonObject;
  vectorDbType: VectorDbType;
  vectorDbConfig: JsonObject;
  jobFrequency: JobFrequency;
  cache?: Partial<CacheSettings>;
  /**
   * Recall@k (0..1) a reset's new version must reach in every filter-selectivity bucket before
   * the variant is flipped to it (verify_recall); default {@link DEFAULT_MIN_RECALL}.
   */
  minRecall?: number;
}

export interface Variant extends VariantKey {
  vssFilter: JsonObject;
  vectorDbType: VectorDbType;
  vectorDbConfig: JsonObject;
  jobFrequency: JobFrequency;
  cache: CacheSettings;
  state: VariantState;
  /** The state a FAILED variant failed in: retrying resumes there. */
  failedState: VariantState | null;
  failureReason: string | null;
  /** The version served; null until the first version is indexed. */
  readVersion: number | null;
  /** The version ingestion writes into; null until the first reset. */
  writeVersion: number | null;
  /** See {@link NewVariant.minRecall}. */
  minRecall: number;
  /**
   * The version the variant read before its last flip: where `rollback-model` goes back to while
   * that version is kept (its grace period); null after a rollback or before a second version.
   */
  previousReadVersion: number | null;
  cluster: Cluster;
  /**
   * The HNSW width (ef) of the variant's searches as changed live (update-variant); null: the
   * `ef_search` of its vectordb_config, else the vector DB's default (model/search-width.ts).
   */
  efSearch: number | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface VersionKey extends ModelKey {
  version: number;
}

export interface ModelVersion extends VersionKey {
  status: VersionStatus;
  failureReason: string | null;
  /** Embedding events written into this version. */
  ingestedCount: number;
  /** Embedding events that failed (sent to retry). */
  failedCount: number;
  /** Vectors the index reports for this version, once measured. */
  indexedCount: number | null;
  createdAt: Date;
  ingestedAt: Date | null;
  /** When a variant first served this version. */
  indexedAt: Date | null;
  retiredAt: Date | null;
  /** The recall figures the reset's verify_recall step measured (admin/operations/recall-gate.ts). */
  recall: JsonObject | null;
  /** When a rollback took this version out of service (its variants went back to the previous one). */
  rolledBackAt: Date | null;
  updatedAt: Date;
}

export interface NewOperation extends ModelKey {
  kind: OperationKind;
  /** Required for the variant kinds (VARIANT_OPERATION_KINDS), absent for the others. */
  variant?: string;
  payload?: JsonObject;
  /** A client's key: submitting the same key again returns the first operation. */
  idempotencyKey?: string;
}

export interface Operation extends ModelKey {
  operationId: string;
  kind: OperationKind;
  variant: string | null;
  payload: JsonObject;
  /** What the operation produced (for example the reset's version map), once known. */
  result: JsonObject | null;
  status: OperationStatus;
  /** The state-machine step it is at (the admin's step names). */
  step: string | null;
  /** 0..1 */
  progress: number;
  /** Times it was started (first run plus retries). */
  attempts: number;
  lastError: string | null;
  idempotencyKey: string | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}
