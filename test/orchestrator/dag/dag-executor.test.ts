import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type ComponentDependency,
  type DagComponent,
  DagExecutor,
  type ExecuteOptions,
  Topology,
} from '../../../src/orchestrator/dag/index.js';
import { isLatticeError, LatticeError } from '../../../src/platform/errors.js';
import { seededRandom } from '../../../src/platform/random.js';

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise reaction run: completions here are all microtask-driven. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Context {
  readonly log: string[];
}

type Behaviour = 'async' | 'sync' | 'throw' | 'sync-reject';

/**
 * Components whose async ones wait on a gate the test opens (`finish`) or breaks (`break`), logging
 * `start:x` / `end:x` into the shared context so tests can assert order.
 */
class Harness {
  readonly context: Context = { log: [] };
  readonly signals = new Map<string, AbortSignal>();
  readonly optional = new Set<string>();
  readonly behaviour = new Map<string, Behaviour>();
  private readonly gates = new Map<string, Deferred>();

  constructor(readonly topology: Topology) {}

  readonly resolve = (name: string): DagComponent<Context> => {
    if (!this.topology.nodes.includes(name)) throw new Error(`no ${name}`);
    return {
      name,
      required: !this.optional.has(name),
      run: (context, signal) => {
        context.log.push(`start:${name}`);
        this.signals.set(name, signal);
        switch (this.behaviour.get(name) ?? 'async') {
          case 'sync':
            context.log.push(`end:${name}`);
            return;
          case 'throw':
            throw new Error(`${name} broke`);
          case 'sync-reject':
            return Promise.reject(new Error(`${name} rejected`));
          case 'async': {
            const gate = this.gate(name);
            return gate.promise.then(() => {
              context.log.push(`end:${name}`);
            });
          }
        }
      },
    };
  };

  started(name: string): boolean {
    return this.context.log.includes(`start:${name}`);
  }

  running(): string[] {
    return this.topology.nodes.filter((n) => this.started(n) && !this.context.log.includes(`end:${n}`));
  }

  async finish(...names: string[]): Promise<void> {
    for (const name of names) this.gate(name).resolve();
    await settle();
  }

  async break(name: string, error: unknown = new Error(`${name} exploded`)): Promise<void> {
    this.gate(name).reject(error);
    await settle();
  }

  execute(options?: ExecuteOptions<Context>) {
    return new DagExecutor<Context>().execute(this.topology, this.resolve, this.context, options);
  }

  private gate(name: string): Deferred {
    let gate = this.gates.get(name);
    if (gate === undefined) {
      gate = deferred();
      this.gates.set(name, gate);
    }
    return gate;
  }
}

function harness(dependency: ComponentDependency, root?: string): Harness {
  return new Harness(Topology.build(dependency, root === undefined ? undefined : { root }));
}

/** Records the outcome of a promise without awaiting it, so tests can look at it mid-flight. */
function track<T>(promise: Promise<T>): { done: boolean; value?: T; error?: unknown } {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false };
  promise.then(
    (value) => Object.assign(state, { done: true, value }),
    (error: unknown) => Object.assign(state, { done: true, error }),
  );
  return state;
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};
before(() => process.on('unhandledRejection', onUnhandled));
after(() => {
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, [], 'no unhandled rejection in the whole file');
});

describe('DagExecutor: ordering', () => {
  test('a component never starts before every predecessor finished', async () => {
    const h = harness({ a: ['c'], b: ['c'], c: [] });
    const run = track(h.execute());
    await settle();
    assert.deepEqual(h.running(), ['a', 'b']);
    await h.finish('a');
    assert.equal(h.started('c'), false, 'c still waits for b');
    await h.finish('b');
    assert.equal(h.started('c'), true);
    await h.finish('c');
    assert.equal(run.done, true);
    assert.equal(run.value?.outcome('c'), 'ok');
  });

  test('eager: a component starts as soon as its last predecessor finishes, while an unrelated one is slow', async () => {
    // slow and fast are at the same level; after is one level deeper but must not wait for slow.
    const h = harness({ slow: ['end'], fast: ['after'], after: ['end'] }, 'root');
    const run = track(h.execute());
    await settle();
    assert.deepEqual(h.running(), ['root']);
    await h.finish('root');
    assert.deepEqual(h.running().sort(), ['fast', 'slow']);
    await h.finish('fast');
    assert.deepEqual(h.running().sort(), ['after', 'slow'], 'after overlaps with slow');
    await h.finish('after');
    assert.deepEqual(h.running(), ['slow']);
    assert.equal(h.started('end'), false);
    await h.finish('slow');
    assert.deepEqual(h.running(), ['end']);
    await h.finish('end');
    assert.equal(run.done, true);
    assert.equal(run.error, undefined);
  });

  test('diamond: the join starts once, after both branches', async () => {
    const h = harness({ a: ['b', 'c'], b: ['d'], c: ['d'] });
    const run = track(h.execute());
    await h.finish('a');
    assert.deepEqual(h.running().sort(), ['b', 'c']);
    await h.finish('c');
    assert.equal(h.started('d'), false);
    await h.finish('b');
    await h.finish('d');
    assert.equal(run.done, true);
    assert.deepEqual(
      h.context.log.filter((e) => e === 'start:d'),
      ['start:d'],
    );
    assert.deepEqual(h.context.log.slice(-2), ['start:d', 'end:d']);
  });

  test('several roots start together and the DAG completes', async () => {
    const h = harness({ x: ['z'], y: ['z'], w: [] });
    const run = track(h.execute());
    await settle();
    assert.deepEqual(h.running().sort(), ['w', 'x', 'y']);
    await h.finish('w', 'x', 'y', 'z');
    assert.equal(run.done, true);
    assert.equal(run.value?.failedCount, 0);
  });

  test('the implicit root runs before everything else', async () => {
    const h = harness({ a: ['b'], c: [] }, 'feature_init');
    const run = track(h.execute());
    await settle();
    assert.deepEqual(h.context.log, ['start:feature_init']);
    await h.finish('feature_init');
    assert.deepEqual(h.running().sort(), ['a', 'c']);
    await h.finish('a', 'b', 'c');
    assert.equal(run.done, true);
  });

  test('synchronous components complete in execute() itself, in dependency order', async () => {
    const h = harness({ a: ['b', 'c'], b: ['d'], c: ['d'] });
    for (const name of h.topology.nodes) h.behaviour.set(name, 'sync');
    const report = await h.execute();
    const log = h.context.log;
    assert.equal(log.length, 8);
    assert.ok(log.indexOf('end:a') < log.indexOf('start:b'));
    assert.ok(log.indexOf('end:c') < log.indexOf('start:d'));
    assert.ok(log.indexOf('end:b') < log.indexOf('start:d'));
    assert.equal(report.durationsMs.length, 4);
    assert.ok(report.elapsedMs >= 0);
    assert.deepEqual(report.failed(), []);
    assert.equal(report.outcome('nope'), undefined);
  });

  test('a mix of synchronous and asynchronous components', async () => {
    const h = harness({ a: ['b'], b: ['c'], c: ['d'] });
    h.behaviour.set('a', 'sync');
    h.behaviour.set('c', 'sync');
    const run = track(h.execute());
    await settle();
    assert.deepEqual(h.running(), ['b']);
    await h.finish('b');
    assert.deepEqual(h.running(), ['d']);
    await h.finish('d');
    assert.equal(run.done, true);
    assert.deepEqual(h.context.log, [
      'start:a',
      'end:a',
      'start:b',
      'end:b',
      'start:c',
      'end:c',
      'start:d',
      'end:d',
    ]);
  });
});

describe('DagExecutor: random DAGs', () => {
  test('every start follows all its predecessors, and nothing ready is left waiting', async () => {
    const next = seededRandom(42);
    for (let round = 0; round < 25; round++) {
      const size = 3 + Math.floor(next() * 8);
      const dependency: Record<string, string[]> = {};
      const predecessors = new Map<string, string[]>();
      for (let i = 0; i < size; i++) {
        dependency[`n${i}`] = [];
        predecessors.set(`n${i}`, []);
      }
      for (let i = 0; i < size; i++) {
        for (let j = i + 1; j < size; j++) {
          if (next() < 0.3) {
            dependency[`n${i}`]!.push(`n${j}`);
            predecessors.get(`n${j}`)!.push(`n${i}`);
          }
        }
      }
      const h = harness(dependency);
      const ended = (name: string) => h.context.log.includes(`end:${name}`);
      const run = track(h.execute());
      await settle();
      while (!run.done) {
        for (const [name, before] of predecessors) {
          const ready = before.every(ended);
          assert.equal(
            h.started(name),
            ready,
            `round ${round}: ${name} started=${h.started(name)} ready=${ready}`,
          );
        }
        const running = h.running();
        assert.ok(running.length > 0, `round ${round}: stalled`);
        await h.finish(running[Math.floor(next() * running.length)]!);
      }
      assert.equal(run.error, undefined);
      assert.equal(h.context.log.length, 2 * size);
    }
  });
});

describe('DagExecutor: resolution', () => {
  test('an unknown component is INVALID_ARGUMENT naming it, before anything runs', async () => {
    const h = harness({ a: ['ghost'] });
    const resolve = (name: string) => {
      if (name === 'ghost') throw new Error('not registered');
      return h.resolve(name);
    };
    await assert.rejects(new DagExecutor<Context>().execute(h.topology, resolve, h.context), (err) => {
      assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'));
      assert.equal(err.message, 'unknown component "ghost": not registered');
      assert.equal(err.field, 'component_dependency.ghost');
      return true;
    });
    assert.deepEqual(h.context.log, []);
  });

  test('a resolver answering undefined counts as unknown', async () => {
    const h = harness({ a: ['b'] });
    const resolve = (name: string) =>
      name === 'b' ? (undefined as unknown as DagComponent<Context>) : h.resolve(name);
    await assert.rejects(
      new DagExecutor<Context>().execute(h.topology, resolve, h.context),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.message === 'unknown component "b"',
    );
    assert.deepEqual(h.context.log, []);
  });
});

describe('DagExecutor: failures', () => {
  test('a required failure rejects UNAVAILABLE naming it, aborts running components and starts nothing new', async () => {
    const h = harness({ ranker: ['blend'], other: ['later'] });
    const run = track(h.execute());
    await settle();
    const cause = new Error('connection refused');
    await h.break('ranker', cause);
    assert.equal(run.done, true);
    assert.ok(isLatticeError(run.error, 'UNAVAILABLE'));
    assert.equal(run.error.message, 'component "ranker" failed: connection refused');
    assert.equal(run.error.cause, cause);
    const signal = h.signals.get('other');
    assert.equal(signal?.aborted, true);
    assert.equal(signal?.reason, run.error);
    await h.finish('other');
    assert.equal(h.started('blend'), false);
    assert.equal(h.started('later'), false);
  });

  test('a non-required failure calls onFailure before its successors start, then they run', async () => {
    const h = harness({ features: ['ranker'], ranker: [] });
    h.optional.add('features');
    const failures: { name: string; error: unknown; logAtCall: string[] }[] = [];
    const cause = new Error('feature store timed out');
    const run = track(
      h.execute({
        onFailure: (component, error) => {
          failures.push({ name: component.name, error, logAtCall: [...h.context.log] });
        },
      }),
    );
    await h.break('features', cause);
    assert.deepEqual(failures, [{ name: 'features', error: cause, logAtCall: ['start:features'] }]);
    assert.equal(h.started('ranker'), true);
    await h.finish('ranker');
    assert.equal(run.done, true);
    assert.equal(run.value?.outcome('features'), 'failed');
    assert.equal(run.value?.outcome('ranker'), 'ok');
    assert.deepEqual(run.value?.failed(), ['features']);
    assert.equal(run.value?.failedCount, 1);
  });

  test('a synchronous throw is treated like a rejection', async () => {
    const required = harness({ a: ['b'] });
    required.behaviour.set('a', 'throw');
    await assert.rejects(
      required.execute(),
      (err) => isLatticeError(err, 'UNAVAILABLE') && err.message === 'component "a" failed: a broke',
    );
    assert.equal(required.started('b'), false);

    const optional = harness({ a: ['b'] });
    optional.behaviour.set('a', 'throw');
    optional.behaviour.set('b', 'sync');
    optional.optional.add('a');
    const failed: string[] = [];
    const report = await optional.execute({ onFailure: (c) => failed.push(c.name) });
    assert.deepEqual(failed, ['a']);
    assert.equal(report.outcome('a'), 'failed');
    assert.equal(optional.started('b'), true);
  });

  test('an already rejected promise fails the component', async () => {
    const h = harness({ a: [] });
    h.behaviour.set('a', 'sync-reject');
    await assert.rejects(
      h.execute(),
      (err) => isLatticeError(err, 'UNAVAILABLE') && /a rejected/.test(err.message),
    );
  });

  test('onFailure throwing fails the execution with INTERNAL', async () => {
    const h = harness({ a: ['b'] });
    h.optional.add('a');
    h.behaviour.set('a', 'throw');
    await assert.rejects(
      h.execute({
        onFailure: () => {
          throw new Error('bookkeeping bug');
        },
      }),
      (err) =>
        isLatticeError(err, 'INTERNAL') &&
        err.message === 'handling the failure of component "a" failed: bookkeeping bug',
    );
    assert.equal(h.started('b'), false);
  });

  test('late settlements after a rejection cause no unhandled rejection', async () => {
    const h = harness({ a: [], b: [], c: [] });
    const rejected = assert.rejects(h.execute(), (err) => isLatticeError(err, 'UNAVAILABLE'));
    await settle();
    await h.break('a');
    await rejected;
    // b and c reject after execute() already rejected, one of them with a non-Error value.
    await h.break('b', new Error('late'));
    await h.break('c', 'a string');
    await settle();
    assert.deepEqual(unhandled, []);
  });
});

describe('DagExecutor: deadline and cancellation', () => {
  test('a deadline passing rejects DEADLINE_EXCEEDED naming what ran and aborts it', async (t) => {
    // The clock and the deadline's timer are the test's: the deadline passes when the test says so.
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
    const h = harness({ a: ['b'], slow: [] });
    const run = track(h.execute({ deadline: Date.now() + 200 }));
    await h.finish('a');
    t.mock.timers.tick(199);
    await settle();
    assert.equal(run.done, false, 'nothing is abandoned before the deadline');
    t.mock.timers.tick(1);
    await settle();
    assert.equal(run.done, true);
    const err = run.error;
    assert.ok(isLatticeError(err, 'DEADLINE_EXCEEDED'));
    assert.equal(err.message, 'deadline exceeded while components "slow", "b" were running');
    assert.equal(h.signals.get('b')?.aborted, true);
    assert.equal(h.signals.get('slow')?.aborted, true);
    assert.ok(isLatticeError(h.signals.get('slow')?.reason, 'DEADLINE_EXCEEDED'));
  });

  test('pause: while it answers a promise no component starts; the deadline still holds', async (t) => {
    let hold: Deferred | undefined = deferred();
    const h = harness({ a: ['b'] });
    const run = track(h.execute({ pause: () => hold?.promise }));
    await settle();
    assert.equal(h.started('a'), false, 'held before the first component');
    const opened = hold;
    hold = undefined;
    opened.resolve();
    await settle();
    assert.deepEqual(h.running(), ['a']);
    hold = deferred(); // a caller arrives while a runs: b waits for it
    await h.finish('a');
    assert.equal(h.started('b'), false);
    hold.resolve();
    hold = undefined;
    await settle();
    assert.deepEqual(h.running(), ['b']);
    await h.finish('b');
    assert.equal(run.done, true);
    assert.equal(run.error, undefined);

    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
    const held = harness({ c: [] });
    const late = track(held.execute({ deadline: Date.now() + 100, pause: () => deferred().promise }));
    t.mock.timers.tick(100);
    await settle();
    assert.ok(isLatticeError(late.error, 'DEADLINE_EXCEEDED'));
    assert.equal(held.started('c'), false);
  });

  test('a deadline already passed rejects before anything runs', async () => {
    const h = harness({ a: [] });
    await assert.rejects(h.execute({ deadline: Date.now() - 1 }), (err) =>
      isLatticeError(err, 'DEADLINE_EXCEEDED'),
    );
    assert.deepEqual(h.context.log, []);
  });

  test('no deadline and far deadlines let the DAG finish', async () => {
    for (const deadline of [undefined, Number.POSITIVE_INFINITY, Date.now() + 10 * 365 * 86_400_000]) {
      const h = harness({ a: [] });
      const run = track(h.execute({ deadline }));
      await settle();
      await h.finish('a');
      assert.equal(run.done, true);
      assert.equal(run.error, undefined);
    }
  });

  test('the caller aborting rejects CANCELLED and aborts running components', async () => {
    const h = harness({ a: ['b'] });
    const controller = new AbortController();
    const run = track(h.execute({ signal: controller.signal }));
    await settle();
    controller.abort();
    await settle();
    assert.ok(isLatticeError(run.error, 'CANCELLED'));
    assert.equal(h.signals.get('a')?.aborted, true);
    await h.finish('a');
    assert.equal(h.started('b'), false);
  });

  test('a LatticeError abort reason is passed through; a timeout reason is DEADLINE_EXCEEDED', async () => {
    const reason = new LatticeError('DEADLINE_EXCEEDED', 'grpc deadline');
    const h = harness({ a: [] });
    const controller = new AbortController();
    const run = h.execute({ signal: controller.signal });
    await settle();
    controller.abort(reason);
    await assert.rejects(run, (err) => err === reason);
    assert.equal(h.signals.get('a')?.reason, reason);

    // What AbortSignal.timeout() aborts with (its own timer is unref'd, so it is not used here).
    const timedOut = harness({ a: [] });
    const timer = new AbortController();
    const timing = timedOut.execute({ signal: timer.signal });
    timer.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    await assert.rejects(timing, (err) => isLatticeError(err, 'DEADLINE_EXCEEDED'));
  });

  test('an already aborted signal rejects before anything runs', async () => {
    const h = harness({ a: [] });
    await assert.rejects(h.execute({ signal: AbortSignal.abort() }), (err) =>
      isLatticeError(err, 'CANCELLED'),
    );
    assert.deepEqual(h.context.log, []);
  });

  test('a finished execution stops listening to the caller signal', async () => {
    const h = harness({ a: [] });
    const controller = new AbortController();
    const run = h.execute({ signal: controller.signal, deadline: Date.now() + 60_000 });
    await h.finish('a');
    await run;
    controller.abort();
    assert.equal(h.signals.get('a')?.aborted, false);
  });
});
