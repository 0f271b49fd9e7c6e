/**
 * A seeded vss serving world for tests: PGlite in memory with a store, a model, variants `organic`
 * and `ad` READY on version 1, embeddings and aggregator attributes, an EmbeddedVectorDb collection
 * for that version, a server on a free loopback port and a promise-based generated client.
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
import { createSqlClient, type SqlClient } from '../../../src/platform/sql/index.js';
import {
  EmbeddedVectorDb,
  type Payload,
  type PlannerSettings,
  type VectorDb,
} from '../../../src/platform/vectordb/index.js';
import { collectionName } from '../../../src/vss/model/index.js';
import { startVssServing, type VssServing, type VssServingOptions } from '../../../src/vss/serving/index.js';
import { type DistanceFunction, openVssStore, type VssStore } from '../../../src/vss/store/index.js';
import { clusteredFixture, type VectorFixture } from '../../support/vector-fixtures.js';

export const ENTITY = 'catalog';
export const MODEL = 'clip';
export const DIMENSION = 8;
export const COUNT = 240;

export interface World {
  sql: SqlClient;
  store: VssStore;
  db: EmbeddedVectorDb;
  fixture: VectorFixture;
  payloads: Payload[];
  server: VssServing;
  client: Client;
  distance: DistanceFunction;
  close(): Promise<void>;
}

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
  if (db instanceof EmbeddedVectorDb) await db.waitForIndexing(name);
  await store.versions.transition({ entity: ENTITY, modelName: MODEL, version }, 'INGESTING', 'INGESTED');
}

export async function openWorld(
  options: {
    distance?: DistanceFunction;
    wrap?: (db: EmbeddedVectorDb) => VectorDb;
    server?: Partial<VssServingOptions>;
    seed?: number;
    /** A larger or harder fixture than the default COUNT × DIMENSION in 4 clusters. */
    fixture?: { count: number; dimension: number; clusters: number; spread?: number };
    /** The embedded engine's planner (e.g. never scan exactly, to make every search approximate). */
    planner?: Partial<PlannerSettings>;
  } = {},
): Promise<World> {
  const distance = options.distance ?? 'COSINE';
  const sql = await createSqlClient({ kind: 'pglite' });
  const store = await openVssStore(sql);
  await registerCatalog(store, distance, options.fixture?.dimension ?? DIMENSION);
  const fixture = clusteredFixture({
    count: COUNT,
    dimension: DIMENSION,
    clusters: 4,
    ...options.fixture,
    seed: options.seed ?? 7,
  });
  const db = await EmbeddedVectorDb.open({ planner: options.planner });
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
      await db.close();
      await sql.close();
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
      vectorDbType: 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
    });
  }
}
