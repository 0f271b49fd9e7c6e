/**
 * A vss serving server that listens while its process is still starting (`startClosed`, as
 * `lattice vss` and `lattice up` start it) answers every call UNAVAILABLE at once, saying it is
 * starting, rather than letting the call wait for the rest of the process; once opened it serves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { ENTITY, expectStatus, MODEL, openWorld, type World } from './harness.js';

describe('vss serving: calls during start-up', () => {
  let world: World;

  before(async () => {
    world = await openWorld({ server: { startClosed: true, indexHealthIntervalMs: 0 } });
  });
  after(() => world.close());

  const query = () => ({
    queries: [{ embedding: { values: [...world.fixture.vector(0)] }, pageToken: '', filters: [] }],
    pageSize: 5,
  });

  test('answer UNAVAILABLE at once, saying the server is starting', async () => {
    // The deadline is far: a call left waiting would end DEADLINE_EXCEEDED, not UNAVAILABLE.
    const err = await expectStatus(world.client.search(query(), 60_000), status.UNAVAILABLE);
    assert.match(err.details, /vss-serving is starting and not serving yet; try again shortly/);
    await expectStatus(
      world.client.getEmbeddings({ entity: ENTITY, modelName: MODEL, candidateIds: [world.fixture.ids[0]!] }),
      status.UNAVAILABLE,
    );
  });

  test('are served once the process has started', async () => {
    world.server.open();
    const answer = await world.client.search(query(), 60_000);
    assert.equal(answer.results[0]?.candidates.length, 5);
    assert.equal(answer.results[0]?.candidates[0]?.id, world.fixture.ids[0]);
  });
});
