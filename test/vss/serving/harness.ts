/**
 * A seeded vss serving world for tests: a store (in PGlite, or where the engine's SQL database is),
 * a model, variants `organic` and `ad` READY on version 1, embeddings and aggregator attributes, a
 * collection for that version on the chosen vector database (test/support/vector-engines.ts; the
 * embedded engine unless `engine` says otherwise), a server on a free loopback port and a
 * promise-based generated client.
 */
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import {
  type GetEmbeddingsRequest,
  type GetEmbeddingsResponse,
  type ScoreCandidatesRequest,
  type ScoreCandidatesResponse,
  type SearchRequest,
  type SearchResponse,
  SimilaritySearchClient,
} from '../../../src/gen/vss/v1/vss.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import type { SqlClient } from '../../../src/platform/sql/index.js';
import type {
  EmbeddedVectorDb,
  Payload,
  PlannerSettings,
  VectorDb,
} from '../../../src/platform/vectordb/index.js';
import { collectionName } from '../../../src/vss/model/index.js';
import { startVssServing, type VssServing, type VssServingOptions } from '../../../src/vss/serving/index.js';
import {
  type DistanceFunction,
  openVssStore,
  type VectorDbType,
  type VssStore,
} from '../../../src/vss/store/index.js';
import {
  type OpenedEngine,
  openVectorEngine,
  VECTOR_DB_TYPE,
  type VectorEngine,
  waitForIndexing,
} from '../../support/vector-engines.js';
import { clusteredFixture, type VectorFixture } from '../../support/vector-fixtures.js';

export const ENTITY = 'catalog';
export const MODEL = 'clip';
export const DIMENSION = 8;
export const COUNT = 240;

export interface World<Db extends VectorDb = VectorDb> {
  engine: VectorEngine;
  sql: SqlClient;
  store: VssStore;
  /** The vector database serving searches (before `wrap`). */
  db: Db;
  fixture: VectorFixture;
  payloads: Payload[];
  server: VssServing;
  client: Client;
  distance: DistanceFunction;
  close(): Promise<void>;
}

/** A world on the embedded engine, whose controls (pause and resume indexing…) its tests use. */
export type EmbeddedWorld = World<EmbeddedVectorDb>;

/** Attributes of point i: brand a/b/c, price 0..49, tag on every 4th, organic all but every 10th, ad even. */
export function payloadOf(i: number): Payload {
  const payload: Payload = {
    brand: ['a', 'b', 'c'][i % 3]!,
    price: i % 50,
    to_be_indexed_organic: i % 10 !== 9,
    to_be_indexed_ad: i % 2 === 0,
  };
  if (i % 4 === 0) payload.tag = 'hot';
  return payload;
}

export async function readyVariant(store: VssStore, variant: string, version: number): Promise<void> {
  const key = { entity: ENTITY, modelName: MODEL, variant };
  const current = await store.variants.get(key);
  await store.variants.transition(key, current.state, 'INGESTING', { writeVersion: version });
  await store.variants.transition(key, 'INGESTING', 'INGESTED');
  await store.variants.transition(key, 'INGESTED', 'INDEXING');
  const flip = await store.flipReadVersion(key, version);
  if (!flip.applied) throw new Error(`flip of ${variant} to ${version} not applied`);
}

/** Writes version `version` of the model: embeddings, collection, and INGESTED status. */
export async function writeVersion(
  store: VssStore,
  db: VectorDb,
  fixture: VectorFixture,
  version: number,
  distance: DistanceFunction,
): Promise<void> {
  await store.versions.create({ entity: ENTITY, modelName: MODEL, version });
  await store.embeddings.upsert('emb', {
    modelName: MODEL,
    version,
    rows: fixture.ids.map((id, i) => ({
      id,
      embedding: fixture.vector(i),
      toBeIndexed: {
        organic: payloadOf(i).to_be_indexed_organic === true,
        ad: payloadOf(i).to_be_indexed_ad === true,
      },
    })),
  });
  const name = collectionName(ENTITY, MODEL, version);
  await db.createCollection({ name, dimension: fixture.dimension, distance });
  await db.upsert(
    name,
    fixture.ids.map((id, i) => ({ id, vector: fixture.vector(i), payload: payloadOf(i) })),
  );
  // Serving searches indexed points only: the version is served once all of them are.
  await waitForIndexing(db, name);
  await store.versions.transition({ entity: ENTITY, modelName: MODEL, version }, 'INGESTING', 'INGESTED');
}

export interface WorldOptions<Db extends VectorDb> {
  /** The vector database; default `embedded`. */
  engine?: VectorEngine;
  distance?: DistanceFunction;
  /** What serving searches through instead of the engine's database (a wrapper that counts, fails…). */
  wrap?(db: Db): VectorDb;
  server?: Partial<VssServingOptions>;
  seed?: number;
  /** A larger or harder fixture than the default COUNT × DIMENSION in 4 clusters. */
  fixture?: { count: number; dimension: number; clusters: number; spread?: number };
  /** The embedded engine's or pgvector's planner (e.g. never scan exactly: every search approximate). */
  planner?: Partial<PlannerSettings>;
}

/** On the embedded engine (the default) the world's database is typed as one, for its own controls. */
export function openWorld(
  options?: WorldOptions<EmbeddedVectorDb> & { engine?: 'embedded' },
): Promise<EmbeddedWorld>;
export function openWorld(options: WorldOptions<VectorDb> & { engine: VectorEngine }): Promise<World>;
export async function openWorld(options: WorldOptions<VectorDb> = {}): Promise<World> {
  const engine = options.engine ?? 'embedded';
  const opened = await openVectorEngine(engine, { planner: options.planner, sql: true });
  try {
    return await serveWorld(opened, options);
  } catch (err) {
    // A world that fails to open leaves nothing behind (a schema on the shared PostgreSQL…).
    await opened.close().catch(() => {});
    throw err;
  }
}

/** Seeds the store and the collection on the opened engine, and starts serving them. */
async function serveWorld(opened: OpenedEngine, options: WorldOptions<VectorDb>): Promise<World> {
  const { engine, db } = opened;
  const sql = opened.sql!;
  const distance = options.distance ?? 'COSINE';
  const store = await openVssStore(sql);
  await registerCatalog(store, distance, options.fixture?.dimension ?? DIMENSION, VECTOR_DB_TYPE[engine]);
  const fixture = clusteredFixture({
    count: COUNT,
    dimension: DIMENSION,
    clusters: 4,
    ...options.fixture,
    seed: options.seed ?? 7,
  });
  await writeVersion(store, db, fixture, 1, distance);
  await readyVariant(store, 'organic', 1);
  await readyVariant(store, 'ad', 1);
  await store.aggregator.upsert(
    'agg',
    fixture.ids.flatMap((id, i) => {
      const p = payloadOf(i);
      const rows = [
        { id, label: 'brand', value: String(p.brand) },
        { id, label: 'price', value: String(p.price) },
      ];
      if (p.tag !== undefined) rows.push({ id, label: 'tag', value: String(p.tag) });
      return rows;
    }),
  );
  const server = await startVssServing({
    sql,
    vectorDb: options.wrap ? options.wrap(db) : db,
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('vss-serving-test', { level: 'silent' }),
    refreshIntervalMs: 0,
    pageTokenSecret: 'test-secret',
    ...options.server,
  });
  const client = new Client(`127.0.0.1:${server.port}`);
  return {
    engine,
    sql,
    store,
    db,
    fixture,
    payloads: fixture.ids.map((_, i) => payloadOf(i)),
    server,
    client,
    distance,
    close: async () => {
      client.close();
      await server.stop();
      await opened.close();
    },
  };
}

type Call<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: { deadline?: number },
  callback: (error: ServiceError | null, response: Res) => void,
) => unknown;

export class Client {
  readonly raw: InstanceType<typeof SimilaritySearchClient>;

  constructor(address: string) {
    this.raw = new SimilaritySearchClient(address, credentials.createInsecure());
  }

  search(request: Partial<SearchRequest>, deadlineMs?: number): Promise<SearchResponse> {
    const full: SearchRequest = {
      entity: ENTITY,
      modelName: MODEL,
      variant: 'organic',
      queries: [],
      pageSize: 0,
      attributes: [],
      filters: [],
      searchWidth: 0,
      ...request,
    };
    return this.call(this.raw.search.bind(this.raw) as Call<SearchRequest, SearchResponse>, full, deadlineMs);
  }

  getEmbeddings(request: GetEmbeddingsRequest): Promise<GetEmbeddingsResponse> {
    return this.call(
      this.raw.getEmbeddings.bind(this.raw) as Call<GetEmbeddingsRequest, GetEmbeddingsResponse>,
      request,
    );
  }

  scoreCandidates(request: ScoreCandidatesRequest): Promise<ScoreCandidatesResponse> {
    return this.call(
      this.raw.scoreCandidates.bind(this.raw) as Call<ScoreCandidatesRequest, ScoreCandidatesResponse>,
      request,
    );
  }

  close(): void {
    this.raw.close();
  }

  private call<Req, Res>(method: Call<Req, Res>, request: Req, deadlineMs?: number): Promise<Res> {
    return new Promise((resolve, reject) => {
      method(
        request,
        new Metadata(),
        deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs },
        (err, response) => (err ? reject(err) : resolve(response)),
      );
    });
  }
}

/** Rejects with a gRPC error whose code is `code` (and whose `field` trailer, when given, is `field`). */
export async function expectStatus(
  work: Promise<unknown>,
  code: number,
  field?: string,
): Promise<ServiceError> {
  try {
    await work;
  } catch (err) {
    const e = err as ServiceError;
    if (e.code !== code) throw new Error(`expected status ${code}, got ${e.code}: ${e.details}`);
    if (field !== undefined) {
      const got = e.metadata?.get('field')[0];
      if (got !== field) throw new Error(`expected field ${field}, got ${String(got)}: ${e.details}`);
    }
    return e;
  }
  throw new Error(`expected status ${code}, but the call succeeded`);
}

/** The store, model and its two variants (organic, ad) every vss serving test world starts from. */
export async function registerCatalog(
  store: VssStore,
  distance: DistanceFunction,
  dimension: number,
  vectorDbType: VectorDbType = 'EMBEDDED',
): Promise<void> {
  await store.stores.create({
    storeId: 1,
    entity: ENTITY,
    dbConfId: 'main',
    embeddingsTable: 'emb',
    aggregatorTable: 'agg',
  });
  await store.models.create({
    entity: ENTITY,
    modelName: MODEL,
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: 0,
    mqId: 1,
    modelConfig: { distanceFunction: distance, vectorDimension: dimension },
    storeId: 1,
    trainingDataPath: 'file:///tmp/none',
  });
  for (const variant of ['organic', 'ad']) {
    await store.variants.create({
      entity: ENTITY,
      modelName: MODEL,
      variant,
      vssFilter: {},
      vectorDbType,
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
    });
  }
}
