/**
 * register-store, register-model and register-variant with the admin API's repeat semantics:
 * registering the same body again returns the stored resource (`created: false`); a different body
 * under an existing name is ALREADY_EXISTS (409) naming the fields that differ. The repositories
 * validate identifiers and create the tables and columns; the insert goes first and the comparison
 * only on a clash, so two identical requests racing both succeed with one resource.
 */
import { isLatticeError, LatticeError } from '../../../platform/errors.js';
import { compileMembership } from '../../model/index.js';
import {
  attributeLabel,
  DEFAULT_CACHE_SETTINGS,
  DEFAULT_MIN_RECALL,
  type Model,
  type NewModel,
  type NewStore,
  type NewVariant,
  type Store,
  type Variant,
  type VssStore,
} from '../../store/index.js';
import { canonicalJson } from './canonical-json.js';
import type {
  RegisterModelRequest,
  RegisterStoreRequest,
  RegisterVariantRequest,
} from './request-schemas.js';

export interface Registered<T> {
  resource: T;
  /** False when an identical registration was already stored. */
  created: boolean;
}

/** The request fields whose stored value differs, in request order. */
function differences(pairs: ReadonlyArray<readonly [field: string, stored: unknown, requested: unknown]>) {
  return pairs
    .filter(([, stored, requested]) => canonicalJson(stored) !== canonicalJson(requested))
    .map(([f]) => f);
}

function differentBody(what: string, fields: readonly string[]): LatticeError {
  return new LatticeError(
    'ALREADY_EXISTS',
    `${what} is already registered with a different ${fields.join(', ')}: register it under another name, or send the stored values`,
    { field: fields[0] },
  );
}

/**
 * Runs `create`; on ALREADY_EXISTS finds what is stored under the name and compares it. Anything else
 * (validation, a missing parent, a clash with another resource's name) propagates as it is.
 */
async function registerOnce<T>(
  create: () => Promise<T>,
  existing: () => Promise<T | undefined>,
  compare: (stored: T) => { what: string; differing: string[] },
): Promise<Registered<T>> {
  try {
    return { resource: await create(), created: true };
  } catch (err) {
    if (!isLatticeError(err, 'ALREADY_EXISTS')) throw err;
    const stored = await existing();
    if (stored === undefined) throw err;
    const { what, differing } = compare(stored);
    if (differing.length > 0) throw differentBody(what, differing);
    return { resource: stored, created: false };
  }
}

export function registerStore(store: VssStore, body: RegisterStoreRequest): Promise<Registered<Store>> {
  const wanted: NewStore = {
    storeId: body.store_id,
    entity: body.entity,
    dbConfId: body.db_conf_id,
    embeddingsTable: body.embeddings_table,
    aggregatorTable: body.aggregator_table,
  };
  return registerOnce(
    () => store.stores.create(wanted),
    async () => (await store.stores.find(wanted.storeId)) ?? (await store.stores.findByEntity(wanted.entity)),
    (stored) => ({
      what: `store ${stored.storeId} of entity ${stored.entity}`,
      differing: differences([
        ['store_id', stored.storeId, wanted.storeId],
        ['entity', stored.entity, wanted.entity],
        ['db_conf_id', stored.dbConfId, wanted.dbConfId],
        ['embeddings_table', stored.embeddingsTable, wanted.embeddingsTable],
        ['aggregator_table', stored.aggregatorTable, wanted.aggregatorTable],
      ]),
    }),
  );
}

export function registerModel(store: VssStore, body: RegisterModelRequest): Promise<Registered<Model>> {
  const mapping = body.ingestion_column_mapping;
  const wanted: NewModel = {
    entity: body.entity,
    modelName: body.model_name,
    ingestionColumnMapping: {
      idColumn: mapping.id_column,
      embeddingColumn: mapping.embedding_column,
      toBeIndexedColumn: mapping.to_be_indexed_column,
      ...(mapping.search_embedding_column === undefined
        ? {}
        : { searchEmbeddingColumn: mapping.search_embedding_column }),
    },
    embeddingStoreEnabled: body.embedding_store_enabled,
    embeddingStoreTtlSeconds: body.embedding_store_ttl,
    mqId: body.mq_id,
    modelConfig: {
      distanceFunction: body.model_config.distance_function,
      vectorDimension: body.model_config.vector_dimension,
    },
    storeId: body.store_id,
    trainingDataPath: body.training_data_path,
  };
  return registerOnce(
    () => store.models.create(wanted),
    () => store.models.find(wanted),
    (stored) => ({
      what: `model ${stored.entity}/${stored.modelName}`,
      differing: differences([
        ['ingestion_column_mapping', stored.ingestionColumnMapping, wanted.ingestionColumnMapping],
        ['embedding_store_enabled', stored.embeddingStoreEnabled, wanted.embeddingStoreEnabled],
        ['embedding_store_ttl', stored.embeddingStoreTtlSeconds, wanted.embeddingStoreTtlSeconds],
        ['mq_id', stored.mqId, wanted.mqId],
        ['model_config', stored.modelConfig, wanted.modelConfig],
        ['store_id', stored.storeId, wanted.storeId],
        ['training_data_path', stored.trainingDataPath, wanted.trainingDataPath],
      ]),
    }),
  );
}

/**
 * Checks what the schema cannot: the filter's rules (ops and values, as ingestion compiles them) and
 * that each criterion's `column_name` is an attribute label, since the aggregator keeps attributes
 * as columns of that name.
 */
function checkVssFilter(vssFilter: Record<string, unknown>): void {
  compileMembership(vssFilter, 'vss_filter');
  const criteria = Array.isArray(vssFilter.criteria) ? vssFilter.criteria : [];
  criteria.forEach((criterion: { column_name?: unknown }, i) => {
    attributeLabel(criterion.column_name, `vss_filter.criteria[${i}].column_name`);
  });
}

export function registerVariant(store: VssStore, body: RegisterVariantRequest): Promise<Registered<Variant>> {
  checkVssFilter(body.vss_filter);
  const cache = {
    memoryTtlSeconds: body.cache?.memory_ttl ?? DEFAULT_CACHE_SETTINGS.memoryTtlSeconds,
    distributedTtlSeconds: body.cache?.distributed_ttl ?? DEFAULT_CACHE_SETTINGS.distributedTtlSeconds,
    ttlJitter: body.cache?.ttl_jitter ?? DEFAULT_CACHE_SETTINGS.ttlJitter,
  };
  const wanted: NewVariant = {
    entity: body.entity,
    modelName: body.model_name,
    variant: body.variant,
    vssFilter: body.vss_filter as NewVariant['vssFilter'],
    vectorDbType: body.vectordb_type,
    vectorDbConfig: body.vectordb_config as NewVariant['vectorDbConfig'],
    jobFrequency: body.job_frequency,
    cache,
    minRecall: body.min_recall ?? DEFAULT_MIN_RECALL,
  };
  return registerOnce(
    () => store.variants.create(wanted),
    () => store.variants.find(wanted),
    (stored) => ({
      what: `variant ${stored.variant} of model ${stored.entity}/${stored.modelName}`,
      differing: differences([
        ['vss_filter', stored.vssFilter, wanted.vssFilter],
        ['vectordb_type', stored.vectorDbType, wanted.vectorDbType],
        ['vectordb_config', stored.vectorDbConfig, wanted.vectorDbConfig],
        ['job_frequency', stored.jobFrequency, wanted.jobFrequency],
        ['min_recall', stored.minRecall, wanted.minRecall],
        // The column is float4: compare the jitter as stored.
        [
          'cache',
          { ...stored.cache, ttlJitter: Math.fround(stored.cache.ttlJitter) },
          { ...cache, ttlJitter: Math.fround(cache.ttlJitter) },
        ],
      ]),
    }),
  );
}
