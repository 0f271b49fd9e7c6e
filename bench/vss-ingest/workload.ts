/**
 * What bench/vss-ingest ingests: seeded 128-d embedding events in the design's shape (two variants on
 * one collection, a small payload, job id `bench`), the EOF marker of each partition, and the
 * registration (store, model, version, variants) the consumers need before they accept them.
 *
 * Vector values are written with six decimals ("-0.123456"), as a producer that rounds would send
 * them; the stored float32 is `Math.fround` of that number, so a sample can be checked exactly.
 */
import type { Payload } from '../../src/platform/vectordb/index.js';
import type { VssStore } from '../../src/vss/store/index.js';

export const MODEL = 'm';
export const VERSION = 1;
export const JOB_ID = 'bench';
/** `organic` takes every candidate; `live` only those whose payload says `is_live: "true"`. */
export const VARIANTS = ['organic', 'live'] as const;

export interface Workload {
  entity: string;
  dimension: number;
  partitions: number;
  /** One per event, in publish order; `vectors[i]` is event i's embedding as stored. */
  vectors: Float32Array[];
  ids: string[];
}

/** Candidate ids are spread over the partitions by the queue's key hash (key = candidate id). */
export function candidateId(i: number): string {
  return `cand-${i}`;
}

/** Deterministic vectors (xorshift32 per event), six decimals each; `text` is the JSON array. */
export function vectorOf(i: number, dimension: number): { vector: Float32Array; text: string } {
  let state = Math.imul(i + 1, 2654435761) >>> 0 || 1;
  const vector = new Float32Array(dimension);
  const parts: string[] = new Array(dimension);
  for (let d = 0; d < dimension; d++) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const value = Math.round((state / 2 ** 32 - 0.5) * 1e6) / 1e6;
    vector[d] = value;
    parts[d] = String(value);
  }
  return { vector, text: `[${parts.join(',')}]` };
}

/** The payload event i carries: a third of the candidates are not live. */
export function payloadOf(i: number): Payload {
  return { brand: i % 3 === 0 ? 'a' : 'b', is_live: i % 3 === 2 ? 'false' : 'true' };
}

const versionMap = JSON.stringify(JSON.stringify(Object.fromEntries(VARIANTS.map((v) => [v, VERSION]))));
const indexMap = JSON.stringify(JSON.stringify(Object.fromEntries(VARIANTS.map((v) => [v, true]))));

/** Event i's bytes, as a producer of the design's shape sends them (maps and payload as JSON strings). */
export function eventBytes(entity: string, i: number, vectorText: string): Uint8Array {
  const payload = JSON.stringify(JSON.stringify(payloadOf(i)));
  return Buffer.from(
    `{"entity":${JSON.stringify(entity)},"model_name":"${MODEL}","candidate_id":"${candidateId(i)}","version":${VERSION},"job_id":"${JOB_ID}","index_space":{"variants_version_map":${versionMap},"variants_index_map":${indexMap},"embedding":${vectorText},"operation":"A","payload":${payload}}}`,
  );
}

export function eofBytes(entity: string, partition: number): Uint8Array {
  return Buffer.from(
    JSON.stringify({ eof: true, entity, model_name: MODEL, version: VERSION, job_id: JOB_ID, partition }),
  );
}

/** The events' vectors and ids (the bytes are made per publish, so they need not all live at once). */
export function workload(entity: string, events: number, dimension: number, partitions: number): Workload {
  const vectors: Float32Array[] = new Array(events);
  const ids: string[] = new Array(events);
  for (let i = 0; i < events; i++) {
    vectors[i] = vectorOf(i, dimension).vector;
    ids[i] = candidateId(i);
  }
  return { entity, dimension, partitions, vectors, ids };
}

/** Embedding-store and aggregator table names of an entity. */
export function tablesOf(entity: string): { embeddings: string; aggregator: string } {
  return { embeddings: `emb_${entity}`, aggregator: `agg_${entity}` };
}

/**
 * Registers the entity's store, model `m` (COSINE, the workload's dimension, embedding store on, no
 * TTL), version 1 and both variants (embedded vector DB) writing version 1, as the admin would.
 */
export async function registerModel(store: VssStore, entity: string, dimension: number, storeId: number) {
  const tables = tablesOf(entity);
  await store.stores.create({
    storeId,
    entity,
    dbConfId: 'main',
    embeddingsTable: tables.embeddings,
    aggregatorTable: tables.aggregator,
  });
  await store.models.create({
    entity,
    modelName: MODEL,
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: 0,
    mqId: 1,
    modelConfig: { distanceFunction: 'COSINE', vectorDimension: dimension },
    storeId,
    trainingDataPath: 'file:///tmp/none',
  });
  await store.versions.create({ entity, modelName: MODEL, version: VERSION });
  for (const variant of VARIANTS) {
    const filter =
      variant === 'live'
        ? { criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }] }
        : {};
    await store.variants.create({
      entity,
      modelName: MODEL,
      variant,
      vssFilter: filter as never,
      vectorDbType: 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
    });
    const key = { entity, modelName: MODEL, variant };
    await store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: VERSION });
  }
}

/** The points the processor writes for event i (payload with each variant's membership flag). */
export function pointPayload(i: number): Payload {
  const payload = payloadOf(i);
  return { ...payload, to_be_indexed_organic: true, to_be_indexed_live: payload.is_live === 'true' };
}
