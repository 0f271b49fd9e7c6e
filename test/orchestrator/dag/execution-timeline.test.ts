/**
 * The executor fills an ExecutionTimeline it is given, whichever way the execution ends: every node
 * in topological order with its state (ran, failed, skipped, cancelled), a start and a duration of at
 * least 0, successors starting no earlier than their predecessors. Times are not otherwise compared.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type DagComponent,
  DagExecutor,
  ExecutionTimeline,
  Topology,
} from '../../../src/orchestrator/dag/index.js';

type Run = (signal: AbortSignal) => void | Promise<void>;

function components(runs: Record<string, { required?: boolean; run: Run }>) {
  return (name: string): DagComponent<null> => ({
    name,
    required: runs[name]?.required ?? true,
    run: (_context, signal) => runs[name]!.run(signal),
  });
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const rows = (timeline: ExecutionTimeline) => timeline.components.map((c) => [c.name, c.state]);

test('a successful execution: every node ran, a failed optional one marked failed', async () => {
  const topology = Topology.build({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] });
  const timeline = new ExecutionTimeline();
  await new DagExecutor<null>().execute(
    topology,
    components({
      a: { run: () => {} },
      b: { run: tick },
      c: {
        required: false,
        run: async () => {
          await tick();
          throw new Error('c broke');
        },
      },
      d: { run: tick },
    }),
    null,
    { timeline },
  );
  assert.deepEqual(rows(timeline), [
    ['a', 'ran'],
    ['b', 'ran'],
    ['c', 'failed'],
    ['d', 'ran'],
  ]);
  const at = Object.fromEntries(timeline.components.map((c) => [c.name, c]));
  for (const c of timeline.components) assert.ok(c.startMs >= 0 && c.durationMs >= 0, JSON.stringify(c));
  assert.ok(at.d!.startMs >= at.b!.startMs + at.b!.durationMs - 0.001, 'd after b');
  assert.ok(at.d!.startMs >= at.c!.startMs + at.c!.durationMs - 0.001, 'd after c');
});

test('an abandoned execution: the failed required node, one still running cancelled, the rest skipped', async () => {
  const topology = Topology.build({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] });
  const timeline = new ExecutionTimeline();
  await assert.rejects(
    new DagExecutor<null>().execute(
      topology,
      components({
        a: { run: () => {} },
        b: {
          run: async () => {
            await tick();
            throw new Error('b broke');
          },
        },
        // Runs until the execution aborts it.
        c: {
          run: (signal) =>
            new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        },
        d: { run: () => {} },
      }),
      null,
      { timeline },
    ),
    /component "b" failed/,
  );
  assert.deepEqual(rows(timeline), [
    ['a', 'ran'],
    ['b', 'failed'],
    ['c', 'cancelled'],
    ['d', 'skipped'],
  ]);
});
