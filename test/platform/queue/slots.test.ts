import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Slots } from '../../../src/platform/queue/jetstream/slots.js';

describe('Slots (the JetStream consumer handler bound)', () => {
  it('tryAcquire takes free slots at once and answers false when none is free', () => {
    const slots = new Slots(2);
    assert.equal(slots.tryAcquire(), true);
    assert.equal(slots.tryAcquire(), true);
    assert.equal(slots.tryAcquire(), false);
    slots.release();
    assert.equal(slots.tryAcquire(), true);
  });

  it('a released slot goes to the first waiter, not to a later tryAcquire', async () => {
    const slots = new Slots(1);
    assert.equal(slots.tryAcquire(), true);
    const order: string[] = [];
    const first = slots.acquire().then((granted) => order.push(`first ${granted}`));
    const second = slots.acquire().then((granted) => order.push(`second ${granted}`));
    slots.release();
    assert.equal(slots.tryAcquire(), false, 'the slot was handed to the waiter');
    await first;
    slots.release();
    await second;
    assert.deepEqual(order, ['first true', 'second true']);
    slots.release();
    assert.equal(slots.tryAcquire(), true);
  });

  it('once closed, tryAcquire answers false and waiters are turned away', async () => {
    const slots = new Slots(1);
    assert.equal(slots.tryAcquire(), true);
    const waiting = slots.acquire();
    slots.close();
    assert.equal(await waiting, false);
    slots.release();
    assert.equal(slots.tryAcquire(), false);
    assert.equal(await slots.acquire(), false);
  });
});
