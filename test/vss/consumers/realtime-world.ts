/**
 * A vss world for the real-time processor tests: an entity of its own (store, model `m`, variants
 * `organic` with no criteria and `live` admitting `is_live == "true"`, default "false"), model
 * versions written the way ingestion writes them (embeddings rows with the raw index flags, and one
 * point per id whose payload holds the attributes and the membership flags), and the processor.
 */

import { EmbeddedVectorDb, type Payload } from '../../../src/platform/vectordb/index.js';
import { RealtimeProcessor } from '../../../src/vss/consumers/realtime-processor.js';
import {
  collectionName,
  compileMembership,
  isMember,
  mergeAttributes,
} from '../../../src/vss/model/index.js';
import type { VssStore } from '../../../src/vss/store/index.js';
import { clusteredFixture, type VectorFixture } from '../../support/vector-fixtures.js';

export const MODEL = 'm';
export const DIMENSION = 8;
export const COUNT = 40;
export const LIVE_FILTER = {
  criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }],
};
const liveRule = compileMembership(LIVE_FILTER);

let sequence = 0;

export interface SeedPoint {
  /** The raw index flag (`variants_index_map`) for both variants; default true. */
  indexed?: boolean;
  /** Payload of the embedding event (merged over the aggregator row). */
  payload?: Payload;
}

export interface RealtimeWorld {
  entity: string;
  embeddingsTable: string;
  aggregatorTable: string;
  store: VssStore;
  db: EmbeddedVectorDb;
  fixture: VectorFixture;
  processor: RealtimeProcessor;
  /** The collection of a version of model `m`. */
  collection(version: number): string;
  /** Writes version `version`: embeddings rows and points for ids `p0`..`p<COUNT-1>` (or `only`). */
  writeVersion(version: number, seed?: (i: number) => SeedPoint, only?: readonly number[]): Promise<void>;
  /** The points' payloads in a version, by id (absent: no point). */
  payloads(version: number, ids: readonly string[]): Promise<Map<string, Payload>>;
  /** Encodes an event as the queue would deliver it and runs parse + apply, as the runner does. */
  deliver(...events: unknown[]): Promise<(string | undefined)[]>;
  close(): Promise<void>;
}

/** A fresh entity on `store`, with its own embedded vector DB. Result caches of `live` are off. */
export async function openRealtimeWorld(store: VssStore): Promise<RealtimeWorld> {
  sequence += 1;
  const n = sequence;
  const entity = `rt${n}`;
  const embeddingsTable = `emb_rt${n}`;
  const aggregatorTable = `agg_rt${n}`;
  await store.stores.create({
    storeId: 9000 + n,
    entity,
    dbConfId: 'main',
    embeddingsTable,
    aggregatorTable,
  });
  await store.models.create({
    entity,
    modelName: MODEL,
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: 0,
    mqId: 1,
    modelConfig: { distanceFunction: 'COSINE', vectorDimension: DIMENSION },
    storeId: 9000 + n,
    trainingDataPath: 'file:///tmp/none',
  });
  for (const [variant, vssFilter] of [
    ['organic', {}],
    ['live', LIVE_FILTER],
  ] as const) {
    await store.variants.create({
      entity,
      modelName: MODEL,
      variant,
      vssFilter,
      vectorDbType: 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
      cache: { memoryTtlSeconds: 0, distributedTtlSeconds: 0 },
    });
  }
  const fixture = clusteredFixture({ count: COUNT, dimension: DIMENSION, clusters: 4, seed: 40 + n });
  const db = await EmbeddedVectorDb.open();
  const processor = new RealtimeProcessor({ store, vectorDb: db });
  const collection = (version: number) => collectionName(entity, MODEL, version);

  return {
    entity,
    embeddingsTable,
    aggregatorTable,
    store,
    db,
    fixture,
    processor,
    collection,
    async writeVersion(version, seed = () => ({}), only) {
      const indexes = only ?? fixture.ids.map((_, i) => i);
      const ids = indexes.map((i) => fixture.ids[i]!);
      const rows = await store.aggregator.read(aggregatorTable, ids);
      await store.embeddings.upsert(embeddingsTable, {
        modelName: MODEL,
        version,
        rows: indexes.map((i) => {
          const indexed = seed(i).indexed ?? true;
          return {
            id: fixture.ids[i]!,
            embedding: fixture.vector(i),
            toBeIndexed: { organic: indexed, live: indexed },
          };
        }),
      });
      const name = collection(version);
      await db.createCollection({ name, dimension: DIMENSION, distance: 'COSINE' });
      await db.upsert(
        name,
        indexes.map((i) => {
          const { indexed = true, payload } = seed(i);
          const attributes = mergeAttributes(payload, rows.get(fixture.ids[i]!));
          return {
            id: fixture.ids[i]!,
            vector: fixture.vector(i),
            payload: {
              ...attributes,
              to_be_indexed_organic: indexed,
              to_be_indexed_live: isMember(liveRule, indexed, attributes),
            },
          };
        }),
      );
      await db.waitForIndexing(name);
    },
    async payloads(version, ids) {
      const points = await db.getPoints(collection(version), ids, { withVector: false });
      const found = new Map<string, Payload>();
      points.forEach((point, i) => {
        if (point !== undefined) found.set(ids[i]!, point.payload ?? {});
      });
      return found;
    },
    async deliver(...events) {
      const parsed = events.map((event) => processor.parse(new TextEncoder().encode(JSON.stringify(event))));
      return processor.apply(parsed);
    },
    async close() {
      await db.close();
    },
  };
}

/** Moves a variant through a first ingestion of `version` to READY on it. */
export async function serveVersion(store: VssStore, entity: string, variant: string, version: number) {
  const key = { entity, modelName: MODEL, variant };
  await store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: version });
  await store.variants.transition(key, 'INGESTING', 'INGESTED');
  await store.variants.transition(key, 'INGESTED', 'INDEXING');
  const flip = await store.flipReadVersion(key, version);
  if (!flip.applied) throw new Error(`flip of ${variant} to version ${version} not applied`);
}

/** Records a version of model `m` and marks it ingested (the state a served version is flipped from). */
export async function ingestedVersion(store: VssStore, entity: string, version: number) {
  await store.versions.create({ entity, modelName: MODEL, version });
  await store.versions.transition({ entity, modelName: MODEL, version }, 'INGESTING', 'INGESTED');
}

/** A design-shape real-time event. */
export function realtimeEvent(
  entity: string,
  timestamp: number,
  data: readonly (readonly [id: string, label: string, value: string])[],
) {
  return {
    timestamp,
    entity_label: entity,
    data: data.map(([id, label, value]) => ({ id, label, value })),
  };
}
