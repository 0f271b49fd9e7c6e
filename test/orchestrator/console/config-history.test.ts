/**
 * The model configs' revision history and changes (ModelConfigs over RevisionHistory) on both config
 * store backends, the file store and etcd, with a live ModelRegistry following the same store: every
 * change recorded with who and why, outside changes recorded as external, invalid documents refused
 * or (when written outside) shown rejected with their problems, rollback, delete, the bound on kept
 * revisions, and the history read back by a new process.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Etcd3 } from 'etcd3';
import { ModelConfigError } from '../../../src/orchestrator/config/index.js';
import { ModelConfigs, RevisionHistory } from '../../../src/orchestrator/console/index.js';
import { EtcdConfigStore } from '../../../src/platform/config-store/etcd/etcd-config-store.js';
import { type ConfigStore, createConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { blendOnly, testRegistry } from '../../support/orchestrator.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';

interface Backend {
  name: string;
  skip: string | false;
  /** A store over the same documents each time it is called (as another process would open it). */
  space(): Promise<{ open(): Promise<ConfigStore>; dispose(): Promise<void> }>;
}

const etcdUrl = await realServer('etcd');

const backends: Backend[] = [
  {
    name: 'file store',
    skip: false,
    space: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-config-history-'));
      return { open: () => createConfigStore({ kind: 'file', dir }), dispose: async () => {} };
    },
  },
  {
    name: 'etcd',
    skip: etcdUrl === undefined ? 'etcd is not reachable' : false,
    space: async () => {
      const prefix = `${uniqueName('lattice_history_test')}/`;
      const raw = new Etcd3({ hosts: etcdUrl ?? '' });
      return {
        open: () => EtcdConfigStore.connect({ endpoints: [etcdUrl ?? ''], prefix }),
        dispose: async () => {
          await raw.delete().prefix(prefix);
          raw.close();
        },
      };
    },
  },
];

async function running(store: ConfigStore, keep = 4) {
  const registry = testRegistry(store);
  await registry.start();
  const configs = new ModelConfigs({
    store,
    registry,
    logger: createLogger('test', { level: 'silent' }),
    history: new RevisionHistory(store, keep),
  });
  await configs.start();
  return {
    registry,
    configs,
    stop: async () => {
      await configs.stop();
      await registry.stop();
    },
  };
}

const alice = (comment: string, expectedRevision?: number) => ({
  author: 'alice',
  comment,
  expectedRevision,
});

for (const backend of backends) {
  describe(`model config history on the ${backend.name}`, { skip: backend.skip }, () => {
    test('changes recorded with who and why; invalid ones refused; outside ones recorded; rollback, delete, bound, reopen', async () => {
      const space = await backend.space();
      const store = await space.open();
      const { registry, configs, stop } = await running(store);
      try {
        // A config written before anything recorded it is the first, external, revision.
        await store.put('models/seed', blendOnly('seed'));
        await eventually(
          async () => (await configs.revisions('seed')).length === 1,
          5000,
          'the seed recorded',
        );
        assert.equal((await configs.revisions('seed'))[0]!.action, 'external');

        // Never valid: invalid, nothing serves, the problems at their paths.
        await store.put('models/never', blendOnly('never', 'price +'));
        await eventually(
          async () => (await configs.get('never')).rejected !== undefined,
          5000,
          'never rejected',
        );
        const never = await configs.get('never');
        assert.equal(never.state, 'invalid');
        assert.equal(never.version, undefined);
        assert.equal(never.live_document, null);
        assert.deepEqual(
          never.rejected!.problems.map((p) => p.path),
          ['compute_components[0].expression'],
        );

        const first = await configs.apply('b', blendOnly('b', 'price 2 *'), alice('first'));
        assert.equal(first.revision, 1);
        assert.equal(first.state, 'live');
        assert.equal(registry.get('b')!.version, first.version, 'served once the answer comes');

        const second = await configs.apply('b', blendOnly('b', 'price 3 *'), alice('triple', 1));
        assert.equal(second.revision, 2);
        assert.equal(registry.get('b')!.model.config.compute_components[0]!.expression, 'price 3 *');

        await assert.rejects(configs.apply('b', blendOnly('b', 'price *'), alice('broken')), (err) => {
          assert.ok(err instanceof ModelConfigError);
          assert.deepEqual(
            err.problems.map((p) => p.path),
            ['compute_components[0].expression'],
          );
          return true;
        });
        await assert.rejects(configs.apply('b', blendOnly('b', 'price 4 *'), alice('stale', 1)), (err) =>
          isLatticeError(err, 'ABORTED'),
        );
        assert.equal((await configs.revisions('b')).length, 2, 'nothing recorded for refused changes');

        // Written outside: recorded as external; an invalid one shows rejected, with its problems.
        await store.put('models/b', blendOnly('b', 'price +'));
        await eventually(
          async () => (await configs.get('b')).state === 'rejected',
          5000,
          'the outside change to be rejected',
        );
        const rejected = await configs.get('b');
        assert.equal(rejected.version, second.version, 'the previous version keeps serving');
        assert.deepEqual(
          rejected.rejected!.problems.map((p) => p.path),
          ['compute_components[0].expression'],
        );
        await eventually(
          async () => (await configs.revisions('b')).length === 3,
          5000,
          'the external record',
        );
        const [external] = await configs.revisions('b');
        assert.equal(external!.action, 'external');
        assert.equal(external!.author, 'config-store');
        assert.deepEqual(external!.document, blendOnly('b', 'price +'));

        const back = await configs.rollback('b', 2, alice('undo the hand edit'));
        assert.equal(back.revision, 4);
        assert.equal(back.state, 'live');
        assert.equal(registry.get('b')!.model.config.compute_components[0]!.expression, 'price 3 *');

        const removed = await configs.remove('b', alice('retired'));
        assert.equal(removed.revision, 5);
        assert.equal(removed.state, 'removed');
        assert.equal(registry.get('b'), undefined);
        const list = await configs.list();
        assert.deepEqual(
          list.map((m) => [m.model_config_id, m.state, m.revisions, m.revision]),
          [
            ['b', 'removed', 4, 5],
            ['never', 'invalid', 1, 1],
            ['seed', 'live', 1, 1],
          ],
        );
        // Kept: the newest four; the first one is gone.
        const kept = await configs.revisions('b');
        assert.deepEqual(
          kept.map((r) => [r.revision, r.action, r.author, r.comment]),
          [
            [5, 'delete', 'alice', 'retired'],
            [4, 'rollback', 'alice', 'undo the hand edit'],
            [3, 'external', 'config-store', 'changed outside the API'],
            [2, 'apply', 'alice', 'triple'],
          ],
        );
        await assert.rejects(configs.rollback('b', 1, alice('too old')), (err) =>
          isLatticeError(err, 'NOT_FOUND'),
        );
        const restored = await configs.rollback('b', 4, alice('bring it back'));
        assert.equal(restored.state, 'live');
        assert.ok(registry.get('b'));
      } finally {
        await stop();
        await store.close();
      }

      // Another process opening the same store reads the same history, and records nothing new.
      const reopened = await space.open();
      const again = await running(reopened);
      try {
        const history = await again.configs.revisions('b');
        assert.deepEqual(
          history.map((r) => r.revision),
          [6, 5, 4, 3],
        );
        assert.equal(history[0]!.comment, 'bring it back');
      } finally {
        await again.stop();
        await reopened.close();
        await space.dispose();
      }
    });
  });
}
