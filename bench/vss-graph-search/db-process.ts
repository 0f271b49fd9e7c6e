/**
 * The serving process of vss-graph-search: an EmbeddedVectorDb holding the seeded clustered fixture,
 * answering searches sent over IPC (structured clone, so a query is a Float32Array, not JSON) and
 * reporting its own CPU time, so the load generator can tell how many cores searching took; or
 * running a closed loop of searches itself (`local`), without the cost of the IPC on either side.
 *
 * The collection is built once and kept in BENCH_CACHE_DIR (a snapshot, reloaded by later runs):
 * building 100,000 × 256 takes minutes on a shared 2-core machine. BENCH_SEARCH_THREADS sets the
 * database's `searchThreads` (0: graph walks on the event loop, as before the search pool).
 */
import { join } from 'node:path';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/embedded/collection/embedded-vector-db.js';
import { sizeSearchPool } from '../../src/platform/vectordb/embedded/index/graph-index.js';
import { clusteredFixture } from '../../test/support/vector-fixtures.js';
import { measure } from '../support/stats.js';
import { COLLECTION, type FromServer, type Params, type ToServer } from './protocol.js';

const params = JSON.parse(process.env.BENCH_PARAMS!) as Params;
const threadsEnv = process.env.BENCH_SEARCH_THREADS;
const searchThreads = threadsEnv === undefined || threadsEnv === '' ? undefined : Number(threadsEnv);
const send = (message: FromServer) => process.send!(message);

const db = await EmbeddedVectorDb.open({
  dir: join(params.cacheDir, `${params.points}x${params.dimension}-${params.seed}`),
  searchThreads,
  snapshotIntervalMs: 0,
});
const built = performance.now();
const existing = (await db.listCollections()).includes(COLLECTION)
  ? await db.collectionInfo(COLLECTION)
  : undefined;
if (existing?.points !== params.points) {
  if (existing) await db.dropCollection(COLLECTION);
  const fixture = clusteredFixture({
    count: params.points,
    dimension: params.dimension,
    clusters: params.clusters,
    seed: params.seed,
  });
  await db.createCollection({ name: COLLECTION, dimension: params.dimension, distance: 'COSINE' });
  for (let from = 0; from < params.points; from += 1000) {
    const batch = [];
    for (let i = from; i < Math.min(params.points, from + 1000); i++) {
      batch.push({ id: fixture.ids[i]!, vector: fixture.vector(i) });
    }
    await db.upsert(COLLECTION, batch);
  }
}
await db.waitForIndexing(COLLECTION);
if (!existing || existing.points !== params.points) await db.snapshot(COLLECTION);
send({
  type: 'ready',
  loadOrBuild_s: (performance.now() - built) / 1000,
  poolThreads: searchThreads === 0 ? 0 : sizeSearchPool(searchThreads),
});

process.on('message', (message: ToServer) => {
  if (message.type === 'search') {
    db.search({ collection: COLLECTION, queries: [{ vector: message.vector }], limit: message.k }).then(
      ([hits]) => send({ type: 'hits', id: message.id, ids: hits!.map((hit) => hit.id) }),
      (err: unknown) => send({ type: 'error', id: message.id, message: String(err) }),
    );
  } else if (message.type === 'cpu') {
    const { user, system } = process.cpuUsage();
    send({ type: 'cpu', id: message.id, cpuMicros: user + system, wallMs: performance.now() });
  } else if (message.type === 'local') {
    const { id, queries, calls, inFlight } = message;
    const before = process.cpuUsage();
    const search = (i: number) =>
      db.search({ collection: COLLECTION, queries: [{ vector: queries[i % queries.length]! }], limit: 10 });
    void measure(calls, inFlight, search).then((stats) => {
      const used = process.cpuUsage(before);
      send({ type: 'local', id, stats, cores: (used.user + used.system) / 1000 / (stats.seconds * 1000) });
    });
  } else if (message.type === 'close') {
    void db.close().then(() => process.exit(0));
  }
});
