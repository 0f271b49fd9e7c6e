/**
 * The serving side of the vss-search benchmark, in its own process so the load generator never
 * shares its event loop: a collection of the seeded fixture on the vector DB under test, built here
 * (timed and measured), the catalog (store, model, one variant READY on version 1, result caches
 * off), and a vss serving server on a free loopback port with no distributed cache and recall
 * sampling off; beside it a bare grpc-js server with the same service definition answering every
 * Search with a canned page (the transport floor). Prints one JSON line ({@link ServingReady}), then
 * answers stdin lines with one JSON line each: `stats` ({@link ServingStats}), `cpu`
 * ({@link ServingCpu}), `ef <n>` (sets the variant's live ef_search and reloads the configuration),
 * `profile-start` and `profile-stop <file>` (a V8 CPU profile of the main thread between the two,
 * sampled every 100 µs, written to the file); end of stdin (or SIGTERM) stops it. Argument: the {@link ServingJob} as JSON. Embeddings are not
 * written to the catalog: Search by embedding never reads them.
 *
 * Engines: `embedded` (EmbeddedVectorDb, catalog on PGlite in memory); `pgvector-pglite` (the
 * pgvector adapter on PGlite in memory with the vector extension, the catalog in the same database,
 * as `lattice vss` runs on pgvector); `pgvector-postgres` (the pgvector adapter and the catalog on a
 * PostgreSQL server, in the schema index.ts prepared, reached through a pool of the SQL port's
 * default size). pgvector collections are created by the adapter (createVectorDb), then loaded as
 * the job says (ServingJob.pgvectorBuild).
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { createInterface } from 'node:readline';
import type { SearchResponse } from '../../src/gen/vss/v1/vss.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import {
  createVectorDb,
  EmbeddedVectorDb,
  type PgvectorVectorDb,
  type VectorDb,
} from '../../src/platform/vectordb/index.js';
import { collectionName } from '../../src/vss/model/index.js';
import { PageTokens, startVssServing } from '../../src/vss/serving/index.js';
import { digest } from '../../src/vss/serving/page-token.js';
import { openVssStore, type VectorDbType, variantColumn } from '../../src/vss/store/index.js';
import { settledRss } from '../support/memory.js';
import { startEchoServer } from './echo-server.js';
import {
  buildFixture,
  ENTITY,
  K,
  MODEL,
  type ServingCpu,
  type ServingJob,
  type ServingReady,
  type ServingStats,
  UPSERT_BATCH,
  VARIANT,
} from './fixture.js';
import { PauseMonitor } from './pauses.js';
import { BENCH_SCHEMA } from './postgres-schema.js';

const settled = () => {
  const rss = settledRss();
  const usage = process.memoryUsage();
  return { rss, heap: usage.heapUsed + usage.arrayBuffers };
};

const job = JSON.parse(process.argv[2] ?? '{}') as ServingJob;
const params = job.fixture;
const fixture = buildFixture(params);
const version = 1;
const key = { entity: ENTITY, modelName: MODEL, variant: VARIANT };
const collection = collectionName(ENTITY, MODEL, version);
const flag = variantColumn(VARIANT);

/** The fixture's first `job.points` points, UPSERT_BATCH per call. */
async function upsertAll(db: VectorDb): Promise<void> {
  for (let start = 0; start < job.points; start += UPSERT_BATCH) {
    const points = [];
    for (let i = start; i < Math.min(job.points, start + UPSERT_BATCH); i++) {
      points.push({ id: fixture.ids[i]!, vector: fixture.vector(i), payload: { [flag]: true } });
    }
    await db.upsert(collection, points);
  }
}

interface Built {
  db: VectorDb;
  sql: SqlClient;
  vectorDbType: VectorDbType;
  buildSeconds: number;
  insertSeconds: number;
  indexSeconds: number;
  bytesPerPoint: number;
  heapBytesPerPoint: number;
  searchStats: () => ServingStats['search'];
}

/**
 * The embedded engine's collection first, before PGlite exists, so the RSS growth is the vector
 * DB's alone: timed from the first upsert until every point is in the graph.
 */
async function buildEmbedded(): Promise<Built> {
  const db = await EmbeddedVectorDb.open();
  const before = settled();
  const started = performance.now();
  await db.createCollection({ name: collection, dimension: params.dimension, distance: 'EUCLIDEAN' });
  await upsertAll(db);
  await db.waitForIndexing(collection);
  const buildSeconds = (performance.now() - started) / 1000;
  const info = await db.collectionInfo(collection);
  const after = settled();
  // Also keeps the fixture referenced past the measurement: V8 frees what a suspended module no
  // longer uses, and 512 B/point of vectors vanishing mid-build would make the growth look smaller.
  if (fixture.vectors.length !== params.points * params.dimension || info.points !== job.points) {
    throw new Error('collection lost points');
  }
  return {
    db,
    sql: await createSqlClient({ kind: 'pglite' }),
    vectorDbType: 'EMBEDDED',
    buildSeconds,
    insertSeconds: 0,
    indexSeconds: 0,
    bytesPerPoint: (after.rss - before.rss) / job.points,
    heapBytesPerPoint: (after.heap - before.heap) / job.points,
    searchStats: () => db.searchStats(collection),
  };
}

/** Memory for pgvector's HNSW build: the graph of 100,000 × 256 needs about 200 MB to build in memory. */
const MAINTENANCE_WORK_MEM = { 'pgvector-pglite': '512MB', 'pgvector-postgres': '1GB' };

/**
 * A pgvector collection created by the adapter, on the job's SQL database. Bulk: the adapter's HNSW
 * index is dropped (its definition read back from pg_indexes), every point inserted through the
 * adapter's batched upsert, and the index created again from the same definition, with memory for
 * the graph (PostgreSQL builds it with its parallel maintenance workers). Then ANALYZE, as
 * autovacuum would. Bytes per point: the table and its indexes ÷ points.
 */
async function buildPgvector(engine: 'pgvector-pglite' | 'pgvector-postgres'): Promise<Built> {
  const sql =
    engine === 'pgvector-pglite'
      ? await createSqlClient({ kind: 'pglite', vector: true })
      : await createSqlClient({
          kind: 'postgres',
          url: job.postgresUrl!,
          searchPath: `${BENCH_SCHEMA}, public`,
          applicationName: 'lattice-bench-vss-search',
        });
  const db = (await createVectorDb({ kind: 'pgvector', sql })) as PgvectorVectorDb;
  const started = performance.now();
  await db.createCollection({ name: collection, dimension: params.dimension, distance: 'EUCLIDEAN' });
  const [catalog] = (
    await sql.query<{ table_id: number }>('SELECT table_id FROM vectordb_collections WHERE name = $1', [
      collection,
    ])
  ).rows;
  const table = `vectordb_points_${Number(catalog!.table_id)}`;
  const [hnsw] = (
    await sql.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes
        WHERE schemaname = current_schema() AND tablename = $1 AND indexdef LIKE '%USING hnsw%'`,
      [table],
    )
  ).rows;
  if (hnsw === undefined) throw new Error(`no HNSW index on ${table}`);
  const bulk = (job.pgvectorBuild ?? 'bulk') === 'bulk';
  if (bulk) await sql.query(`DROP INDEX ${hnsw.indexname}`);
  await upsertAll(db);
  const inserted = performance.now();
  if (bulk) {
    await sql.transaction(async (tx) => {
      await tx.query(`SET LOCAL maintenance_work_mem = '${MAINTENANCE_WORK_MEM[engine]}'`);
      await tx.query(hnsw.indexdef);
    });
  }
  const indexed = performance.now();
  await sql.query(`ANALYZE ${table}`);
  const info = await db.collectionInfo(collection);
  if (info.points !== job.points || info.status !== 'READY') {
    throw new Error(`pgvector collection: ${info.points} points, ${info.status}`);
  }
  const [size] = (
    await sql.query<{ bytes: number }>('SELECT pg_total_relation_size($1::regclass) AS bytes', [table])
  ).rows;
  return {
    db,
    sql,
    vectorDbType: 'PGVECTOR',
    buildSeconds: (indexed - started) / 1000,
    insertSeconds: (inserted - started) / 1000,
    indexSeconds: bulk ? (indexed - inserted) / 1000 : 0,
    bytesPerPoint: Number(size!.bytes) / job.points,
    heapBytesPerPoint: Number.NaN,
    searchStats: () => db.searchStats(),
  };
}

const built = job.engine === 'embedded' ? await buildEmbedded() : await buildPgvector(job.engine);
const { db, sql } = built;
const info = await db.collectionInfo(collection);

// The catalog: what ingestion and the indexing job would have left behind.
const store = await openVssStore(sql);
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
  modelConfig: { distanceFunction: 'EUCLIDEAN', vectorDimension: params.dimension },
  storeId: 1,
  trainingDataPath: 'file:///tmp/none',
});
await store.variants.create({
  ...key,
  vssFilter: {},
  vectorDbType: built.vectorDbType,
  vectorDbConfig: {},
  jobFrequency: 'FREQ_1D',
  // Both result-cache levels off: every Search reaches the vector DB.
  cache: { memoryTtlSeconds: 0, distributedTtlSeconds: 0 },
});
await store.versions.create({ entity: ENTITY, modelName: MODEL, version });

await store.versions.transition({ entity: ENTITY, modelName: MODEL, version }, 'INGESTING', 'INGESTED');
const steps = [
  await store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: version }),
  await store.variants.transition(key, 'INGESTING', 'INGESTED'),
  await store.variants.transition(key, 'INGESTED', 'INDEXING'),
];
if (steps.includes(false)) throw new Error('variant transitions not applied');
const flip = await store.flipReadVersion(key, version);
if (!flip.applied) throw new Error('read-version flip not applied');

const metrics = new Metrics();
const server = await startVssServing({
  metrics,
  sql,
  vectorDb: db,
  host: '127.0.0.1',
  port: 0,
  logger: createLogger('vss-search-bench', { level: 'silent' }),
  refreshIntervalMs: 0,
  recallSampleRate: 0,
});

// The transport floor (echo-server.ts), answering every Search with one canned page of the real size
// (10 hits of a real query and a real page token).
const [sample = []] = await db.search({
  collection,
  queries: [{ vector: fixture.queries(1, 77)[0]! }],
  limit: K,
  indexedOnly: true,
});
const last = sample[sample.length - 1];
const canned: SearchResponse = {
  results: [
    {
      candidates: sample.map((hit) => ({ id: hit.id, score: hit.score, attributes: {} })),
      nextPageToken: new PageTokens().encode({
        query: digest('query'),
        filters: digest('filters'),
        readVersion: version,
        offset: sample.length,
        lastScore: last?.score ?? 0,
        lastId: last?.id ?? '',
      }),
      error: '',
    },
  ],
};
const { port: echoPort, server: echo } = await startEchoServer(canned);

const ready: ServingReady = {
  port: server.port,
  echoPort,
  points: info.points,
  build_s: built.buildSeconds,
  insert_s: built.insertSeconds,
  index_s: built.indexSeconds,
  bytes_per_point: built.bytesPerPoint,
  heap_bytes_per_point: built.heapBytesPerPoint,
  status: info.status,
};
const pauses = new PauseMonitor();
process.stdout.write(`${JSON.stringify(ready)}\n`);

/** Sum and count of every latency histogram, over all label sets. */
async function timings(): Promise<ServingStats['timing']> {
  const totals: ServingStats['timing'] = {};
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    // Histogram values carry their series name (prom-client's types omit it).
    const values = metric.values as { value: number; metricName?: string }[];
    if (!values.some((v) => v.metricName === `${metric.name}_count`)) continue;
    const total = { sum_ms: 0, count: 0 };
    for (const value of values) {
      if (value.metricName === `${metric.name}_sum`) total.sum_ms += value.value * 1000;
      if (value.metricName === `${metric.name}_count`) total.count += value.value;
    }
    totals[metric.name] = total;
  }
  return totals;
}

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  pauses.stop();
  echo.forceShutdown();
  await server.stop();
  await db.close();
  await sql.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
const commands = createInterface({ input: process.stdin });
let profiler: Session | undefined;
const reply = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
commands.on('line', (line) => {
  const [command, argument] = line.trim().split(' ');
  if (command === 'cpu') {
    // Read at once, before anything else this process does for the command.
    const { user, system } = process.cpuUsage();
    reply({ cpu_ms: (user + system) / 1000, wall_ms: performance.now() } satisfies ServingCpu);
  } else if (command === 'stats') {
    void timings().then((timing) => {
      const stats: ServingStats = {
        search: built.searchStats(),
        rss: process.memoryUsage().rss,
        timing,
        pauses: pauses.take(),
      };
      reply(stats);
    });
  } else if (command === 'profile-start') {
    profiler ??= new Session();
    profiler.connect();
    const session = profiler;
    void session
      .post('Profiler.enable')
      .then(() => session.post('Profiler.setSamplingInterval', { interval: 100 }))
      .then(() => session.post('Profiler.start'))
      .then(() => reply({ profiling: true }));
  } else if (command === 'profile-stop' && profiler !== undefined) {
    const session = profiler;
    void session
      .post('Profiler.stop')
      .then(({ profile }) => writeFile(argument!, JSON.stringify(profile)))
      .then(() => {
        session.disconnect();
        reply({ profile: argument });
      });
  } else if (command === 'ef') {
    // The variant's live ef_search, as update-variant sets it; serving searches with it once reloaded.
    void store.variants
      .setEfSearch(key, Number(argument))
      .then(() => server.config.refresh())
      .then(() => reply({ ef: Number(argument) }));
  }
});
commands.on('close', () => void stop());
