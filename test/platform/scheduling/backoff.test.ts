import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, backoffDelay } from '../../../src/platform/scheduling/index.js';

describe('backoff', () => {
  it('doubles from the first delay up to the cap, and starts again after a reset', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 500 });
    assert.deepEqual(
      Array.from({ length: 5 }, () => backoff.next()),
      [100, 200, 400, 500, 500],
    );
    assert.equal(backoff.failures, 5);
    backoff.reset();
    assert.equal(backoff.next(), 100);
  });

  it('has no cap unless given one', () => {
    assert.equal(backoffDelay({ initialMs: 200 }, 11), 200 * 2 ** 10);
  });

  it('gives the delay after the nth failure as the schedule does', () => {
    const backoff = new Backoff({ initialMs: 50, maxMs: 2000 });
    for (let failures = 1; failures <= 8; failures++) {
      assert.equal(backoffDelay({ initialMs: 50, maxMs: 2000 }, failures), backoff.next());
    }
  });

  it('draws full jitter in [0, d) and half jitter in [d/2, d]', () => {
    for (let run = 0; run < 200; run++) {
      const full = backoffDelay({ initialMs: 100, maxMs: 1000, jitter: 'full' }, 3);
      assert.ok(full >= 0 && full < 400, `full ${full}`);
      const half = backoffDelay({ initialMs: 100, maxMs: 1000, jitter: 'half' }, 5);
      assert.ok(half >= 500 && half <= 1000, `half ${half}`);
    }
  });
});
