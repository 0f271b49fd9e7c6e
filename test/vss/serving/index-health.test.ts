/**
 * A READY variant whose served collection falls below 95 % indexed is never silent: the serving
 * readiness check fails naming it, `vss_serving_index_degraded` is 1 for it (the shipped alert reads
 * that), and both return to normal once the index catches up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { collectionName } from '../../../src/vss/model/index.js';
import { COUNT, ENTITY, MODEL, openWorld, payloadOf, type World } from './harness.js';

const ADDED = 60; // 240 indexed of 300: 80 %

function degradedSeries(text: string, variant: string): string | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith('vss_serving_index_degraded{') && l.includes(`variant="${variant}"`));
  return line?.split(' ').at(-1);
}

describe('vss serving: a served index below its threshold', () => {
  let world: World;
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

  test('readiness fails naming the variant and the metric says degraded, until indexed again', async () => {
    world.db.pauseIndexing(collection);
    await world.db.upsert(
      collection,
      Array.from({ length: ADDED }, (_, i) => ({
        id: `late-${i}`,
        vector: world.fixture.vector(i),
        payload: payloadOf(i),
      })),
    );
    await assert.rejects(world.server.indexHealth.check(), (err: Error) => {
      assert.match(
        err.message,
        new RegExp(
          `variant organic of ${ENTITY}/${MODEL} serves version 1 with ${COUNT} of ${COUNT + ADDED} points indexed \\(80\\.0 %, below 95 %\\)`,
        ),
      );
      assert.match(err.message, /variant ad of/);
      return true;
    });
    assert.equal(degradedSeries(await scrape(), 'organic'), '1');
    assert.deepEqual(world.server.indexHealth.degraded.map((d) => d.variant).sort(), ['ad', 'organic']);

    world.db.resumeIndexing(collection);
    await world.db.waitForIndexing(collection);
    await world.server.indexHealth.check();
    assert.equal(degradedSeries(await scrape(), 'organic'), '0');
    assert.deepEqual(world.server.indexHealth.degraded, []);
  });
});
