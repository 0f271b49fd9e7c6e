import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import {
  decodeValues,
  encodeValues,
  FeatureCache,
  featureCacheTtlMs,
} from '../../../src/orchestrator/components/feature-cache.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { type Cache, createCache } from '../../../src/platform/cache/index.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { FakeFeatureStore } from '../../support/fakes.js';
import { testRegistry } from '../../support/orchestrator.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';

const redisUrl = await realServer('redis');

const store = () =>
  new FakeFeatureStore({
    catalog: Object.fromEntries(
      ['c1', 'c2', 'c3'].map((id, i) => [id, { 'stats:price': encodeValue(DataType.FP32, 10 * (i + 1)) }]),
    ),
  });

function model(version: number, ttl?: number) {
  return {
    model_config_id: 'cached',
    target_id_column: 'catalog_id',
    component_dependency: { catalog: ['double'], double: [] },
    cache: { version, ttl_seconds: 120 },
    feature_components: [
      {
        name: 'catalog',
        entity: 'catalog',
        fs_keys: [{ schema: ['catalog_id'], col: 'catalog_id' }],
        feature_groups: [{ label: 'stats', data_type: 'FP32', features: ['price'] }],
        cache: { enabled: true, ...(ttl ? { ttl_seconds: ttl } : {}) },
      },
    ],
    compute_components: [
      {
        name: 'double',
        expression: 'p 2 *',
        score_mapping: { p: 'catalog:stats:price' },
        output_column: 'score',
      },
    ],
    response: { columns: ['score'] },
  };
}

const builder = (fetcher: FakeFeatureStore, cache: Cache, metrics: Metrics) =>
  createComponentBuilder({ featureFetcher: fetcher, featureCache: { cache, metrics } });

const request = (ids: string[]): PredictRequest => ({
  modelConfigId: 'cached',
  trackingId: 't',
  contextFeatures: [],
  targetInputSchema: [],
  targets: ids.map((id) => ({ id, featureValues: [] })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
});

async function cacheBehaviour(cache: Cache): Promise<void> {
  const fetcher = store();
  const metrics = new Metrics();
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-fc-')) }),
    builder(fetcher, cache, metrics),
    metrics,
  );
  const engine = new InferenceEngine(registry);
  const v3 = registry.build('cached', '1', model(3));
  const scores = async (snapshot = v3, ids = ['c1', 'c2', 'c1']) => [
    ...(await engine.executeOn(snapshot, { pattern: 'point', request: request(ids) }, 't')).context.matrix
      .byteColumn('score')
      .float32()!,
  ];

  assert.deepEqual(await scores(), [20, 40, 20]);
  assert.equal(fetcher.keysRequested, 2, 'first request fetches each unique key once');
  // The cache is written in the background: poll until a request is served from it alone.
  await eventually(
    async () => {
      const before = fetcher.calls;
      assert.deepEqual(await scores(), [20, 40, 20]);
      return fetcher.calls === before;
    },
    10_000,
    'a request served entirely from the cache',
  );
  const calls = fetcher.calls;
  assert.deepEqual(await scores(), [20, 40, 20]);
  assert.equal(fetcher.calls, calls, 'a fully cached request makes no feature store call');
  const base = fetcher.keysRequested;
  assert.deepEqual(await scores(v3, ['c1', 'c3']), [20, 60]);
  assert.equal(fetcher.keysRequested, base + 1, 'only the miss (c3) was fetched');

  const v4 = registry.build('cached', '2', model(4));
  const beforeVersionChange = fetcher.keysRequested;
  assert.deepEqual(await scores(v4), [20, 40, 20]);
  assert.equal(fetcher.keysRequested, beforeVersionChange + 2, 'a new cache version refetches');

  const { body } = await metrics.scrape();
  assert.match(
    body,
    /orchestrator_feature_cache_requests_total\{model="cached",component="catalog",result="hit"\} \d+/,
  );
  assert.match(
    body,
    /orchestrator_feature_cache_requests_total\{model="cached",component="catalog",result="miss"\} \d+/,
  );
}

describe('feature cache', () => {
  test('memory cache: hits avoid feature store calls; a cache version change refetches', async () => {
    await cacheBehaviour(await createCache({ kind: 'memory' }));
  });

  test('redis cache: the same', { skip: redisUrl ? false : 'redis not reachable' }, async () => {
    const cache = await createCache({ kind: 'redis', url: redisUrl!, keyPrefix: `${uniqueName('fc')}:` });
    try {
      await cacheBehaviour(cache);
    } finally {
      await cache.close();
    }
  });

  test('a feature list changed without a cache.version bump never reads rows of the old layout', async () => {
    const catalog = {
      c1: {
        'stats:price': encodeValue(DataType.FP32, 10),
        'stats:ctr': encodeValue(DataType.FP32, 0.5),
        'wide:price': encodeValue(DataType.FP64, 10),
      },
    };
    const fetcher = new FakeFeatureStore({ catalog });
    const metrics = new Metrics();
    const registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-fc-')) }),
      builder(fetcher, await createCache({ kind: 'memory' }), metrics),
      metrics,
    );
    const engine = new InferenceEngine(registry);
    const withGroups = (
      id: string,
      groups: { label: string; data_type: string; features: string[] }[],
      column: string,
    ) => {
      const doc = model(3);
      doc.feature_components[0]!.feature_groups = groups;
      doc.compute_components[0]!.score_mapping = { p: column };
      return registry.build('cached', id, doc);
    };
    const score = async (snapshot: ReturnType<typeof withGroups>) => {
      const { context } = await engine.executeOn(
        snapshot,
        { pattern: 'point', request: request(['c1']) },
        't',
      );
      assert.equal(context.matrix.rowError(0), '');
      return context.matrix.byteColumn('score').float32()![0];
    };
    const cachedOnce = async (snapshot: ReturnType<typeof withGroups>, want: number) => {
      assert.equal(await score(snapshot), want);
      // Stored in the background: poll until the same request is served from the cache alone.
      await eventually(
        async () => {
          const before = fetcher.calls;
          assert.equal(await score(snapshot), want);
          return fetcher.calls === before;
        },
        10_000,
        'a request served from the cache',
      );
    };
    await cachedOnce(
      withGroups('1', [{ label: 'stats', data_type: 'FP32', features: ['price'] }], 'catalog:stats:price'),
      20,
    );
    // Same cache.version, another feature first: the cached [price] row must not become [ctr, price].
    const calls = fetcher.calls;
    await cachedOnce(
      withGroups(
        '2',
        [{ label: 'stats', data_type: 'FP32', features: ['ctr', 'price'] }],
        'catalog:stats:price',
      ),
      20,
    );
    assert.ok(fetcher.calls > calls, 'the new layout was fetched');
    // The same feature names in another order, and another type: new layouts again.
    await cachedOnce(
      withGroups(
        '3',
        [{ label: 'stats', data_type: 'FP32', features: ['price', 'ctr'] }],
        'catalog:stats:ctr',
      ),
      1,
    );
    await cachedOnce(
      withGroups('4', [{ label: 'wide', data_type: 'FP64', features: ['price'] }], 'catalog:wide:price'),
      20,
    );
    // Back to the first layout: its cached rows are still right for it.
    const before = fetcher.calls;
    assert.equal(
      await score(
        withGroups('5', [{ label: 'stats', data_type: 'FP32', features: ['price'] }], 'catalog:stats:price'),
      ),
      20,
    );
    assert.equal(fetcher.calls, before, 'an unchanged layout keeps its cached rows');
  });

  test('a look-up of 100,000 keys gives the event loop its turns, and stops once the request is cancelled', async () => {
    const cache = await createCache({ kind: 'memory' });
    const features = new FeatureCache(cache, new Metrics(), 'm', 1, 'catalog', 'layout', 60_000);
    const keys = Array.from({ length: 100_000 }, (_, i) => [`c${i}`]);
    const value = encodeValues([encodeValue(DataType.FP32, 1)]);
    await cache.setMany(keys.map((key) => ({ key: features.key(key), value, ttlMs: 60_000 })));
    const order: string[] = [];
    setTimeout(() => order.push('timer'), 0);
    const found = await features.lookup(keys, Number.POSITIVE_INFINITY, new AbortController().signal);
    order.push('looked up');
    assert.deepEqual(order, ['timer', 'looked up']);
    assert.equal(found.filter((values) => values?.length === 1).length, keys.length);
    const request = new AbortController();
    setTimeout(() => request.abort(), 0);
    await assert.rejects(features.lookup(keys, Number.POSITIVE_INFINITY, request.signal), (err) =>
      isLatticeError(err, 'CANCELLED'),
    );
  });

  test('cached values round-trip: empty values, and lengths that need every byte of the prefix', () => {
    const values = [
      new Uint8Array(0),
      Uint8Array.of(1, 2, 3, 4),
      new Uint8Array(300).fill(7),
      new Uint8Array(70_000).map((_, i) => i % 251),
      new Uint8Array(0),
    ];
    const decoded = decodeValues(encodeValues(values));
    assert.deepEqual(
      decoded.map((v) => Array.from(v)),
      values.map((v) => Array.from(v)),
    );
    // A value read at an offset inside a larger buffer (as a cache may hand it out).
    const framed = new Uint8Array(10 + encodeValues(values).length);
    framed.set(encodeValues(values), 10);
    assert.deepEqual(
      decodeValues(framed.subarray(10)).map((v) => v.length),
      [0, 4, 300, 70_000, 0],
    );
  });

  test('TTL precedence: component, then model (which defaults to 300 s)', () => {
    assert.equal(
      featureCacheTtlMs({ cache: { ttl_seconds: 600 } }, { cache: { ttl_seconds: 120 } }),
      600_000,
    );
    assert.equal(featureCacheTtlMs({ cache: {} }, { cache: { ttl_seconds: 120 } }), 120_000);
    assert.equal(featureCacheTtlMs({}, { cache: { ttl_seconds: 300 } }), 300_000);
  });

  test('a broken cache counts as misses and never fails the request', async () => {
    const broken: Cache = {
      get: async () => undefined,
      getMany: async () => {
        throw new Error('redis down');
      },
      set: async () => {},
      setMany: async () => {
        throw new Error('redis down');
      },
      delete: async () => {},
      close: async () => {},
    };
    const fetcher = store();
    const metrics = new Metrics();
    const registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-fc-')) }),
      builder(fetcher, broken, metrics),
      metrics,
    );
    const { context } = await new InferenceEngine(registry).executeOn(
      registry.build('cached', '1', model(1)),
      { pattern: 'point', request: request(['c2']) },
      't',
    );
    assert.deepEqual([...context.matrix.byteColumn('score').float32()!], [40]);
    assert.match(
      (await metrics.scrape()).body,
      /orchestrator_feature_cache_errors_total\{model="cached",component="catalog",operation="get"\} 1/,
    );
  });
});
