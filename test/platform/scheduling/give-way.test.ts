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
  test('while a light call runs, a heavy turn waits and others go first; it resumes when the light call ends', async () => {
    const heavy = new AbortController();
    giveWayToLight(heavy.signal);
    const order: string[] = [];
    const endLight = lightCallRunning();
    const deferredAt = performance.now();
    const heavyTurn = nextTurn(heavy.signal).then(() => order.push('heavy'));
    // A loop of a call that does not give way, asking after the heavy one, is served first.
    await nextTurn(new AbortController().signal).then(() => order.push('other'));
    await nextTurn(new AbortController().signal).then(() => order.push('other'));
    const lightEndedAt = performance.now();
    endLight();
    endLight(); // a second end is ignored: the count cannot go below the calls running
    await heavyTurn;
    // Either the light call's end released it, or the bound did (a slow machine can take longer
    // than GIVE_WAY_MAX_MS for two turns): never both too early.
    const ms = lightEndedAt - deferredAt;
    if (ms < GIVE_WAY_MAX_MS - 2) assert.deepEqual(order, ['other', 'other', 'heavy']);
    assert.equal(order.at(-1), 'heavy');
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

  // Fails by never finishing when nothing bounds the wait (the generous timeout is not a speed bound).
  test('a light call that never ends holds a heavy loop back only for a bounded time', {
    timeout: 30_000,
  }, async () => {
    const heavy = new AbortController();
    giveWayToLight(heavy.signal);
    const endLight = lightCallRunning();
    let resumed = false;
    try {
      await nextTurn(heavy.signal);
      resumed = true;
    } finally {
      endLight();
    }
    assert.equal(resumed, true, 'resumed while the light call was still running');
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
