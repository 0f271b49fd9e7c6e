import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createConfigStore, FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { eventually } from '../../support/servers.js';
import { configStoreContract, WatchRecorder } from './contract.js';

const storeOptions = { debounceMs: 20, pollIntervalMs: 200 };

configStoreContract({
  name: 'FileConfigStore',
  createSpace: async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lattice-config-'));
    return {
      open: async () => new FileConfigStore({ dir, ...storeOptions }),
      writeMalformed: async (key) => {
        const path = join(dir, `${key}.json`);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, '{"a": 1,\n  "b": }\n');
      },
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  },
});

describe('FileConfigStore', () => {
  let root: string;
  let dir: string;
  let store: FileConfigStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'lattice-config-'));
    dir = join(root, 'config');
    store = new FileConfigStore({ dir, ...storeOptions });
  });

  afterEach(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });

  const write = async (relative: string, text: string) => {
    const path = join(dir, relative);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  };

  it('reads YAML documents (.yaml and .yml); .json takes precedence', async () => {
    await write('models/a.yaml', 'name: a\nlimits:\n  - 1\n  - 2\n');
    await write('models/b.yml', '- x\n- y\n');
    await write('models/c.yaml', 'from: yaml\n');
    await write('models/c.json', '{"from": "json"}');
    assert.deepEqual((await store.get('models/a'))?.value, { name: 'a', limits: [1, 2] });
    assert.deepEqual((await store.get('models/b'))?.value, ['x', 'y']);
    assert.deepEqual((await store.get('models/c'))?.value, { from: 'json' });
    assert.deepEqual(
      (await store.list('models/')).map((e) => [e.key, e.value]),
      [
        ['models/a', { name: 'a', limits: [1, 2] }],
        ['models/b', ['x', 'y']],
        ['models/c', { from: 'json' }],
      ],
    );
  });

  it('put writes pretty JSON atomically and replaces a YAML file of the same key', async () => {
    await write('models/a.yaml', 'old: true\n');
    await store.put('models/a', { new: true });
    assert.equal(await readFile(join(dir, 'models/a.json'), 'utf8'), '{\n  "new": true\n}\n');
    assert.deepEqual(await readdir(join(dir, 'models')), ['a.json'], 'no YAML file and no temp file left');
    assert.equal(await store.delete('models/a'), true);
    assert.deepEqual(await readdir(join(dir, 'models')), []);
  });

  it('get of a malformed document names the file and the line and column of the error', async () => {
    await write('models/bad.json', '{\n  "name": "x",\n  "limit": tru\n}\n');
    await write('models/bad_yaml.yaml', 'name: x\nlimits: [1, 2\n');
    await write('models/empty.json', '');
    const cases: [string, RegExp][] = [
      ['models/bad', /models\/bad\.json: invalid JSON at line 3, column 12: unexpected "tru"/],
      ['models/bad_yaml', /models\/bad_yaml\.yaml: invalid YAML: .*line \d+, column \d+/],
      ['models/empty', /models\/empty\.json: invalid JSON at line 1, column 1: unexpected end of input/],
    ];
    for (const [key, message] of cases) {
      await assert.rejects(store.get(key), (err: unknown) => {
        assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
        assert.match(err.message, message);
        assert.equal(err.field, key);
        return true;
      });
    }
  });

  it('ignores hidden and non-document files, and reports files whose names are not keys', async () => {
    await write('models/.a.json.swp', 'junk');
    await write('models/.hidden.json', '{}');
    await write('models/readme.txt', 'hello');
    await write('.git/config.json', '{}');
    await write('models/my model.json', '{}');
    await write('models/ok.json', '{}');
    const invalid: string[] = [];
    const keys = (await store.list('', { onInvalid: (bad) => invalid.push(bad.reason) })).map((e) => e.key);
    assert.deepEqual(keys, ['models/ok']);
    assert.equal(invalid.length, 1);
    assert.match(invalid[0] ?? '', /my model\.json: its name does not make a valid key/);

    const seen = new WatchRecorder();
    await store.watch('models/', seen.listener, seen.options({ initial: true }));
    assert.deepEqual(seen.lines, ['invalid models/my model', 'put models/ok {}']);
  });

  it('a watch creates a directory that does not exist yet and sees files written into it', async () => {
    const seen = new WatchRecorder();
    await store.watch('', seen.listener, seen.options({ initial: true }));
    assert.deepEqual(seen.lines, []);
    await write('models/deep/er/x.json', '{"x": 1}');
    await seen.waitFor('put models/deep/er/x {"x":1}');
  });

  it('file events alone drive a watch, in new subdirectories too', async () => {
    const eventsOnly = new FileConfigStore({ dir, debounceMs: 20, pollIntervalMs: 600_000 });
    try {
      const seen = new WatchRecorder();
      await eventsOnly.watch('', seen.listener, seen.options());
      await write('a.json', '1');
      await seen.waitFor('put a 1', 3000);
      await write('models/new/sub/b.json', '2');
      await seen.waitFor('put models/new/sub/b 2', 3000);
      await rm(join(dir, 'models/new'), { recursive: true });
      await seen.waitFor('delete models/new/sub/b', 3000);
      assert.deepEqual(seen.errors, []);
    } finally {
      await eventsOnly.close();
    }
  });

  it('file events alone see in-place writes and repeated replacements of one file, promptly', async () => {
    // With the periodic rescan out of the way, only OS file events can deliver these within 1.5 s.
    const eventsOnly = new FileConfigStore({ dir, debounceMs: 20, pollIntervalMs: 600_000 });
    try {
      await write('models/a.json', '{"v": 0}');
      const seen = new WatchRecorder();
      await eventsOnly.watch('models/', seen.listener, seen.options());
      for (let v = 1; v <= 3; v++) {
        // Replaced by rename, as editors, deploy tools and put() write: the path gets a new inode.
        await write(`models/.a.json.${v}`, `{"v": ${v}}`);
        await rename(join(dir, `models/.a.json.${v}`), join(dir, 'models/a.json'));
        await seen.waitFor(`put models/a {"v":${v}}`, 1500);
      }
      // Then written in place, and replaced through the store, twice each.
      for (let v = 4; v <= 5; v++) {
        await writeFile(join(dir, 'models/a.json'), `{"v": ${v}}`);
        await seen.waitFor(`put models/a {"v":${v}}`, 1500);
      }
      for (let v = 6; v <= 7; v++) {
        await eventsOnly.put('models/a', { v });
        await seen.waitFor(`put models/a {"v":${v}}`, 1500);
      }
      await writeFile(join(dir, 'models/a.json'), '{"v": 8}');
      await seen.waitFor('put models/a {"v":8}', 1500);
      assert.deepEqual(seen.errors, []);
    } finally {
      await eventsOnly.close();
    }
  });

  it("a watch sees editors' rename-writes, truncate-writes and bursts, ending at the last content", async () => {
    await write('models/a.json', '{"v": 0}');
    const seen = new WatchRecorder();
    await store.watch('models/', seen.listener, seen.options());
    // Vim-style: write a temp file, rename it over the document.
    await write('models/.a.json.tmp', '{"v": 1}');
    await rename(join(dir, 'models/.a.json.tmp'), join(dir, 'models/a.json'));
    await seen.waitFor('put models/a {"v":1}');
    // A burst of writes in place; only the final state must be reached.
    for (let v = 2; v <= 30; v++) await writeFile(join(dir, 'models/a.json'), `{"v": ${v}}`);
    await seen.waitFor('put models/a {"v":30}');
    const values = seen.events.map((e) => (e.type === 'put' ? (e.value as { v: number }).v : -1));
    assert.deepEqual(
      values,
      [...values].sort((a, b) => a - b),
      `in order: ${values}`,
    );
    // Touching a file without changing it is not a change.
    const count = seen.events.length;
    await writeFile(join(dir, 'models/a.json'), '{"v": 30}');
    await store.put('models/marker', 1);
    await seen.waitFor('put models/marker 1');
    assert.equal(seen.events.length, count + 1, JSON.stringify(seen.lines));
  });

  it('a watch survives its directory being removed and created again', async () => {
    await write('models/a.json', '1');
    const seen = new WatchRecorder();
    await store.watch('models/', seen.listener, seen.options({ initial: true }));
    await rm(dir, { recursive: true });
    await seen.waitFor('delete models/a');
    await write('models/b.json', '2');
    await seen.waitFor('put models/b 2');
    await write('models/c.yaml', 'c: 3');
    await seen.waitFor('put models/c {"c":3}');
  });

  it('a watch reports a file that turns malformed, keeps going, and sees it fixed', async () => {
    await write('models/a.json', '{"v": 1}');
    const seen = new WatchRecorder();
    await store.watch('models/', seen.listener, seen.options({ initial: true }));
    await write('models/a.json', '{"v": ');
    await seen.waitFor('invalid models/a');
    const invalid = seen.events.at(-1);
    assert.ok(invalid?.type === 'invalid');
    assert.match(invalid.reason, /a\.json: invalid JSON at line 1, column 7: unexpected end of input/);
    await write('models/b.yaml', 'b: [');
    await seen.waitFor('invalid models/b');
    await write('models/a.json', '{"v": 2}');
    await seen.waitFor('put models/a {"v":2}');
  });

  it('createConfigStore opens a file store and rejects bad settings with INVALID_ARGUMENT', async () => {
    const created = await createConfigStore({ kind: 'file', dir });
    try {
      await created.put('models/x', 1);
      assert.deepEqual((await store.get('models/x'))?.value, 1);
    } finally {
      await created.close();
    }
    for (const settings of [
      { kind: 'file', dir: '' },
      { kind: 'file', directory: dir },
      { kind: 'zookeeper' },
      { kind: 'etcd', endpoints: [] },
      { kind: 'etcd', endpoints: ['127.0.0.1:2379'], dialTimeoutMs: -1 },
    ]) {
      // @ts-expect-error deliberately wrong settings, as they might come from a settings file
      await assert.rejects(createConfigStore(settings), (err: unknown) =>
        isLatticeError(err, 'INVALID_ARGUMENT'),
      );
    }
  });

  it('close releases the watches (the test process exits)', async () => {
    const seen = new WatchRecorder();
    const watch = await store.watch('', seen.listener, seen.options());
    await store.close();
    await watch.close();
    await write('models/late.json', '1');
    const other = new FileConfigStore({ dir, ...storeOptions });
    const barrier = new WatchRecorder();
    await other.watch('', barrier.listener, barrier.options({ initial: true }));
    await eventually(() => barrier.lines.includes('put models/late 1'), 5000, 'the barrier watch');
    await other.close();
    assert.deepEqual(seen.lines, []);
  });
});
