/**
 * A READY variant whose served collection falls below 95 % indexed is never silent:
 * `vss_serving_index_degraded` is 1 for it (the shipped alert reads that) and it is listed degraded,
 * until the index catches up. The serving readiness check fails naming it while this process has not
 * yet seen its version indexed (a restart waiting for its graph), but not when a running process's
 * served collection grows faster than it is indexed (a large delta): that must not take the
 * process out of its load balancer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { ClusterVectorDbs, collectionName } from '../../../src/vss/model/index.js';
import { ServedIndexHealth } from '../../../src/vss/serving/served-index-health.js';
import { COUNT, type EmbeddedWorld, ENTITY, MODEL, openWorld, payloadOf } from './harness.js';

const ADDED = 60; // 240 indexed of 300: 80 %

function degradedSeries(text: string, variant: string): string | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith('vss_serving_index_degraded{') && l.includes(`variant="${variant}"`));
  return line?.split(' ').at(-1);
}

describe('vss serving: a served index below its threshold', () => {
  let world: EmbeddedWorld;
  const metrics = new Metrics();
  const collection = collectionName(ENTITY, MODEL, 1);

  before(async () => {
    world = await openWorld({ server: { metrics, indexHealthIntervalMs: 0 } });
  });
  after(() => world.close());

  const scrape = async () => (await metrics.scrape()).body;

  test('is healthy while indexed', async () => {
    await world.server.indexHealth.check();
    assert.equal(degradedSeries(await scrape(), 'organic'), '0');
    assert.equal(degradedSeries(await scrape(), 'ad'), '0');
  });

  test('a delta past 5 % makes it degraded (metric and listing), not unready, until indexed again', async () => {
    world.db.pauseIndexing(collection);
    await world.db.upsert(
      collection,
      Array.from({ length: ADDED }, (_, i) => ({
        id: `late-${i}`,
        vector: world.fixture.vector(i),
        payload: payloadOf(i),
      })),
    );
    await world.server.indexHealth.check();
    assert.equal(degradedSeries(await scrape(), 'organic'), '1');
    assert.deepEqual(world.server.indexHealth.degraded.map((d) => d.variant).sort(), ['ad', 'organic']);

    world.db.resumeIndexing(collection);
    await world.db.waitForIndexing(collection);
    await world.server.indexHealth.check();
    assert.equal(degradedSeries(await scrape(), 'organic'), '0');
    assert.deepEqual(world.server.indexHealth.degraded, []);
  });

  test('a process that has not yet seen the served version indexed (a restart) is not ready, naming the variant, until it is', async () => {
    world.db.pauseIndexing(collection);
    await world.db.upsert(
      collection,
      Array.from({ length: ADDED }, (_, i) => ({
        id: `later-${i}`,
        vector: world.fixture.vector(i),
        payload: payloadOf(i),
      })),
    );
    // As a restarted serving process finds it: a fresh health over the same store and vector DB.
    const restarted = new ServedIndexHealth({
      store: world.store,
      vectorDbs: ClusterVectorDbs.single(world.db),
      metrics: new Metrics(),
      logger: createLogger('test', { level: 'silent' }),
      intervalMs: 0,
    });
    await assert.rejects(restarted.check(), (err: Error) => {
      assert.match(
        err.message,
        new RegExp(
          `variant organic of ${ENTITY}/${MODEL} serves version 1 with ${COUNT + ADDED} of ${COUNT + 2 * ADDED} points indexed \\(\\d+\\.\\d %, below 95 %\\)`,
        ),
      );
      assert.match(err.message, /variant ad of/);
      return true;
    });
    world.db.resumeIndexing(collection);
    await world.db.waitForIndexing(collection);
    await restarted.check();
  });
});
