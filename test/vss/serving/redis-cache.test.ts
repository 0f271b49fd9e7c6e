/**
 * The distributed level of the similarity result cache on a real Redis: two serving replicas over
 * one store and one vector database share pages through Redis, and a read-version flip moves every
 * key, so neither replica serves the old version's page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Cache, createCache } from '../../../src/platform/cache/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import type { SearchRequest, VectorDb } from '../../../src/platform/vectordb/index.js';
import { startVssServing, type VssServing } from '../../../src/vss/serving/index.js';
import { realServer } from '../../support/servers.js';
import { clusteredFixture } from '../../support/vector-fixtures.js';
import { Client, COUNT, DIMENSION, openWorld, readyVariant, type World, writeVersion } from './harness.js';

const redisUrl = await realServer('redis');

/** The vector database as one replica sees it: the shared one, with that replica's searches counted. */
function counted(inner: VectorDb): { db: VectorDb; searches: () => number } {
  let searches = 0;
  const db = new Proxy(inner, {
    get(target, property) {
      if (property === 'search') {
        return (request: SearchRequest) => {
          searches++;
          return target.search(request);
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db, searches: () => searches };
}

/** `vss_serving_cache_total` for one level and outcome, read off the replica's /metrics text. */
async function cacheCount(metrics: Metrics, level: string, outcome: string): Promise<number> {
  const { body } = await metrics.scrape();
  const line = body
    .split('\n')
    .find(
      (l) =>
        l.startsWith('vss_serving_cache_total{') &&
        l.includes(`level="${level}"`) &&
        l.includes(`outcome="${outcome}"`) &&
        l.includes('variant="organic"'),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('vss serving: the Redis result cache level', {
  skip: redisUrl ? false : 'redis not reachable',
}, () => {
  let world: World;
  let replicaA: ReturnType<typeof counted>;
  let replicaB: ReturnType<typeof counted>;
  let cacheA: Cache;
  let cacheB: Cache;
  let serverB: VssServing;
  let clientB: Client;
  const metricsB = new Metrics();
  // A seed of its own per run: the query vectors, hence the keys, are new, so pages a previous run
  // left in Redis (for up to their TTL) are never found.
  const seed = 1_000 + Math.floor(Math.random() * 1_000_000);

  before(async () => {
    cacheA = await createCache({ kind: 'redis', url: redisUrl! });
    cacheB = await createCache({ kind: 'redis', url: redisUrl! });
    world = await openWorld({
      seed,
      wrap: (inner) => {
        replicaA = counted(inner);
        return replicaA.db;
      },
      server: { cache: cacheA, recallSampleRate: 0 },
    });
    replicaB = counted(world.db);
    serverB = await startVssServing({
      sql: world.sql,
      vectorDb: replicaB.db,
      cache: cacheB,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('vss-serving-test', { level: 'silent' }),
      metrics: metricsB,
      refreshIntervalMs: 0,
      pageTokenSecret: 'test-secret',
      recallSampleRate: 0,
    });
    clientB = new Client(`127.0.0.1:${serverB.port}`);
  });

  after(async () => {
    clientB?.close();
    await serverB?.stop();
    await world?.close();
    await cacheA?.close();
    await cacheB?.close();
  });

  test('a page one replica searched is served to the other from Redis; a version flip misses', async () => {
    const query = world.fixture.queries(1, seed)[0]!;
    const request = {
      queries: [{ embedding: { values: Array.from(query) }, pageToken: '', filters: [] }],
      attributes: ['brand'],
    };

    const fromA = await world.client.search(request);
    assert.equal(replicaA.searches(), 1, 'replica A searched');
    assert.equal(fromA.results[0]!.candidates.length, 10);

    const fromB = await clientB.search(request);
    assert.equal(replicaB.searches(), 0, 'replica B found the page in Redis');
    assert.deepEqual(fromB, fromA);
    assert.equal(await cacheCount(metricsB, 'distributed', 'hit'), 1);

    // B filled its memory level from Redis: the next look-up does not leave the process.
    await clientB.search(request);
    assert.equal(replicaB.searches(), 0);
    assert.equal(await cacheCount(metricsB, 'memory', 'hit'), 1);

    // Version 2 becomes `organic`'s read version: both replicas' keys move, so B searches again and
    // gets version 2's ranking, not the page Redis still holds for version 1.
    const v2 = clusteredFixture({ count: COUNT, dimension: DIMENSION, clusters: 4, seed: seed + 1 });
    await writeVersion(world.store, world.db, v2, 2, world.distance);
    await readyVariant(world.store, 'organic', 2);
    await world.server.config.refresh();
    await serverB.config.refresh();
    const afterFlip = await clientB.search(request);
    assert.equal(replicaB.searches(), 1, 'the flip changed the key');
    assert.notDeepEqual(afterFlip.results[0]!.candidates, fromA.results[0]!.candidates);

    // A now finds version 2's page in Redis, written by B.
    const searchesA = replicaA.searches();
    assert.deepEqual(await world.client.search(request), afterFlip);
    assert.equal(replicaA.searches(), searchesA);
  });
});
