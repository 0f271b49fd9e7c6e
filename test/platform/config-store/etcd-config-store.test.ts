import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { Etcd3 } from 'etcd3';
import { EtcdConfigStore } from '../../../src/platform/config-store/etcd/etcd-config-store.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError, type LatticeError } from '../../../src/platform/errors.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';
import { configStoreContract, WatchRecorder } from './contract.js';
import { EtcdProcess, etcdBinaryProblem, freePort } from './etcd-process.js';

const url = await realServer('etcd');
const MALFORMED = '{"a": 1,\n  "b": }';

configStoreContract({
  name: 'EtcdConfigStore',
  skip: url === undefined ? 'etcd is not reachable' : false,
  createSpace: async () => {
    const endpoint = url ?? '';
    const prefix = `${uniqueName('lattice_config_test')}/`;
    const raw = new Etcd3({ hosts: endpoint });
    return {
      open: () => EtcdConfigStore.connect({ endpoints: [endpoint], prefix }),
      writeMalformed: async (key) => {
        await raw.put(prefix + key).value(MALFORMED);
      },
      dispose: async () => {
        await raw.delete().prefix(prefix);
        raw.close();
      },
    };
  },
});

async function rejection(work: Promise<unknown>): Promise<LatticeError> {
  try {
    await work;
  } catch (err) {
    assert.ok(isLatticeError(err), `expected a LatticeError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

describe('EtcdConfigStore', () => {
  it('fails to connect to an unreachable endpoint at once, naming the endpoint', async () => {
    const port = await freePort(); // nothing listens there any more
    // The refusal is the reason, not "no answer within" the (long) dial timeout.
    const error = await rejection(
      EtcdConfigStore.connect({ endpoints: [`127.0.0.1:${port}`], dialTimeoutMs: 60_000 }),
    );
    assert.equal(error.code, 'UNAVAILABLE');
    assert.match(error.message, new RegExp(`etcd at http://127\\.0\\.0\\.1:${port}: connect failed`));
  });

  // The test's timeout only turns a hang (a timeout not applied) into a failure.
  it('times out against a server that accepts connections but never answers', {
    timeout: 60_000,
  }, async (t: TestContext) => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const address = silent.address();
    const endpoint = `127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;

    const connectError = await rejection(
      EtcdConfigStore.connect({ endpoints: [endpoint], dialTimeoutMs: 500 }),
    );
    assert.equal(connectError.code, 'UNAVAILABLE');
    assert.match(
      connectError.message,
      new RegExp(`etcd at http://${endpoint}: connect: no answer within 500 ms`),
    );

    const store = new EtcdConfigStore({ endpoints: [endpoint], dialTimeoutMs: 500, requestTimeoutMs: 500 });
    try {
      for (const call of [
        () => store.get('models/a'),
        () => store.put('models/a', 1),
        () => store.list('models/'),
        () => store.watch('models/', () => {}),
      ]) {
        const error = await rejection(call());
        assert.match(error.code, /^(DEADLINE_EXCEEDED|UNAVAILABLE)$/);
        assert.match(error.message, new RegExp(`etcd at http://${endpoint}`));
      }
    } finally {
      await store.close();
    }
  });

  it('rejects bad endpoints with INVALID_ARGUMENT', () => {
    for (const endpoints of [[], ['ftp://127.0.0.1:2379'], ['http://']]) {
      assert.throws(
        () => new EtcdConfigStore({ endpoints }),
        (err: unknown) => isLatticeError(err, 'INVALID_ARGUMENT'),
      );
    }
  });

  describe('with the shared etcd server', {
    skip: url === undefined ? 'etcd is not reachable' : false,
  }, () => {
    const endpoint = url ?? '';

    it('createConfigStore opens an etcd store; stores with different prefixes do not see each other', async () => {
      const prefixA = `${uniqueName('lattice_config_a')}/`;
      const prefixB = uniqueName('lattice_config_b'); // the trailing slash is added
      const a = await createConfigStore({
        kind: 'etcd',
        endpoints: [endpoint],
        prefix: prefixA,
        dialTimeoutMs: 3000,
      });
      const b = await createConfigStore({ kind: 'etcd', endpoints: [endpoint], prefix: prefixB });
      const raw = new Etcd3({ hosts: endpoint });
      try {
        await a.put('models/x', 'from a');
        await b.put('models/x', 'from b');
        assert.deepEqual((await a.get('models/x'))?.value, 'from a');
        assert.deepEqual((await b.get('models/x'))?.value, 'from b');
        assert.deepEqual(
          (await a.list('')).map((e) => e.key),
          ['models/x'],
        );
        assert.equal(await raw.get(`${prefixA}models/x`).string(), '"from a"', 'stored as JSON text');
        assert.equal(await raw.get(`${prefixB}/models/x`).string(), '"from b"');
      } finally {
        await raw.delete().prefix(prefixA);
        await raw.delete().prefix(`${prefixB}/`);
        raw.close();
        await a.close();
        await b.close();
      }
    });

    it('delivers every change, in revision order, even in a burst or several in one revision', async () => {
      const prefix = `${uniqueName('lattice_config_burst')}/`;
      const store = await EtcdConfigStore.connect({ endpoints: [endpoint], prefix });
      const seen = new WatchRecorder();
      try {
        await store.watch('', seen.listener, seen.options());
        await Promise.all(Array.from({ length: 30 }, (_, i) => store.put(`k/${i % 3}`, i)));
        await seen.waitForCount(30);
        const revisions = seen.events.map((e) => e.revision);
        assert.deepEqual(
          revisions,
          [...revisions].sort((x, y) => x - y),
        );
        assert.equal(new Set(revisions).size, 30);
        // One revision, three events: a range delete.
        const raw = new Etcd3({ hosts: endpoint });
        const deleted = await raw.delete().prefix(`${prefix}k/`);
        raw.close();
        await seen.waitForCount(33);
        assert.deepEqual(seen.lines.slice(30).sort(), ['delete k/0', 'delete k/1', 'delete k/2']);
        assert.deepEqual(
          seen.events.slice(30).map((e) => e.revision),
          Array(3).fill(Number(deleted.header.revision)),
        );
      } finally {
        const raw = new Etcd3({ hosts: endpoint });
        await raw.delete().prefix(prefix);
        raw.close();
        await store.close();
      }
    });
  });
});

describe('EtcdConfigStore with its own etcd process, killed and restarted', () => {
  const problem = etcdBinaryProblem();
  const skip = problem !== undefined && !process.env.CI ? problem : false;
  if (skip) console.log(`# skipping the etcd restart tests: ${skip}`);

  /** A data dir and ports for one etcd that the test can kill and restart. */
  async function ownEtcd(t: TestContext) {
    if (problem !== undefined) throw new Error(`${problem}; CI requires the etcd restart tests to run`);
    const base = await mkdtemp(join(tmpdir(), 'lattice-etcd-test-'));
    const dataDir = join(base, 'data');
    const clientPort = await freePort();
    const otherClientPort = await freePort();
    const peerPort = await freePort();
    let current: EtcdProcess | undefined;
    t.after(async () => {
      await current?.kill();
      await rm(base, { recursive: true, force: true });
    });
    return {
      url: `http://127.0.0.1:${clientPort}`,
      /** Starts etcd on the data dir; `elsewhere` serves it on another client port the store does not know. */
      start: async (elsewhere = false) => {
        current = await EtcdProcess.start({
          dataDir,
          clientPort: elsewhere ? otherClientPort : clientPort,
          peerPort,
        });
        return current;
      },
      kill: async () => {
        await current?.kill();
        current = undefined;
      },
      /** Throws the data away (etcd must be stopped): the next start is a brand-new cluster. */
      wipe: () => rm(dataDir, { recursive: true, force: true }),
    };
  }

  it('a watch resumes after etcd is SIGKILLed and restarted, and sees the puts made after', {
    skip,
    timeout: 90_000,
  }, async (t) => {
    const etcd = await ownEtcd(t);
    await etcd.start();
    const store = await EtcdConfigStore.connect({ endpoints: [etcd.url], prefix: 'lattice/' });
    t.after(() => store.close());
    const seen = new WatchRecorder();
    await store.put('models/a', 1);
    await store.watch('models/', seen.listener, seen.options({ initial: true }));
    await store.put('models/b', 2);
    await seen.waitFor('put models/b 2');

    await etcd.kill();
    await eventually(() => seen.errors.some((e) => e.code === 'UNAVAILABLE'), 10_000, 'the watch to notice');
    assert.match(seen.errors[0]?.message ?? '', /lost its connection; resuming from revision \d+/);
    await etcd.start();

    await store.put('models/c', 3);
    await store.delete('models/a');
    await seen.waitFor('delete models/a', 30_000);
    assert.deepEqual(seen.lines, ['put models/a 1', 'put models/b 2', 'put models/c 3', 'delete models/a']);
    assert.deepEqual(
      (await store.list('models/')).map((e) => e.key),
      ['models/b', 'models/c'],
    );
  });

  it('changes made while the watch was away are delivered: replayed, or diffed after compaction', {
    skip,
    timeout: 120_000,
  }, async (t) => {
    const etcd = await ownEtcd(t);
    await etcd.start();
    const store = await EtcdConfigStore.connect({ endpoints: [etcd.url], prefix: 'lattice/' });
    t.after(() => store.close());
    const seen = new WatchRecorder();
    await store.watch('models/', seen.listener, seen.options());
    await store.put('models/a', 1);
    await store.put('models/b', 1);
    await seen.waitFor('put models/b 1');

    /** Changes the data while etcd is not reachable at the address the store uses. */
    const whileAway = async (change: (raw: Etcd3) => Promise<void>) => {
      await etcd.kill();
      const away = await etcd.start(true);
      const raw = new Etcd3({ hosts: away.url });
      try {
        await change(raw);
      } finally {
        raw.close();
      }
      await etcd.kill();
      await etcd.start();
    };

    // History still there: the watch replays it from the last revision it delivered.
    await whileAway(async (raw) => {
      await raw.put('lattice/models/a').value('2');
      await raw.delete().key('lattice/models/b');
      await raw.put('lattice/models/c').value('1');
      await raw.put('lattice/other/x').value('1');
    });
    await seen.waitFor('put models/c 1', 30_000);
    assert.deepEqual(seen.lines, [
      'put models/a 1',
      'put models/b 1',
      'put models/a 2',
      'delete models/b',
      'put models/c 1',
    ]);
    assert.ok(!seen.errors.some((e) => e.code === 'ABORTED'), 'replayed, not re-read');

    // History compacted away: the watch re-reads and emits the differences.
    const before = seen.events.length;
    await whileAway(async (raw) => {
      await raw.put('lattice/models/a').value('3');
      await raw.delete().key('lattice/models/c');
      await raw.put('lattice/models/d').value(MALFORMED);
      const last = await raw.put('lattice/models/e').value('1');
      await raw.kv.compact({ revision: last.header.revision, physical: true });
    });
    await eventually(() => seen.events.length >= before + 4, 30_000, `4 more events (got ${seen.lines})`);
    assert.deepEqual(seen.lines.slice(before), [
      'put models/a 3',
      'invalid models/d',
      'put models/e 1',
      'delete models/c',
    ]);
    assert.ok(
      seen.errors.some((e) => e.code === 'ABORTED' && /re-reading/.test(e.message)),
      seen.errors.map((e) => e.message).join('\n'),
    );
    // And it is live again afterwards.
    await store.put('models/f', 1);
    await seen.waitFor('put models/f 1');

    // A brand-new cluster (data lost or restored from an old backup): its revisions start over.
    await etcd.kill();
    await etcd.wipe();
    await etcd.start();
    await eventually(
      () => seen.lines.slice(-4).join() === 'delete models/a,delete models/d,delete models/e,delete models/f',
      30_000,
      `every key to be deleted (got ${seen.lines})`,
    );
    assert.ok(seen.errors.some((e) => /revision went back/.test(e.message)));
    await store.put('models/g', 1);
    await seen.waitFor('put models/g 1');
  });
});
