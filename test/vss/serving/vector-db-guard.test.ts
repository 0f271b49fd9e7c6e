import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLatticeError, LatticeError } from '../../../src/platform/errors.js';
import { VectorDbGuard } from '../../../src/vss/serving/vector-db-guard.js';

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    assert.ok(isLatticeError(err), `expected a LatticeError, got ${String(err)}`);
    return { code: err.code, message: err.message };
  }
  assert.fail('expected a rejection');
}

const never = () => new Promise<never>(() => {});

describe('VectorDbGuard', () => {
  test('passes results and caller errors through unchanged', async () => {
    const guard = new VectorDbGuard();
    assert.deepEqual(await guard.run(async () => [1, 2]), [1, 2]);
    const invalid = new LatticeError('INVALID_ARGUMENT', 'bad filter', { field: 'filters' });
    await assert.rejects(
      guard.run(async () => {
        throw invalid;
      }),
      (err) => err === invalid,
    );
  });

  test('a call slower than the timeout is DEADLINE_EXCEEDED naming the timeout', async () => {
    const guard = new VectorDbGuard({ timeoutMs: 30 });
    // The call never ends: only the guard's timer can end it, with its own message.
    const { code, message } = await codeOf(guard.run(never));
    assert.equal(code, 'DEADLINE_EXCEEDED');
    assert.match(message, /within 30 ms/);
  });

  test("the caller's abort rejects at once with the caller's reason", async () => {
    const guard = new VectorDbGuard({ timeoutMs: 60_000 });
    const controller = new AbortController();
    const running = guard.run(never, controller.signal);
    controller.abort(new LatticeError('DEADLINE_EXCEEDED', 'Search: deadline exceeded'));
    assert.deepEqual(await codeOf(running), {
      code: 'DEADLINE_EXCEEDED',
      message: 'Search: deadline exceeded',
    });
    // Already aborted: the call is not even started.
    let calls = 0;
    const aborted = new AbortController();
    aborted.abort('gone');
    const { code } = await codeOf(
      guard.run(async () => {
        calls++;
      }, aborted.signal),
    );
    assert.equal(code, 'CANCELLED');
    assert.equal(calls, 0);
  });

  test('unexpected errors are UNAVAILABLE; after N failures the breaker sheds without calling', async () => {
    const guard = new VectorDbGuard({ consecutiveFailures: 3, halfOpenAfterMs: 60_000 });
    let calls = 0;
    const failing = async () => {
      calls++;
      throw new Error('connection reset');
    };
    for (let i = 0; i < 3; i++) {
      const { code, message } = await codeOf(guard.run(failing));
      assert.equal(code, 'UNAVAILABLE');
      assert.match(message, /vector database call failed/);
    }
    const { code, message } = await codeOf(guard.run(failing));
    assert.equal(code, 'UNAVAILABLE');
    assert.match(message, /circuit is open/);
    assert.equal(calls, 3);
  });

  test('caller mistakes never open the breaker; a success resets the count', async () => {
    const guard = new VectorDbGuard({ consecutiveFailures: 2, halfOpenAfterMs: 60_000 });
    for (let i = 0; i < 5; i++) {
      const { code } = await codeOf(
        guard.run(async () => {
          throw new LatticeError('NOT_FOUND', 'no such collection');
        }),
      );
      assert.equal(code, 'NOT_FOUND');
    }
    const unavailable = async () => {
      throw new LatticeError('UNAVAILABLE', 'down');
    };
    await codeOf(guard.run(unavailable));
    assert.equal(await guard.run(async () => 'ok'), 'ok');
    await codeOf(guard.run(unavailable));
    assert.equal(await guard.run(async () => 'still closed'), 'still closed');
  });

  test('timeouts count as failures; after the half-open delay one trial call closes it again', async (t) => {
    // The calls' timers and the breaker's clock are the test's: nothing depends on how fast it runs.
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
    const guard = new VectorDbGuard({ timeoutMs: 10, consecutiveFailures: 2, halfOpenAfterMs: 50 });
    for (let i = 0; i < 2; i++) {
      const timingOut = codeOf(guard.run(never));
      t.mock.timers.tick(10);
      assert.equal((await timingOut).code, 'DEADLINE_EXCEEDED');
    }
    assert.match((await codeOf(guard.run(async () => 'shed'))).message, /circuit is open/);
    t.mock.timers.tick(49);
    assert.match((await codeOf(guard.run(async () => 'shed'))).message, /circuit is open/);
    t.mock.timers.tick(1);
    assert.equal(await guard.run(async () => 'recovered'), 'recovered');
    assert.equal(await guard.run(async () => 'closed'), 'closed');
  });
});
