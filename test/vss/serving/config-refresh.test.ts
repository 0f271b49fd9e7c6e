/**
 * Issue 13, item 10 (and item 9's hung query): the serving configuration is reloaded when the SQL
 * store notifies a change (LISTEN/NOTIFY), not by every replica polling every second; unknown names
 * are remembered briefly so a storm of them reaches SQL once; a reload that hangs fails, is reported
 * and retried; page tokens of one replica are accepted by another that shares the secret.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { Cache } from '../../../src/platform/cache/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { ServingConfigRepository, startVssServing } from '../../../src/vss/serving/index.js';
import { VSS_CONFIG_CHANNEL, type VssStore } from '../../../src/vss/store/index.js';
import { eventually } from '../../support/servers.js';
import { Client, ENTITY, expectStatus, MODEL, openWorld, type World } from './harness.js';

const waitFor = (condition: () => boolean | Promise<boolean>, what: string): Promise<void> =>
  eventually(condition, 10_000, what);

/** `target` with some methods replaced (the rest, prototype methods included, delegate to it). */
function overriding<T extends object>(target: T, methods: Partial<T>): T {
  return Object.assign(Object.create(target) as T, methods);
}

/** The store with its read calls counted, and models.list held while `hang` is set. */
function countingStore(store: VssStore) {
  const calls = { modelsFind: 0, findByEntity: 0, variantsList: 0, columns: 0 };
  const control = { hang: false };
  const counted = overriding(store, {
    models: overriding(store.models, {
      list: (...args) => (control.hang ? new Promise(() => {}) : store.models.list(...args)),
      find: (...args) => {
        calls.modelsFind++;
        return store.models.find(...args);
      },
    }),
    stores: overriding(store.stores, {
      findByEntity: (...args) => {
        calls.findByEntity++;
        return store.stores.findByEntity(...args);
      },
    }),
    variants: overriding(store.variants, {
      list: (...args) => {
        calls.variantsList++;
        return store.variants.list(...args);
      },
    }),
    entityTables: overriding(store.entityTables, {
      columns: (...args) => {
        calls.columns++;
        return store.entityTables.columns(...args);
      },
    }),
  } as Partial<VssStore>);
  return { store: counted, calls, control };
}

describe('vss serving configuration refresh (issue 13, items 9 and 10)', () => {
  let world: World;
  before(async () => {
    world = await openWorld();
  });
  after(async () => {
    await world?.close();
  });

  test('a committed change is seen through LISTEN/NOTIFY, with no poll', async () => {
    const config = new ServingConfigRepository(world.store, {
      refreshIntervalMs: 0,
      changes: (onChange, onError) => world.sql.listen(VSS_CONFIG_CHANNEL, onChange, onError),
    });
    await config.start();
    try {
      const key = { entity: ENTITY, modelName: MODEL, variant: 'organic' };
      const ttl = async () => (await config.served(key)).variant.cache.memoryTtlSeconds;
      const before = await ttl();
      await world.sql.query(
        'UPDATE vss_variants SET memory_cache_ttl = $4 WHERE entity = $1 AND model_name = $2 AND variant = $3',
        [ENTITY, MODEL, 'organic', before + 7],
      );
      try {
        await waitFor(async () => (await ttl()) === before + 7, 'the snapshot to hold the new TTL');
      } finally {
        await world.sql.query(
          'UPDATE vss_variants SET memory_cache_ttl = $4 WHERE entity = $1 AND model_name = $2 AND variant = $3',
          [ENTITY, MODEL, 'organic', before],
        );
      }
    } finally {
      await config.stop();
    }
  });

  test('a reload that hangs fails with DEADLINE_EXCEEDED, is reported, and is retried until it succeeds', async () => {
    const { store, control } = countingStore(world.store);
    const errors: unknown[] = [];
    const config = new ServingConfigRepository(store, {
      refreshIntervalMs: 0,
      refreshTimeoutMs: 200,
      changes: (onChange, onError) => world.sql.listen(VSS_CONFIG_CHANNEL, onChange, onError),
      onRefreshError: (err) => errors.push(err),
    });
    await config.start();
    try {
      control.hang = true;
      await assert.rejects(config.refresh(), /did not finish within 200 ms/);
      // A notification while the statement hangs: its reload fails too, and is reported.
      await world.sql.query('UPDATE vss_models SET updated_at = now() WHERE entity = $1', [ENTITY]);
      await waitFor(() => errors.length > 0, 'the failed reload to be reported');
      const refreshes = config.stats.refreshes;
      control.hang = false;
      await waitFor(() => config.stats.refreshes > refreshes, 'the retried reload to succeed');
      await config.refresh();
    } finally {
      control.hang = false;
      await config.stop();
    }
  });

  test('unknown entity, model, variant and filter field reach SQL once per negative TTL, not once per call', async () => {
    const { store, calls } = countingStore(world.store);
    const config = new ServingConfigRepository(store, { refreshIntervalMs: 0, negativeTtlMs: 60_000 });
    await config.start();
    try {
      for (let i = 0; i < 50; i++) {
        await assert.rejects(config.served({ entity: 'nobody', modelName: MODEL, variant: 'organic' }), {
          code: 'NOT_FOUND',
        });
        await assert.rejects(config.served({ entity: ENTITY, modelName: 'typo', variant: 'organic' }), {
          code: 'NOT_FOUND',
        });
        await assert.rejects(config.served({ entity: ENTITY, modelName: MODEL, variant: 'typo' }), {
          code: 'NOT_FOUND',
        });
        const served = await config.served({ entity: ENTITY, modelName: MODEL, variant: 'organic' });
        assert.equal(await config.isFilterField(served.model, 'no_such_label'), false);
        assert.equal(await config.isFilterField(served.model, 'brand'), true);
      }
      assert.ok(calls.modelsFind <= 3, `${calls.modelsFind} model look-ups`);
      assert.ok(calls.findByEntity <= 2, `${calls.findByEntity} entity look-ups`);
      assert.ok(calls.columns <= 2, `${calls.columns} column look-ups`);
      assert.equal(calls.variantsList <= 1, true, `${calls.variantsList} variant look-ups`);
      // A reload forgets the misses: a name registered since is found at once.
      await world.store.variants.create({
        entity: ENTITY,
        modelName: MODEL,
        variant: 'typo',
        vssFilter: {},
        vectorDbType: 'EMBEDDED',
        vectorDbConfig: {},
        jobFrequency: 'FREQ_1D',
      });
      await config.refresh();
      await assert.rejects(config.served({ entity: ENTITY, modelName: MODEL, variant: 'typo' }), {
        code: 'FAILED_PRECONDITION',
      });
    } finally {
      await config.stop();
    }
  });
});

describe('page tokens across replicas (issue 13, item 10)', () => {
  let world: World;
  before(async () => {
    world = await openWorld({ server: { pageTokenSecret: 'shared-secret-of-the-fleet' } });
  });
  after(async () => {
    await world?.close();
  });

  test('a token made by one replica is accepted by another with the same secret, refused by one with another', async () => {
    const start = (pageTokenSecret: string) =>
      startVssServing({
        sql: world.sql,
        vectorDb: world.db,
        host: '127.0.0.1',
        port: 0,
        logger: createLogger('vss-serving-peer', { level: 'silent' }),
        refreshIntervalMs: 0,
        pageTokenSecret,
      });
    const peer = await start('shared-secret-of-the-fleet');
    const stranger = await start('another-secret-entirely');
    const peerClient = new Client(`127.0.0.1:${peer.port}`);
    const strangerClient = new Client(`127.0.0.1:${stranger.port}`);
    try {
      const query = {
        embedding: { values: Array.from(world.fixture.vector(5)) },
        pageToken: '',
        filters: [],
      };
      const first = await world.client.search({ queries: [query], pageSize: 20 });
      const token = first.results[0]!.nextPageToken;
      assert.notEqual(token, '');
      const next = await peerClient.search({ queries: [{ ...query, pageToken: token }], pageSize: 20 });
      // The peer's page continues the walk: what one request 40 deep returns after the first 20.
      const deep = await world.client.search({ queries: [query], pageSize: 40 });
      assert.deepEqual(
        next.results[0]!.candidates.map((c) => c.id),
        deep.results[0]!.candidates.slice(20).map((c) => c.id),
      );
      await expectStatus(
        strangerClient.search({ queries: [{ ...query, pageToken: token }], pageSize: 20 }),
        status.INVALID_ARGUMENT,
        'queries[0].page_token',
      );
    } finally {
      peerClient.close();
      strangerClient.close();
      await peer.stop();
      await stranger.stop();
    }
  });
});

describe('the distributed result cache level when it fails (issue 13, item 10)', () => {
  test('failed reads and writes and entries that are not pages are counted, and the Search is answered from the vector DB', async () => {
    const entries = [
      new TextEncoder().encode('not json at all'),
      new TextEncoder().encode(JSON.stringify({ candidates: [{ id: 7, score: 'high' }], nextPageToken: '' })),
      undefined,
    ];
    let reads = 0;
    const broken: Cache = {
      get: async () => {
        const entry = entries[reads++ % entries.length];
        if (entry === undefined) throw new Error('connection reset');
        return entry;
      },
      getMany: async () => [],
      set: async () => {
        throw new Error("READONLY You can't write against a read only replica");
      },
      setMany: async () => {},
      delete: async () => {},
      close: async () => {},
    };
    const metrics = new Metrics();
    const world = await openWorld({ server: { cache: broken, metrics } });
    try {
      // The distributed level only: every look-up reaches the broken cache.
      await world.sql.query("UPDATE vss_variants SET memory_cache_ttl = 0 WHERE variant = 'organic'");
      await world.server.config.refresh();
      const query = {
        embedding: { values: Array.from(world.fixture.vector(1)) },
        pageToken: '',
        filters: [],
      };
      const expected = (await world.client.search({ queries: [query], pageSize: 4 })).results[0]!;
      for (let i = 0; i < 3; i++) {
        const answer = await world.client.search({ queries: [query], pageSize: 4 });
        assert.deepEqual(answer.results[0], expected);
      }
      const { body } = await metrics.scrape();
      const count = (failure: string) =>
        Number(
          body
            .split('\n')
            .find((l) => l.startsWith(`vss_serving_cache_errors_total{failure="${failure}"}`))
            ?.split(' ')
            .at(-1) ?? 0,
        );
      assert.equal(count('invalid'), 3, body);
      assert.equal(count('get'), 1);
      assert.equal(count('set'), 4);
    } finally {
      await world.close();
    }
  });
});
