/**
 * A vss world for the ingestion processor tests: an entity of its own on the given store (store,
 * model `m` of dimension 4), variants `organic` (no criteria), `live` (`is_live == "true"`, default
 * "false"), `brand_a` (`brand == "a"`, no default) and `remote` (on a Qdrant cluster, which these
 * consumers do not write), version 1 being written by all of them, an embedded vector DB, and the
 * processors behind one ingestion handler, driven the way the consumer runner drives them.
 */
import { EmbeddedVectorDb, type Payload, type StoredPoint } from '../../../src/platform/vectordb/index.js';
import type { EmbeddingEvent } from '../../../src/vss/consumers/embedding-event.js';
import { EmbeddingProcessor } from '../../../src/vss/consumers/embedding-processor.js';
import { EofProcessor } from '../../../src/vss/consumers/eof-processor.js';
import { RejectedEvent } from '../../../src/vss/consumers/event-batch.js';
import { IngestionHandler } from '../../../src/vss/consumers/ingestion-handler.js';
import {
  type IngestionMessage,
  parseIngestionMessage,
} from '../../../src/vss/consumers/ingestion-message.js';
import { ModelCatalog } from '../../../src/vss/consumers/model-catalog.js';
import { collectionName } from '../../../src/vss/model/index.js';
import type { IngestionRecord, StoredEmbedding, VssStore } from '../../../src/vss/store/index.js';
import { seededVector } from '../../support/vector-fixtures.js';

/** An embedding event as the ingestion topic's consumer parses it (the one parse entry production runs). */
export function parsedEmbedding(event: unknown): EmbeddingEvent {
  const message = parseIngestionMessage(Buffer.from(JSON.stringify(event)));
  if (message.kind !== 'embedding') throw new Error('not an embedding event');
  return message.event;
}

export const MODEL = 'm';
export const DIMENSION = 4;
/** Partitions of the ingestion topic the EOF processor expects markers from. */
export const PARTITIONS = 3;
export const VARIANTS = ['organic', 'live', 'brand_a', 'remote'] as const;

const FILTERS: Record<(typeof VARIANTS)[number], Record<string, unknown>> = {
  organic: {},
  live: { criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }] },
  brand_a: { criteria: [{ column_name: 'brand', filter_value: 'a' }] },
  remote: {},
};

let sequence = 0;

export interface WorldOptions {
  /** The model's embedding_store_ttl (seconds); default 0. */
  ttlSeconds?: number;
  embeddingStoreEnabled?: boolean;
  /** Told of each completed ingestion job. */
  onComplete?: (record: IngestionRecord) => void;
}

/** What the store and the collection hold for some ids, comparable across worlds. */
export interface Snapshot {
  rows: Record<
    string,
    { embedding: number[]; searchEmbedding: number[]; toBeIndexed: Record<string, boolean> }
  >;
  points: Record<string, { vector: number[]; payload: Payload }>;
}

export interface IngestionWorld {
  entity: string;
  embeddingsTable: string;
  aggregatorTable: string;
  store: VssStore;
  db: EmbeddedVectorDb;
  handler: IngestionHandler;
  embeddings: EmbeddingProcessor;
  markers: EofProcessor;
  collection(version?: number): string;
  /** Encodes messages as a producer would and runs parse + apply as the runner does: one outcome each. */
  deliver(...messages: unknown[]): Promise<(string | undefined)[]>;
  /** The store row of an id in a version (live rows only). */
  row(id: string, version?: number): Promise<StoredEmbedding | undefined>;
  point(id: string, version?: number): Promise<StoredPoint | undefined>;
  /** Ids a variant's search finds near `vector` (its membership flag as the filter), best first. */
  search(variant: string, vector: readonly number[], version?: number): Promise<string[]>;
  /** The rows and points of `ids` in a version. */
  snapshot(ids: readonly string[], version?: number): Promise<Snapshot>;
  /** Makes another version and points every variant's write version at it. */
  newVersion(version: number): Promise<void>;
  close(): Promise<void>;
}

export async function openIngestionWorld(
  store: VssStore,
  options: WorldOptions = {},
): Promise<IngestionWorld> {
  sequence += 1;
  const n = sequence;
  const entity = `ing${n}`;
  const embeddingsTable = `emb_ing${n}`;
  const aggregatorTable = `agg_ing${n}`;
  await store.stores.create({
    storeId: 7000 + n,
    entity,
    dbConfId: 'main',
    embeddingsTable,
    aggregatorTable,
  });
  await store.models.create({
    entity,
    modelName: MODEL,
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: options.embeddingStoreEnabled ?? true,
    embeddingStoreTtlSeconds: options.ttlSeconds ?? 0,
    mqId: 1,
    modelConfig: { distanceFunction: 'COSINE', vectorDimension: DIMENSION },
    storeId: 7000 + n,
    trainingDataPath: 'file:///tmp/none',
  });
  for (const variant of VARIANTS) {
    await store.variants.create({
      entity,
      modelName: MODEL,
      variant,
      vssFilter: FILTERS[variant] as never,
      vectorDbType: variant === 'remote' ? 'QDRANT' : 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
    });
  }
  const db = await EmbeddedVectorDb.open();
  // A short catalog TTL is not needed: refusals re-read the store anyway (tested).
  const catalog = new ModelCatalog(store);
  const embeddings = new EmbeddingProcessor({ store, vectorDb: db, vectorDbType: 'EMBEDDED', catalog });
  const markers = new EofProcessor({
    store,
    partitions: PARTITIONS,
    catalog,
    onComplete: options.onComplete,
  });
  const handler = new IngestionHandler(embeddings, markers);

  const world: IngestionWorld = {
    entity,
    embeddingsTable,
    aggregatorTable,
    store,
    db,
    handler,
    embeddings,
    markers,
    collection: (version = 1) => collectionName(entity, MODEL, version),
    async deliver(...messages) {
      const outcomes: (string | undefined)[] = new Array(messages.length).fill(undefined);
      const parsed: IngestionMessage[] = [];
      const at: number[] = [];
      messages.forEach((message, i) => {
        const bytes =
          message instanceof Uint8Array
            ? message
            : Buffer.from(typeof message === 'string' ? message : JSON.stringify(message));
        try {
          parsed.push(handler.parse(bytes));
          at.push(i);
        } catch (err) {
          if (!(err instanceof RejectedEvent)) throw err;
          outcomes[i] = `${err.field ?? '-'}: ${err.reason}`;
        }
      });
      const applied = await handler.apply(parsed);
      applied.forEach((outcome, j) => {
        outcomes[at[j]!] = outcome;
      });
      return outcomes;
    },
    async row(id, version = 1) {
      const rows = await store.embeddings.read(embeddingsTable, { modelName: MODEL, version, ids: [id] });
      return rows.get(id);
    },
    async point(id, version = 1) {
      const [point] = await db.getPoints(world.collection(version), [id]);
      return point;
    },
    async search(variant, vector, version = 1) {
      const [hits] = await db.search({
        collection: world.collection(version),
        queries: [{ vector }],
        filters: [{ field: `to_be_indexed_${variant}`, op: 'IN', values: ['true'] }],
        limit: 100,
      });
      return hits!.map((hit) => hit.id);
    },
    async snapshot(ids, version = 1) {
      const snapshot: Snapshot = { rows: {}, points: {} };
      const rows = await store.embeddings.read(embeddingsTable, { modelName: MODEL, version, ids });
      for (const [id, row] of [...rows].sort(([a], [b]) => (a < b ? -1 : 1))) {
        snapshot.rows[id] = {
          embedding: [...row.embedding],
          searchEmbedding: [...row.searchEmbedding],
          toBeIndexed: row.toBeIndexed,
        };
      }
      const points = await db.getPoints(world.collection(version), ids).catch(() => []);
      for (const point of points) {
        if (point !== undefined)
          snapshot.points[point.id] = { vector: [...point.vector!], payload: point.payload! };
      }
      return snapshot;
    },
    async newVersion(version) {
      await store.versions.create({ entity, modelName: MODEL, version });
      for (const variant of VARIANTS) {
        const key = { entity, modelName: MODEL, variant };
        const { state } = await store.variants.get(key);
        await store.variants.transition(key, state, 'INGESTING', { writeVersion: version });
      }
    },
    close: () => db.close(),
  };
  await world.newVersion(1);
  return world;
}

/** A payload as the design sends it (JSON strings) or as the original does (objects). */
export type Shape = 'design' | 'original';

export interface EventSpec {
  id: string | number;
  op?: 'A' | 'D' | 'P';
  vector?: readonly number[];
  search?: readonly number[];
  /** variant → version; default every EMBEDDED variant at version 1. */
  versions?: Record<string, number>;
  /** variant → raw index flag; default every variant of `versions` true. */
  index?: Record<string, boolean> | null;
  payload?: Payload | null;
  version?: number;
  jobId?: string;
}

const ORIGINAL_OPERATIONS = { A: 'ADD', D: 'DELETE', P: 'UPSERT_PAYLOAD' } as const;

/** An embedding event of the world's model in either shape. */
export function embeddingEvent(world: IngestionWorld, spec: EventSpec, shape: Shape = 'design'): unknown {
  const op = spec.op ?? 'A';
  const versions = spec.versions ?? { organic: 1, live: 1, brand_a: 1 };
  const index =
    spec.index === null
      ? undefined
      : (spec.index ?? Object.fromEntries(Object.keys(versions).map((variant) => [variant, true])));
  const json = (value: unknown) => (shape === 'design' ? JSON.stringify(value) : value);
  const indexSpace: Record<string, unknown> = {
    variants_version_map: json(versions),
    embedding: spec.vector ?? [],
    operation: shape === 'design' ? op : ORIGINAL_OPERATIONS[op],
  };
  if (index !== undefined) indexSpace.variants_index_map = json(index);
  if (spec.payload !== null && spec.payload !== undefined) indexSpace.payload = json(spec.payload);
  const event: Record<string, unknown> = {
    entity: world.entity,
    model_name: MODEL,
    candidate_id: spec.id,
    index_space: indexSpace,
  };
  if (shape === 'design') event.version = spec.version ?? 1;
  else {
    event.embedding_store_version = spec.version ?? 1;
    event.environment = 'test';
    event.partition = '0';
  }
  if (spec.search !== undefined) event.search_space = { embedding: spec.search };
  if (spec.jobId !== undefined) event.job_id = spec.jobId;
  return event;
}

/** A design-shape EOF marker of the world's model. */
export function eofMarker(
  world: IngestionWorld,
  partition: number,
  jobId = 'job-1',
  version = 1,
): Record<string, unknown> {
  return { eof: true, entity: world.entity, model_name: MODEL, version, job_id: jobId, partition };
}

/** Deterministic vectors whose values no decimal literal rounds to exactly. */
export function vectorOf(seed: number, dimension = DIMENSION): number[] {
  return seededVector(seed, dimension);
}
