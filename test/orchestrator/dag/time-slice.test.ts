import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type DagComponent, DagExecutor, Topology } from '../../../src/orchestrator/dag/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { inChunks, sliceOver, stopIfOver } from '../../../src/platform/scheduling/index.js';

/** Holds the event loop (a long synchronous loop that checks its time slice) until `done` says so. */
function spin(done: () => boolean): void {
  while (!done()) sliceOver();
}

const chain = Topology.build({ a: ['b'], b: ['c'], c: [] });

function components(run: Record<string, (signal: AbortSignal) => void | Promise<void>>, log: string[]) {
  return (name: string): DagComponent<unknown> => ({
    name,
    required: true,
    run: (_context, signal) => {
      log.push(`start:${name}`);
      return run[name]?.(signal);
    },
  });
}

describe('cooperative time slices', () => {
  test('no component starts once the deadline has passed, even while a busy loop holds the deadline timer', async () => {
    const log: string[] = [];
    const deadline = Date.now() + 200;
    // a and b are synchronous; a holds the loop past the deadline, so the executor's timer cannot fire.
    const run = { a: () => spin(() => Date.now() > deadline) };
    await assert.rejects(new DagExecutor().execute(chain, components(run, log), {}, { deadline }), (err) =>
      isLatticeError(err, 'DEADLINE_EXCEEDED'),
    );
    assert.deepEqual(log, ['start:a']);
  });

  test('a component that gives up at the deadline makes the execution DEADLINE_EXCEEDED, not a component failure', async () => {
    const log: string[] = [];
    const deadline = Date.now() + 200;
    const run = {
      a: async (signal: AbortSignal) => {
        await null; // the executor is waiting, its deadline timer armed
        spin(() => Date.now() > deadline);
        stopIfOver(signal, deadline); // throws: the deadline passed (its timer has not run yet)
      },
    };
    await assert.rejects(new DagExecutor().execute(chain, components(run, log), {}, { deadline }), (err) =>
      isLatticeError(err, 'DEADLINE_EXCEEDED'),
    );
    assert.deepEqual(log, ['start:a']);
  });

  test('once a long loop used up the time slice, the next component waits for a later turn of the event loop', async () => {
    const log: string[] = [];
    // Each holds the loop well past its time slice, as a long loop over a large matrix would.
    const busy = () => {
      const until = performance.now() + 20;
      spin(() => performance.now() > until);
    };
    const run = {
      a: () => {
        setTimeout(() => log.push('timer'), 0);
        busy();
      },
      b: busy,
    };
    const report = await new DagExecutor().execute(chain, components(run, log), {});
    assert.equal(report.failedCount, 0);
    // Without turns, all three would run in one go and the timer only after them. (Whether the timer
    // fires before b or after depends on the event-loop phase the execution started in.)
    assert.equal(log[0], 'start:a');
    assert.equal(log.at(-1), 'start:c');
    assert.ok(log.includes('timer'), log.join(' '));
  });

  test('inChunks: one call for a small count; chunks in order otherwise; stops once the signal aborts', async () => {
    const calls: [number, number][] = [];
    await inChunks(100, new AbortController().signal, Number.POSITIVE_INFINITY, (from, to) => {
      calls.push([from, to]);
    });
    assert.deepEqual(calls, [[0, 100]]);
    calls.length = 0;
    await inChunks(10_000, new AbortController().signal, Number.POSITIVE_INFINITY, (from, to) => {
      calls.push([from, to]);
    });
    assert.deepEqual(calls, [
      [0, 4096],
      [4096, 8192],
      [8192, 10_000],
    ]);
    const controller = new AbortController();
    calls.length = 0;
    await assert.rejects(
      inChunks(10_000, controller.signal, Number.POSITIVE_INFINITY, (from, to) => {
        calls.push([from, to]);
        controller.abort();
      }),
      (err) => isLatticeError(err, 'CANCELLED'),
    );
    assert.deepEqual(calls, [[0, 4096]]);
  });

  test('long loops waiting for a turn resume one per turn of the event loop, round robin', async () => {
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const log: [string, number][] = [];
    // Each chunk holds the loop until the slice is over, as a heavy request's chunk would.
    const loop = (id: string) =>
      inChunks(4096 * 4, new AbortController().signal, Number.POSITIVE_INFINITY, () => {
        log.push([id, turn]);
        spin(() => sliceOver());
      });
    await Promise.all([loop('a'), loop('b'), loop('c')]);
    ticking = false;
    // The first chunks run at once; every later one is a resumption, and no two share a turn.
    const resumed = log.slice(3);
    assert.deepEqual(
      resumed.map(([id]) => id),
      ['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'],
    );
    const turns = resumed.map(([, t]) => t);
    assert.equal(new Set(turns).size, turns.length, `turns ${turns.join(',')}`);
  });
});
