/**
 * The serving side of the vss-search benchmark, in its own process so the load generator never
 * shares its event loop: an EmbeddedVectorDb collection of the seeded fixture built here (timed and
 * measured), PGlite in memory with the catalog (store, model, one variant READY on version 1, result
 * caches off), and a vss serving server on a free loopback port with no distributed cache and recall
 * sampling off; beside it a bare grpc-js server with the same service definition answering every
 * Search with a canned page (the transport floor). Prints one JSON line ({@link ServingReady}), then
 * answers stdin lines: `stats` prints one {@link ServingStats} line; end of stdin (or SIGTERM) stops
 * it. Argument: the {@link FixtureParams} as JSON. Embeddings are not written to the catalog: Search
 * by embedding never reads them.
 */
import { createInterface } from 'node:readline';
import type { SearchResponse } from '../../src/gen/vss/v1/vss.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { createSqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/index.js';
import { collectionName } from '../../src/vss/model/index.js';
import { PageTokens, startVssServing } from '../../src/vss/serving/index.js';
import { digest } from '../../src/vss/serving/page-token.js';
import { openVssStore, variantColumn } from '../../src/vss/store/index.js';
import { settledRss } from '../support/memory.js';
import { startEchoServer } from './echo-server.js';
import {
  buildFixture,
  ENTITY,
  type FixtureParams,
  K,
  MODEL,
  type ServingReady,
  type ServingStats,
  UPSERT_BATCH,
  VARIANT,
} from './fixture.js';
import { PauseMonitor } from './pauses.js';

const settled = () => {
  const rss = settledRss();
  const usage = process.memoryUsage();
  return { rss, heap: usage.heapUsed + usage.arrayBuffers };
};

const params = JSON.parse(process.argv[2] ?? '{}') as FixtureParams;
const fixture = buildFixture(params);
const version = 1;
const key = { entity: ENTITY, modelName: MODEL, variant: VARIANT };

// The collection first, before PGlite exists, so the RSS growth is the vector DB's alone: timed from
// the first upsert until every point is in the graph.
const db = await EmbeddedVectorDb.open();
const collection = collectionName(ENTITY, MODEL, version);
const flag = variantColumn(VARIANT);
const before = settled();
const started = performance.now();
await db.createCollection({ name: collection, dimension: params.dimension, distance: 'EUCLIDEAN' });
for (let start = 0; start < params.points; start += UPSERT_BATCH) {
  const points = [];
  for (let i = start; i < Math.min(params.points, start + UPSERT_BATCH); i++) {
    points.push({ id: fixture.ids[i]!, vector: fixture.vector(i), payload: { [flag]: true } });
  }
  await db.upsert(collection, points);
}
await db.waitForIndexing(collection);
const buildSeconds = (performance.now() - started) / 1000;
const info = await db.collectionInfo(collection);
const after = settled();
// Also keeps the fixture referenced past the measurement: V8 frees what a suspended module no longer
// uses, and 512 B/point of vectors vanishing mid-build would make the growth look smaller than it is.
if (fixture.vectors.length !== info.points * params.dimension) throw new Error('collection lost points');

// The catalog: what ingestion and the indexing job would have left behind.
const sql = await createSqlClient({ kind: 'pglite' });
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
  vectorDbType: 'EMBEDDED',
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
  build_s: buildSeconds,
  bytes_per_point: (after.rss - before.rss) / params.points,
  heap_bytes_per_point: (after.heap - before.heap) / params.points,
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
commands.on('line', (line) => {
  if (line.trim() !== 'stats') return;
  void timings().then((timing) => {
    const stats: ServingStats = {
      search: db.searchStats(collection),
      rss: process.memoryUsage().rss,
      timing,
      pauses: pauses.take(),
    };
    process.stdout.write(`${JSON.stringify(stats)}\n`);
  });
});
commands.on('close', () => void stop());
