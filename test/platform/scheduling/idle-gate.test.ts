import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdleGate } from '../../../src/platform/scheduling/index.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('idle() is undefined with nothing in flight: background work goes on at once', () => {
  const gate = new IdleGate();
  assert.equal(gate.idle(), undefined);
  gate.enter();
  gate.leave();
  assert.equal(gate.idle(), undefined);
  assert.equal(gate.inFlight, 0);
});

test('waiters resume only once every foreground request has left, on a later turn', async () => {
  const gate = new IdleGate();
  gate.enter();
  gate.enter();
  let resumed = 0;
  void gate.idle()!.then(() => resumed++);
  void gate.idle()!.then(() => resumed++);
  gate.leave();
  await turn();
  assert.equal(resumed, 0, 'one request still runs');
  gate.leave();
  await Promise.resolve();
  assert.equal(resumed, 0, 'not in the same turn as the last leave: its answer is written first');
  await turn();
  await turn();
  assert.equal(resumed, 2);
});

test('a request arriving before the wake keeps the background waiting', async () => {
  const gate = new IdleGate();
  gate.enter();
  let resumed = false;
  void gate.idle()!.then(() => {
    resumed = true;
  });
  gate.leave();
  gate.enter(); // before the wake's turn
  await turn();
  await turn();
  assert.equal(resumed, false);
  gate.leave();
  await turn();
  await turn();
  assert.equal(resumed, true);
});
