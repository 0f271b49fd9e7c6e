/**
 * Sticky A/B splits (docs/orchestrator.md "Sticky A/B splits") on the real registry, engine and a
 * file config store: each arm is an in-process config scoring `price × multiplier`, so an answer
 * shows which arm served it besides the snapshot it ran on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import type { ModelRegistry, SettledChange } from '../../../src/orchestrator/config/index.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { armAt, splitPoint } from '../../../src/orchestrator/engine/split-routing.js';
import { ModelTraffic } from '../../../src/orchestrator/traffic/model-traffic.js';
import { type ConfigStore, createConfigStore } from '../../../src/platform/config-store/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { blendOnly, fp32, fp64, predictRequest, schema, testRegistry } from '../../support/orchestrator.js';
import { eventually } from '../../support/servers.js';

/** A config scoring `price × multiplier` (bonus read too, so every request carries it). */
const arm = (id: string, multiplier: number, extra: Record<string, unknown> = {}) => ({
  ...blendOnly(id, `price ${multiplier} * bonus 0 * +`),
  ...extra,
});

const split = (key: string, arms: [string, number][], salt?: string) => ({
  split: {
    key,
    ...(salt === undefined ? {} : { salt }),
    arms: arms.map(([model_config_id, weight]) => ({ model_config_id, weight })),
  },
});

/** `exp` keeps 50 % itself and sends 30 % to `exp_b`, 20 % to `exp_c`. */
const EXP_ARMS: [string, number][] = [
  ['exp', 50],
  ['exp_b', 30],
  ['exp_c', 20],
];
const MULTIPLIER: Record<string, number> = { exp: 1, exp_b: 2, exp_c: 3, other: 5 };

const request = (model: string, user: string | undefined, type: 'string' | 'int64' = 'string') =>
  predictRequest({
    modelConfigId: model,
    contextFeatures: [
      { ...schema('bonus', DataType.FP64), value: fp64(0) },
      ...(user === undefined
        ? []
        : [
            type === 'string'
              ? { ...schema('user_id', DataType.STRING), value: Buffer.from(user) }
              : {
                  ...schema('user_id', DataType.INT64),
                  value: Buffer.from(encodeValue(DataType.INT64, BigInt(user))),
                },
          ]),
    ],
    targetInputSchema: [schema('price', DataType.FP32)],
    targets: [{ id: 'i1', featureValues: [fp32(10)] }],
  });

/** Which config served: the snapshot the request ran on, checked against the score it computed. */
async function servedBy(engine: InferenceEngine, input: PredictRequest): Promise<string> {
  const { context } = await engine.execute(input.modelConfigId, { pattern: 'point', request: input }, 't');
  const served = context.snapshot.id;
  assert.equal(context.matrix.byteColumn('score').float64()![0], 10 * MULTIPLIER[served]!, served);
  return served;
}

const newStore = () =>
  createConfigStore({ kind: 'file', dir: mkdtempSync(join(tmpdir(), 'lattice-splits-')) });

/** Writes a model document and waits for the registry to settle that very change. */
function write(
  registry: ModelRegistry<ExecutionContext>,
  store: ConfigStore,
  id: string,
  document: unknown,
): Promise<SettledChange> {
  return new Promise((resolve, reject) => {
    let revision: string | undefined;
    const seen: SettledChange[] = [];
    const timer = setTimeout(() => reject(new Error(`the change of ${id} never settled`)), 10_000);
    const check = () => {
      const change = seen.find((c) => c.version === revision);
      if (change === undefined) return;
      clearTimeout(timer);
      off();
      resolve(change);
    };
    const off = registry.onSettled((change) => {
      if (change.id !== id) return;
      seen.push(change);
      check();
    });
    store.put(`models/${id}`, document).then((r) => {
      revision = String(r);
      check();
    }, reject);
  });
}

function metricValue(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    const have = inside.split(',').sort();
    if (have.length === wanted.length && have.every((l, i) => l === wanted[i]))
      return Number(line.slice(line.indexOf('}') + 1));
  }
  return 0;
}

describe('sticky A/B splits', () => {
  let store: ConfigStore;
  let registry: ModelRegistry<ExecutionContext>;
  let engine: InferenceEngine;
  let metrics: Metrics;
  let traffic: ModelTraffic;

  const start = async () => {
    metrics = new Metrics();
    traffic = new ModelTraffic();
    registry = testRegistry(store, undefined, metrics);
    await registry.start();
    engine = new InferenceEngine(registry, undefined, traffic, metrics);
  };

  before(async () => {
    store = await newStore();
    // Written split first: the initial load must still see its arms (applied after every other config).
    await store.put('models/exp', arm('exp', 1, split('user_id', EXP_ARMS)));
    await store.put('models/exp_b', arm('exp_b', 2));
    await store.put('models/exp_c', arm('exp_c', 3));
    await start();
  });
  after(async () => {
    await registry.stop();
    await store.close();
  });

  test('the hash is SHA-256 of salt and key: pinned values, the same in every process', () => {
    // Known answers (also what Python's hashlib gives for the same bytes): a change of hash, byte
    // order or input layout would move users between arms.
    assert.equal(splitPoint('exp', 'u1').toFixed(6), '4.550785');
    assert.equal(splitPoint('exp', 'u2').toFixed(6), '83.622125');
    assert.equal(splitPoint('other', 'u1').toFixed(6), '13.479876');
    assert.equal(armAt({ key: 'k', arms: [{ model_config_id: 'a', weight: 100 }] }, 99.99999), 'a');
    assert.equal(
      armAt(
        {
          key: 'k',
          arms: [
            { model_config_id: 'a', weight: 0 },
            { model_config_id: 'b', weight: 100 },
          ],
        },
        0,
      ),
      'b',
      'a zero-weight arm serves no key',
    );
  });

  test('a split config loaded before its arms serves; each key stays in one arm, over repeats and a restart', async () => {
    assert.equal(registry.status().find((s) => s.id === 'exp')?.lastError, undefined);
    const users = Array.from({ length: 300 }, (_, i) => `user-${i}`);
    const first = new Map<string, string>();
    for (const user of users) first.set(user, await servedBy(engine, request('exp', user)));
    assert.deepEqual(new Set(first.values()), new Set(['exp', 'exp_b', 'exp_c']), 'every arm serves');
    for (let round = 0; round < 2; round++)
      for (const user of users)
        assert.equal(await servedBy(engine, request('exp', user)), first.get(user), user);

    // A restart: a new registry and engine reading the same store.
    await registry.stop();
    await start();
    for (const user of users)
      assert.equal(await servedBy(engine, request('exp', user)), first.get(user), user);
  });

  test('a key sent as STRING or INT64 is one key; a request without it is served by the config itself', async () => {
    for (let i = 0; i < 50; i++)
      assert.equal(
        await servedBy(engine, request('exp', String(1000 + i), 'int64')),
        await servedBy(engine, request('exp', String(1000 + i), 'string')),
      );
    const before = await metrics.scrape();
    const unkeyed = metricValue(before.body, 'orchestrator_split_requests_total', {
      model: 'exp',
      arm: 'exp',
      assignment: 'no_key',
    });
    for (let i = 0; i < 5; i++) assert.equal(await servedBy(engine, request('exp', undefined)), 'exp');
    const after = await metrics.scrape();
    assert.equal(
      metricValue(after.body, 'orchestrator_split_requests_total', {
        model: 'exp',
        arm: 'exp',
        assignment: 'no_key',
      }),
      unkeyed + 5,
    );
  });

  test('the legacy API routes by the entity of the key (one id, a context value)', async () => {
    for (let i = 0; i < 30; i++) {
      const user = `user-${i}`;
      const { context } = await engine.execute(
        'exp',
        {
          pattern: 'legacy',
          request: {
            modelConfigId: 'exp',
            trackingId: 't',
            entities: [
              { entity: 'item_id', ids: ['i1'], features: [{ name: 'price', idsFeatureValue: ['10'] }] },
              { entity: 'user_id', ids: [user], features: [{ name: 'bonus', idsFeatureValue: ['0'] }] },
            ],
          },
        },
        't',
      );
      assert.equal(context.snapshot.id, await servedBy(engine, request('exp', user)), user);
    }
  });

  test('10,000 keys: each arm serves its declared share within 5 σ; two configs split independently', async () => {
    await store.put(
      'models/other',
      arm(
        'other',
        5,
        split('user_id', [
          ['other', 50],
          ['exp_b', 50],
        ]),
      ),
    );
    await eventually(() => registry.get('other') !== undefined, 10_000, 'the second split to load');
    const N = 10_000;
    const counts = new Map<string, number>();
    let bothB = 0;
    const scrape = async () => (await metrics.scrape()).body;
    const before = await scrape();
    for (let i = 0; i < N; i++) {
      const user = `key:${i}`;
      const served = await servedBy(engine, request('exp', user));
      counts.set(served, (counts.get(served) ?? 0) + 1);
      if (served === 'exp_b' && (await servedBy(engine, request('other', user))) === 'exp_b') bothB++;
    }
    const within = (observed: number, n: number, p: number, what: string) => {
      const sigma = Math.sqrt(n * p * (1 - p));
      assert.ok(
        Math.abs(observed - n * p) <= 5 * sigma,
        `${what}: ${observed} of ${n}, expected ${n * p} ± ${(5 * sigma).toFixed(0)} (5 σ)`,
      );
    };
    for (const [id, weight] of EXP_ARMS) within(counts.get(id) ?? 0, N, weight / 100, id);
    // Independent splits: of the keys `exp` sends to exp_b, `other` sends half to exp_b again.
    within(bothB, counts.get('exp_b')!, 0.5, 'exp_b under both splits');

    // Per-arm metrics count exactly the requests each arm served.
    const after = await scrape();
    for (const [id] of EXP_ARMS) {
      const labels = { model: 'exp', arm: id, assignment: 'hashed' };
      assert.equal(
        metricValue(after, 'orchestrator_split_requests_total', labels) -
          metricValue(before, 'orchestrator_split_requests_total', labels),
        counts.get(id),
        id,
      );
    }
    assert.ok(
      metricValue(after, 'orchestrator_split_request_seconds_count', { model: 'exp', arm: 'exp_c' }) > 0,
    );
    const stats = traffic.stats([{ id: 'exp', components: [], arms: ['exp', 'exp_b', 'exp_c'] }]);
    assert.deepEqual(
      stats.models[0]!.arms!.map((a) => a.model_config_id),
      ['exp', 'exp_b', 'exp_c'],
    );
    assert.ok(stats.models[0]!.arms!.every((a) => a.requests_per_s > 0));
  });

  test("an arm's failed requests are counted as its errors", async () => {
    const user = [...Array(100).keys()]
      .map((i) => `e${i}`)
      .find(
        (u) =>
          armAt(
            {
              key: 'user_id',
              arms: EXP_ARMS.map(([model_config_id, weight]) => ({ model_config_id, weight })),
            },
            splitPoint('exp', u),
          ) === 'exp_c',
      )!;
    const labels = { model: 'exp', arm: 'exp_c' };
    const before = metricValue((await metrics.scrape()).body, 'orchestrator_split_errors_total', labels);
    const broken = request('exp', user);
    broken.targetInputSchema = []; // no price: FeatureInit refuses it
    broken.targets = [{ id: 'i1', featureValues: [] }];
    await assert.rejects(engine.execute('exp', { pattern: 'point', request: broken }, 't'), /price/);
    assert.equal(
      metricValue((await metrics.scrape()).body, 'orchestrator_split_errors_total', labels),
      before + 1,
    );
  });
});

describe('split declarations are validated; a rejected one leaves the previous revision serving', () => {
  let store: ConfigStore;
  let registry: ModelRegistry<ExecutionContext>;

  before(async () => {
    store = await newStore();
    await store.put('models/exp_b', arm('exp_b', 2));
    await store.put('models/exp_c', arm('exp_c', 3, split('user_id', [['exp_c', 100]])));
    await store.put(
      'models/exp',
      arm(
        'exp',
        1,
        split('user_id', [
          ['exp', 50],
          ['exp_b', 50],
        ]),
      ),
    );
    // Found at the initial load too: an arm no config serves, and a chain.
    await store.put(
      'models/a_lonely',
      arm(
        'a_lonely',
        1,
        split('user_id', [
          ['a_lonely', 50],
          ['nowhere', 50],
        ]),
      ),
    );
    await store.put(
      'models/a_chain',
      arm(
        'a_chain',
        1,
        split('user_id', [
          ['a_chain', 50],
          ['exp_c', 50],
        ]),
      ),
    );
    registry = testRegistry(store);
    await registry.start();
  });
  after(async () => {
    await registry.stop();
    await store.close();
  });

  test('at the initial load, a split whose arm does not serve or has a split of its own is rejected', () => {
    for (const id of ['a_lonely', 'a_chain']) {
      const status = registry.status().find((s) => s.id === id)!;
      assert.deepEqual(
        status.problems?.map((p) => p.path),
        ['split.arms[1].model_config_id'],
        JSON.stringify(status),
      );
      assert.equal(registry.get(id), undefined, `${id} never served`);
    }
  });

  const cases: { what: string; document: unknown; paths: string[] }[] = [
    {
      what: 'weights not summing to 100',
      document: arm(
        'exp',
        1,
        split('user_id', [
          ['exp', 50],
          ['exp_b', 40],
        ]),
      ),
      paths: ['split.arms'],
    },
    {
      what: 'a negative weight',
      document: arm(
        'exp',
        1,
        split('user_id', [
          ['exp', 150],
          ['exp_b', -50],
        ]),
      ),
      paths: ['split.arms[0].weight', 'split.arms[1].weight'],
    },
    {
      what: 'an arm twice',
      document: arm(
        'exp',
        1,
        split('user_id', [
          ['exp_b', 50],
          ['exp_b', 50],
        ]),
      ),
      paths: ['split.arms[1].model_config_id'],
    },
    {
      what: 'an arm that does not serve',
      document: arm(
        'exp',
        1,
        split('user_id', [
          ['exp', 50],
          ['nowhere', 50],
        ]),
      ),
      paths: ['split.arms[1].model_config_id'],
    },
    {
      what: 'a chain: an arm with a split of its own',
      document: arm(
        'exp',
        1,
        split('user_id', [
          ['exp', 50],
          ['exp_c', 50],
        ]),
      ),
      paths: ['split.arms[1].model_config_id'],
    },
    {
      what: 'a key produced by a component',
      document: arm(
        'exp',
        1,
        split('score', [
          ['exp', 50],
          ['exp_b', 50],
        ]),
      ),
      paths: ['split.key'],
    },
    {
      what: 'the target id column as key',
      document: arm(
        'exp',
        1,
        split('item_id', [
          ['exp', 50],
          ['exp_b', 50],
        ]),
      ),
      paths: ['split.key'],
    },
    {
      what: 'a key request_features does not list',
      document: arm('exp', 1, { request_features: ['price', 'bonus'], ...split('user_id', [['exp', 100]]) }),
      paths: ['split.key'],
    },
    {
      what: 'an unknown field',
      document: arm('exp', 1, {
        split: { key: 'user_id', arms: [{ model_config_id: 'exp', weight: 100 }], mode: 'x' },
      }),
      paths: ['split'],
    },
  ];

  for (const { what, document, paths } of cases) {
    test(what, async () => {
      const serving = registry.get('exp')!;
      const change = await write(registry, store, 'exp', document);
      assert.equal(change.outcome, 'rejected');
      const status = registry.status().find((s) => s.id === 'exp')!;
      assert.deepEqual(status.problems?.map((p) => p.path).sort(), paths, JSON.stringify(status.problems));
      assert.equal(registry.get('exp')!.version, serving.version, 'the previous revision keeps serving');
      assert.deepEqual(
        registry.get('exp')!.model.config.split?.arms.map((a) => a.weight),
        [50, 50],
      );
    });
  }

  test('an arm may not gain a split of its own while it is an arm (the path is its split)', async () => {
    const serving = registry.get('exp_b')!;
    const change = await write(registry, store, 'exp_b', arm('exp_b', 2, split('user_id', [['exp_b', 100]])));
    assert.equal(change.outcome, 'rejected');
    assert.deepEqual(
      registry
        .status()
        .find((s) => s.id === 'exp_b')!
        .problems!.map((p) => p.path),
      ['split'],
    );
    assert.equal(registry.get('exp_b')!.version, serving.version);
  });

  test('an arm removed after the split was applied: its keys are served by the config itself, counted', async () => {
    const metrics = new Metrics();
    const engine = new InferenceEngine(registry, undefined, undefined, metrics);
    const users = Array.from({ length: 200 }, (_, i) => `u${i}`);
    const toB = users.filter(
      (u) => armAt(registry.get('exp')!.model.config.split!, splitPoint('exp', u)) === 'exp_b',
    );
    assert.ok(toB.length > 50);
    await store.delete('models/exp_b');
    await eventually(() => registry.get('exp_b') === undefined, 10_000, 'exp_b to be removed');
    for (const user of toB) assert.equal(await servedBy(engine, request('exp', user)), 'exp');
    assert.equal(
      metricValue((await metrics.scrape()).body, 'orchestrator_split_requests_total', {
        model: 'exp',
        arm: 'exp',
        assignment: 'arm_not_serving',
      }),
      toB.length,
    );
  });
});
