/**
 * The ConfigStore contract: one suite every adapter runs, so the embedded and distributed stores
 * cannot drift apart. An adapter's test file supplies a way to make a fresh, empty key space.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type {
  ConfigEvent,
  ConfigStore,
  ConfigWatchOptions,
} from '../../../src/platform/config-store/index.js';
import { isLatticeError, type LatticeError } from '../../../src/platform/errors.js';
import { eventually } from '../../support/servers.js';

/** A fresh, empty key space on one backend, which several store instances can open. */
export interface ConfigSpace {
  /** A new store instance over this space (like another process would open). */
  open(): Promise<ConfigStore>;
  /** Stores text that is not a JSON document under `key`, bypassing the store. */
  writeMalformed(key: string): Promise<void>;
  dispose(): Promise<void>;
}

export interface ConfigStoreContractOptions {
  readonly name: string;
  readonly createSpace: () => Promise<ConfigSpace>;
  /** A reason to skip the whole suite (server not reachable on a developer machine). */
  readonly skip?: string | false;
}

/** Collects a watch's events and errors, and waits for them. */
export class WatchRecorder {
  readonly events: ConfigEvent[] = [];
  readonly errors: LatticeError[] = [];
  readonly listener = (event: ConfigEvent): void => {
    this.events.push(event);
  };
  readonly options = (extra: ConfigWatchOptions = {}): ConfigWatchOptions => ({
    onError: (error) => this.errors.push(error),
    ...extra,
  });

  /** Events as short strings: `put models/a {"v":1}`, `delete models/a`, `invalid models/bad`. */
  get lines(): string[] {
    return this.events.map(describeEvent);
  }

  async waitFor(line: string, timeoutMs = 10_000): Promise<void> {
    await eventually(
      () => this.lines.includes(line),
      timeoutMs,
      `watch event "${line}" (got: ${JSON.stringify(this.lines)})`,
    );
  }

  async waitForCount(count: number, timeoutMs = 10_000): Promise<void> {
    await eventually(
      () => this.events.length >= count,
      timeoutMs,
      `${count} watch events (got: ${JSON.stringify(this.lines)})`,
    );
  }
}

export function describeEvent(event: ConfigEvent): string {
  switch (event.type) {
    case 'put':
      return `put ${event.key} ${JSON.stringify(event.value)}`;
    case 'delete':
      return `delete ${event.key}`;
    case 'invalid':
      return `invalid ${event.key}`;
  }
}

async function rejectsWith(
  code: string,
  work: () => Promise<unknown>,
  message?: RegExp,
): Promise<LatticeError> {
  let caught: unknown;
  try {
    await work();
  } catch (err) {
    caught = err;
  }
  assert.ok(isLatticeError(caught), `expected a LatticeError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}

export function configStoreContract(options: ConfigStoreContractOptions): void {
  describe(`ConfigStore contract: ${options.name}`, { skip: options.skip }, () => {
    let space: ConfigSpace;
    let store: ConfigStore;
    const opened: ConfigStore[] = [];
    const open = async (): Promise<ConfigStore> => {
      const s = await space.open();
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      space = await options.createSpace();
      store = await open();
    });

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
      await space.dispose();
    });

    it('get returns undefined for a missing key; put then get returns the value and its revision', async () => {
      assert.equal(await store.get('models/catalog_ranker'), undefined);
      const revision = await store.put('models/catalog_ranker', { version: 1 });
      assert.ok(Number.isSafeInteger(revision) && revision > 0);
      assert.deepEqual(await store.get('models/catalog_ranker'), {
        key: 'models/catalog_ranker',
        value: { version: 1 },
        revision,
      });
    });

    it('put replaces the value and the revision grows', async () => {
      const first = await store.put('compute/blend', { expr: 'a b +' });
      const second = await store.put('compute/blend', { expr: 'a b *' });
      assert.ok(second > first, `${second} > ${first}`);
      const entry = await store.get('compute/blend');
      assert.deepEqual(entry?.value, { expr: 'a b *' });
      assert.equal(entry?.revision, second);
    });

    it('values round-trip as JSON documents', async () => {
      const documents: Record<string, unknown> = {
        'docs/object': {
          nested: { list: [1, 2.5, -3e-7, 'x', true, null], empty: {} },
          text: 'ünïcødé ✓ "q"',
        },
        'docs/array': [{ a: 1 }, [], 'two'],
        'docs/string': 'just text',
        'docs/number': 42,
        'docs/false': false,
        'docs/null': null,
      };
      for (const [key, value] of Object.entries(documents)) await store.put(key, value);
      for (const [key, value] of Object.entries(documents)) {
        assert.deepEqual((await store.get(key))?.value, value, key);
      }
      assert.notEqual(await store.get('docs/null'), undefined, 'a null document is not a missing key');
    });

    it('delete removes the key and says whether it existed', async () => {
      await store.put('models/a', 1);
      assert.equal(await store.delete('models/a'), true);
      assert.equal(await store.get('models/a'), undefined);
      assert.equal(await store.delete('models/a'), false);
      assert.equal(await store.delete('models/never'), false);
    });

    it('list returns the documents under a prefix, sorted by key', async () => {
      for (const key of ['models/b', 'models/a', 'models/sub/c', 'models_v2/d', 'compute/e']) {
        await store.put(key, { key });
      }
      const keys = async (prefix: string) => (await store.list(prefix)).map((e) => e.key);
      assert.deepEqual(await keys('models/'), ['models/a', 'models/b', 'models/sub/c']);
      assert.deepEqual(await keys('models'), ['models/a', 'models/b', 'models/sub/c', 'models_v2/d']);
      assert.deepEqual(await keys('models/s'), ['models/sub/c']);
      assert.deepEqual(await keys(''), ['compute/e', 'models/a', 'models/b', 'models/sub/c', 'models_v2/d']);
      assert.deepEqual(await keys('nothing/'), []);
      const [entry] = await store.list('compute/');
      assert.deepEqual(entry, (await store.get('compute/e')) ?? assert.fail('missing compute/e'));
    });

    it('rejects invalid keys and prefixes with INVALID_ARGUMENT', async () => {
      for (const key of [
        '',
        '/models/a',
        'models/../x',
        '..',
        'models//a',
        'models/a/',
        'models/.hidden',
        'a b',
      ]) {
        await rejectsWith('INVALID_ARGUMENT', () => store.get(key));
        await rejectsWith('INVALID_ARGUMENT', () => store.put(key, 1));
        await rejectsWith('INVALID_ARGUMENT', () => store.delete(key));
      }
      for (const prefix of ['/models', '../', 'models//', 'a/../b/']) {
        await rejectsWith('INVALID_ARGUMENT', () => store.list(prefix));
        await rejectsWith('INVALID_ARGUMENT', () => store.watch(prefix, () => {}));
      }
    });

    it('rejects values JSON cannot represent with INVALID_ARGUMENT', async () => {
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      const values: unknown[] = [
        undefined,
        () => 1,
        1n,
        Number.NaN,
        { x: Infinity },
        circular,
        new Date(),
        new Map(),
      ];
      for (const value of values) {
        await rejectsWith(
          'INVALID_ARGUMENT',
          () => store.put('models/bad_value', value),
          /models\/bad_value/,
        );
      }
      assert.equal(await store.get('models/bad_value'), undefined);
    });

    it('a watch sees puts and deletes under its prefix, in order, and nothing else', async () => {
      const seen = new WatchRecorder();
      const watch = await store.watch('models/', seen.listener, seen.options());
      const r1 = await store.put('models/a', { v: 1 });
      await seen.waitFor('put models/a {"v":1}');
      await store.put('other/x', { v: 1 });
      await store.put('models_v2/x', { v: 1 });
      const r2 = await store.put('models/a', { v: 2 });
      await seen.waitFor('put models/a {"v":2}');
      await store.delete('models/a');
      await seen.waitFor('delete models/a');
      await store.put('models/sub/b', { v: 3 });
      await seen.waitFor('put models/sub/b {"v":3}');
      assert.deepEqual(seen.lines, [
        'put models/a {"v":1}',
        'put models/a {"v":2}',
        'delete models/a',
        'put models/sub/b {"v":3}',
      ]);
      assert.deepEqual(
        seen.events.slice(0, 2).map((e) => e.revision),
        [r1, r2],
        'put events carry the revision put returned',
      );
      const revisions = seen.events.map((e) => e.revision);
      assert.deepEqual(
        revisions,
        [...revisions].sort((a, b) => a - b),
        'revisions grow',
      );
      await watch.close();
    });

    it('a watch with initial: true delivers every existing key first, then later changes', async () => {
      await store.put('models/b', 2);
      await store.put('models/a', 1);
      await store.put('other/c', 3);
      const seen = new WatchRecorder();
      const watch = await store.watch('models/', seen.listener, seen.options({ initial: true }));
      assert.deepEqual(
        seen.lines,
        ['put models/a 1', 'put models/b 2'],
        'snapshot delivered before watch() resolves',
      );
      await store.put('models/c', 3);
      await seen.waitFor('put models/c 3');
      await store.delete('models/a');
      await seen.waitFor('delete models/a');
      assert.deepEqual(seen.lines, ['put models/a 1', 'put models/b 2', 'put models/c 3', 'delete models/a']);
      await watch.close();
    });

    it('loses no change made while the watch is being set up', async () => {
      const last = 40;
      let written = 0;
      const writer = (async () => {
        for (let i = 1; i <= last; i++) {
          await store.put('counter/value', i);
          written = i;
        }
      })();
      await eventually(() => written >= 5, 10_000, 'the writer to start');
      const seen = new WatchRecorder();
      const watch = await store.watch('counter/', seen.listener, seen.options({ initial: true }));
      await writer;
      await seen.waitFor(`put counter/value ${last}`);
      const values = seen.events.map((e) => (e.type === 'put' ? Number(e.value) : -1));
      assert.deepEqual(
        values,
        [...values].sort((a, b) => a - b),
        `values arrive in order: ${values}`,
      );
      assert.ok(values[0] !== undefined && values[0] >= 5, 'the snapshot holds the value at watch time');
      await watch.close();
    });

    it('reports a malformed document, skips it, and keeps watching', async () => {
      const seen = new WatchRecorder();
      const watch = await store.watch('models/', seen.listener, seen.options());
      await space.writeMalformed('models/bad');
      await seen.waitFor('invalid models/bad');
      const invalid = seen.events.find((e) => e.type === 'invalid');
      assert.ok(invalid?.type === 'invalid');
      assert.match(invalid.reason, /models\/bad/);
      assert.match(invalid.reason, /line \d+, column \d+/);

      await store.put('models/good', { ok: true });
      await seen.waitFor('put models/good {"ok":true}');

      const error = await rejectsWith('INVALID_ARGUMENT', () => store.get('models/bad'), /models\/bad/);
      assert.match(error.message, /line 2, column \d+/);

      const reported: string[] = [];
      const listed = await store.list('models/', { onInvalid: (bad) => reported.push(bad.key) });
      assert.deepEqual(
        listed.map((e) => e.key),
        ['models/good'],
      );
      assert.deepEqual(reported, ['models/bad']);

      await store.put('models/bad', { fixed: true });
      await seen.waitFor('put models/bad {"fixed":true}');
      assert.deepEqual((await store.get('models/bad'))?.value, { fixed: true });
      await watch.close();
    });

    it('reports malformed documents in the initial snapshot as invalid events', async () => {
      await space.writeMalformed('models/bad');
      await store.put('models/ok', 1);
      const seen = new WatchRecorder();
      const watch = await store.watch('models/', seen.listener, seen.options({ initial: true }));
      assert.deepEqual(seen.lines, ['invalid models/bad', 'put models/ok 1']);
      await store.delete('models/bad');
      await seen.waitFor('delete models/bad');
      await watch.close();
    });

    it('a watcher sees puts and deletes made through another store instance', async () => {
      const other = await open();
      const seen = new WatchRecorder();
      const watch = await store.watch('', seen.listener, seen.options());
      await other.put('models/shared', { from: 'other' });
      await seen.waitFor('put models/shared {"from":"other"}');
      assert.deepEqual((await store.get('models/shared'))?.value, { from: 'other' });
      await other.delete('models/shared');
      await seen.waitFor('delete models/shared');
      await watch.close();
    });

    it('a listener that throws does not stop the watch', async () => {
      const errors: LatticeError[] = [];
      const lines: string[] = [];
      const watch = await store.watch(
        'models/',
        (event) => {
          lines.push(describeEvent(event));
          if (lines.length === 1) throw new Error('listener bug');
        },
        { onError: (error) => errors.push(error) },
      );
      await store.put('models/a', 1);
      await eventually(() => errors.length === 1, 10_000, 'the listener error to be reported');
      assert.match(errors[0]?.message ?? '', /listener threw/);
      await store.put('models/b', 2);
      await eventually(() => lines.includes('put models/b 2'), 10_000, 'the next event');
      await watch.close();
    });

    it('closing a watch stops its events; closing the store closes its watches and later calls fail', async () => {
      const writer = await open();
      const closedWatch = new WatchRecorder();
      const storeWatch = new WatchRecorder();
      const barrier = new WatchRecorder();
      const handle = await store.watch('models/', closedWatch.listener, closedWatch.options());
      await store.watch('models/', storeWatch.listener, storeWatch.options());
      const barrierWatch = await writer.watch('models/', barrier.listener, barrier.options());
      await handle.close();
      await handle.close(); // twice is fine
      await store.close();
      await writer.put('models/after_close', 1);
      await barrier.waitFor('put models/after_close 1');
      assert.deepEqual(closedWatch.lines, []);
      assert.deepEqual(storeWatch.lines, []);
      await rejectsWith('FAILED_PRECONDITION', () => store.get('models/after_close'));
      await rejectsWith('FAILED_PRECONDITION', () => store.watch('models/', () => {}));
      await store.close(); // twice is fine
      await barrierWatch.close();
    });
  });
}
