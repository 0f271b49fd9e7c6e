/**
 * What an end-to-end test of the vss write path registers and sends, the way the admin and a batch
 * job will: a store, a model and its variants written through the store repositories (the admin API
 * comes later), and embedding events, EOF markers and real-time events encoded as producers send them.
 */
import type { Payload } from '../../src/platform/vectordb/index.js';
import type { DistanceFunction, JsonObject, VectorDbType, VssStore } from '../../src/vss/store/index.js';

export interface IngestModel {
  entity: string;
  modelName: string;
  embeddingsTable: string;
  aggregatorTable: string;
  dimension: number;
}

export interface IngestModelSpec {
  /** Letters, digits and "_": also the stem of the entity's table names. */
  entity: string;
  modelName?: string;
  dimension: number;
  distance?: DistanceFunction;
  /** Variant name → vss_filter. */
  variants: Record<string, JsonObject>;
  /** Result caches off (memory and distributed TTL 0), so every Search reads the vector DB. */
  cachesOff?: boolean;
  /** The variants' vector database; default EMBEDDED. */
  vectorDbType?: VectorDbType;
  /** The model's embedding_store_ttl, seconds; default 0 (no expiry). */
  ttlSeconds?: number;
}

/** Registers the store, model and variants, and points every variant's write version at version 1. */
export async function registerIngestModel(store: VssStore, spec: IngestModelSpec): Promise<IngestModel> {
  const model: IngestModel = {
    entity: spec.entity,
    modelName: spec.modelName ?? 'm',
    embeddingsTable: `emb_${spec.entity}`,
    aggregatorTable: `agg_${spec.entity}`,
    dimension: spec.dimension,
  };
  // Store ids are global integers: one from the entity name, so tests sharing a database differ.
  let storeId = 17;
  for (const char of spec.entity) storeId = (storeId * 31 + char.charCodeAt(0)) % 2_000_000_000;
  await store.stores.create({
    storeId: storeId + 1,
    entity: model.entity,
    dbConfId: 'main',
    embeddingsTable: model.embeddingsTable,
    aggregatorTable: model.aggregatorTable,
  });
  await store.models.create({
    entity: model.entity,
    modelName: model.modelName,
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: spec.ttlSeconds ?? 0,
    mqId: 1,
    modelConfig: { distanceFunction: spec.distance ?? 'COSINE', vectorDimension: spec.dimension },
    storeId: storeId + 1,
    trainingDataPath: 'file:///tmp/none',
  });
  for (const [variant, vssFilter] of Object.entries(spec.variants)) {
    await store.variants.create({
      entity: model.entity,
      modelName: model.modelName,
      variant,
      vssFilter,
      vectorDbType: spec.vectorDbType ?? 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
      ...(spec.cachesOff ? { cache: { memoryTtlSeconds: 0, distributedTtlSeconds: 0 } } : {}),
    });
  }
  await startVersion(store, model, Object.keys(spec.variants), 1);
  return model;
}

/** A reset: version `version` created and every named variant writing it (READY ones keep reading theirs). */
export async function startVersion(
  store: VssStore,
  model: IngestModel,
  variants: readonly string[],
  version: number,
): Promise<void> {
  await store.versions.create({ entity: model.entity, modelName: model.modelName, version });
  for (const variant of variants) {
    const key = { entity: model.entity, modelName: model.modelName, variant };
    const { state } = await store.variants.get(key);
    if (!(await store.variants.transition(key, state, 'INGESTING', { writeVersion: version }))) {
      throw new Error(`${variant} could not start version ${version}`);
    }
  }
}

/** The version is ingested and indexed: every named variant serves it. */
export async function serveVersion(
  store: VssStore,
  model: IngestModel,
  variants: readonly string[],
  version: number,
): Promise<void> {
  await store.versions.transition(
    { entity: model.entity, modelName: model.modelName, version },
    'INGESTING',
    'INGESTED',
  );
  for (const variant of variants) {
    const key = { entity: model.entity, modelName: model.modelName, variant };
    await store.variants.transition(key, 'INGESTING', 'INGESTED');
    await store.variants.transition(key, 'INGESTED', 'INDEXING');
    const flip = await store.flipReadVersion(key, version);
    if (!flip.applied) throw new Error(`${variant} could not flip to version ${version}`);
  }
}

export { seededVector } from './vector-fixtures.js';

export interface EmbeddingEventSpec {
  id: string;
  version?: number;
  vector: readonly number[];
  /** Variant → raw index flag; default every variant of `versions` true. */
  index?: Record<string, boolean>;
  /** Variant → version; default `{ organic: version }`. */
  versions?: Record<string, number>;
  payload?: Payload;
  jobId?: string;
  operation?: 'A' | 'D' | 'P';
}

/** An embedding event in the design's shape (vss.md, "Queue events"), as JSON text. */
export function embeddingEventJson(model: IngestModel, spec: EmbeddingEventSpec): string {
  const version = spec.version ?? 1;
  const versions = spec.versions ?? { organic: version };
  const index = spec.index ?? Object.fromEntries(Object.keys(versions).map((v) => [v, true]));
  return JSON.stringify({
    entity: model.entity,
    model_name: model.modelName,
    candidate_id: spec.id,
    version,
    ...(spec.jobId === undefined ? {} : { job_id: spec.jobId }),
    index_space: {
      variants_version_map: JSON.stringify(versions),
      variants_index_map: JSON.stringify(index),
      embedding: spec.vector,
      operation: spec.operation ?? 'A',
      ...(spec.payload === undefined ? {} : { payload: JSON.stringify(spec.payload) }),
    },
  });
}

/** The EOF marker of a job for one partition. */
export function eofMarkerJson(model: IngestModel, jobId: string, partition: number, version = 1): string {
  return JSON.stringify({
    eof: true,
    entity: model.entity,
    model_name: model.modelName,
    version,
    job_id: jobId,
    partition,
  });
}

/** A real-time event setting `label` to `value` on `ids`. */
export function realtimeEventJson(
  model: IngestModel,
  timestamp: number,
  updates: readonly (readonly [id: string, label: string, value: string])[],
): string {
  return JSON.stringify({
    timestamp,
    entity_label: model.entity,
    data: updates.map(([id, label, value]) => ({ id, label, value })),
  });
}

/** Every stored embedding row of a model version, in id order, a page at a time. */
export async function* storedRows(
  store: VssStore,
  table: string,
  modelName: string,
  version: number,
): AsyncGenerator<Awaited<ReturnType<VssStore['embeddings']['scan']>>[number]> {
  let afterId: string | undefined;
  for (;;) {
    const rows = await store.embeddings.scan(table, {
      modelName,
      version,
      limit: 5000,
      ...(afterId === undefined ? {} : { afterId }),
    });
    if (rows.length === 0) return;
    yield* rows;
    afterId = rows.at(-1)!.id;
  }
}
