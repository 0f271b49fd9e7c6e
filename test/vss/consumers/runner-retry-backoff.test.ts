import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pause } from '../../../src/platform/scheduling/index.js';
import { RetryBackoff } from '../../../src/vss/consumers/retry-backoff.js';

describe('RetryBackoff', () => {
  it('doubles from the base up to the cap, each delay between half and all of the nominal one', () => {
    const backoff = new RetryBackoff({ attempts: 8, baseMs: 100, maxMs: 1000 });
    assert.equal(backoff.attempts, 8);
    for (let run = 0; run < 50; run++) {
      const schedule = backoff.schedule();
      const nominal = [100, 200, 400, 800, 1000, 1000, 1000];
      for (const expected of nominal) {
        const delay = schedule.next();
        assert.ok(delay >= expected / 2 && delay <= expected, `delay ${delay} for nominal ${expected}`);
      }
    }
  });

  it('draws different delays for different batches (jitter)', () => {
    const backoff = new RetryBackoff({ attempts: 3, baseMs: 1000, maxMs: 1000 });
    const firsts = new Set(Array.from({ length: 20 }, () => backoff.schedule().next()));
    assert.ok(firsts.size > 1, 'not all the same');
  });

  it('pause ends early when its signal aborts', async () => {
    const controller = new AbortController();
    const waiting = pause(60_000, controller.signal);
    controller.abort();
    await waiting;
    await pause(60_000, controller.signal);
  });
});
