import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FairGate } from '../../../src/platform/scheduling/index.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('FairGate', () => {
  test('at most `limit` in flight; freed slots go round robin over the waiting requests', async () => {
    const gate = new FairGate(2);
    const big = {};
    const small = {};
    const order: string[] = [];
    const releases: (() => void)[] = [];
    const take = (key: object, name: string) =>
      gate.acquire(key).then((release) => {
        order.push(name);
        releases.push(release);
      });
    // The big request queues ten calls, then the small one arrives with one.
    const pending = Array.from({ length: 10 }, (_, i) => take(big, `big${i}`));
    pending.push(take(small, 'small'));
    await tick();
    assert.deepEqual(order, ['big0', 'big1']);
    assert.equal(gate.active, 2);
    assert.equal(gate.waiting, 9);
    releases.shift()!();
    await tick();
    // big2 was waiting first, but the small request is next in the round robin after the big one's turn.
    assert.deepEqual(order.slice(2), ['big2']);
    releases.shift()!();
    await tick();
    assert.deepEqual(order.slice(3), ['small']);
    while (releases.length > 0) {
      releases.shift()!();
      await tick();
    }
    await Promise.all(pending);
    assert.equal(order.length, 11);
    assert.equal(gate.active, 0);
    assert.equal(gate.waiting, 0);
  });

  test('a release is counted once; an aborted waiter leaves the queue with the reason', async () => {
    const gate = new FairGate(1);
    const release = await gate.acquire({});
    const controller = new AbortController();
    const waiting = gate.acquire({}, controller.signal);
    controller.abort(new Error('caller left'));
    await assert.rejects(waiting, /caller left/);
    assert.equal(gate.waiting, 0);
    release();
    release();
    assert.equal(gate.active, 0);
    const again = await gate.acquire({});
    assert.equal(gate.active, 1);
    again();
    await assert.rejects(gate.acquire({}, AbortSignal.abort(new Error('already gone'))), /already gone/);
    assert.throws(() => new FairGate(0), RangeError);
  });
});
