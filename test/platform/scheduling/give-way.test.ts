/**
 * Heavy calls give way to light ones (time-slice.ts): while a light call of the process runs, the
 * next turn of a heavy call's loop waits until no light call runs, or at most GIVE_WAY_MAX_MS.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  GIVE_WAY_MAX_MS,
  giveWayToLight,
  lightCallRunning,
  nextTurn,
} from '../../../src/platform/scheduling/index.js';

describe('heavy loops give way to light calls', () => {
  test('while a light call runs, a heavy turn waits and others go first; it resumes when the light call ends', async (t) => {
    // The bound's timer is the test's (it never fires here): only the light call's end releases.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const heavy = new AbortController();
    giveWayToLight(heavy.signal);
    const order: string[] = [];
    const endLight = lightCallRunning();
    const heavyTurn = nextTurn(heavy.signal).then(() => order.push('heavy'));
    // A loop of a call that does not give way, asking after the heavy one, is served first.
    await nextTurn(new AbortController().signal).then(() => order.push('other'));
    await nextTurn(new AbortController().signal).then(() => order.push('other'));
    endLight();
    endLight(); // a second end is ignored: the count cannot go below the calls running
    await heavyTurn;
    assert.deepEqual(order, ['other', 'other', 'heavy']);
  });

  test('with no light call running a heavy loop takes turns as any other', async () => {
    const heavy = new AbortController();
    giveWayToLight(heavy.signal);
    const order: string[] = [];
    const heavyTurn = nextTurn(heavy.signal).then(() => order.push('heavy'));
    const other = nextTurn(new AbortController().signal).then(() => order.push('other'));
    await Promise.all([heavyTurn, other]);
    assert.deepEqual(order, ['heavy', 'other']);
  });

  test('a light call that never ends holds a heavy loop back for GIVE_WAY_MAX_MS, no longer', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const heavy = new AbortController();
    giveWayToLight(heavy.signal);
    const endLight = lightCallRunning();
    let resumed = false;
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    try {
      const turn = nextTurn(heavy.signal).then(() => {
        resumed = true;
      });
      await turns(3);
      t.mock.timers.tick(GIVE_WAY_MAX_MS - 1);
      await turns(3);
      assert.equal(resumed, false, 'held back while the light call runs');
      t.mock.timers.tick(1);
      await turn;
      assert.equal(resumed, true, 'resumed while the light call was still running');
    } finally {
      endLight();
    }
  });

  test('a heavy call that ended while giving way stops at its next turn with its own reason', async () => {
    const heavy = new AbortController();
    giveWayToLight(heavy.signal);
    const endLight = lightCallRunning();
    const turn = nextTurn(heavy.signal);
    heavy.abort(new Error('caller went away'));
    endLight();
    await assert.rejects(turn, /cancelled/);
  });
});
