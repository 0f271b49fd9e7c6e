/**
 * Issue 4's end-to-end check: a DAG product → category → user×category → ONNX model → remote
 * compute, over loopback gRPC against the three reference servers, every score checked against
 * values computed here from the seeded data, independently of the engine.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { CATALOG_RANKER_ID, catalogRankerConfig, RANKER_WEIGHTS } from '../../examples/catalog-ranker.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { expectedCatalogScore } from '../support/orchestrator-process.js';
import { eventually } from '../support/servers.js';
import { type Stack, startStack } from '../support/stack.js';

const expected = expectedCatalogScore;

describe('orchestrator end to end against the reference servers', () => {
  let stack: Stack;
  let client: OrchestratorClient;
  const statsd = createSocket('udp4');
  const packets: string[] = [];

  before(async () => {
    statsd.on('message', (m) => packets.push(...m.toString().split('\n')));
    await new Promise<void>((resolve) => statsd.bind(0, '127.0.0.1', resolve));
    const metrics = new Metrics({
      statsd: {
        host: '127.0.0.1',
        port: statsd.address().port,
        prefix: 'lattice.',
        tags: 'datadog',
        maxBufferSize: 0,
      },
    });
    stack = await startStack({ metrics });
    client = new OrchestratorClient(stack.address);
  });
  after(async () => {
    client.close();
    await stack.stop();
    statsd.close();
  });

  test('every score matches values computed independently from the seeded data', async () => {
    assert.equal(RANKER_WEIGHTS.length, 13);
    for (const userId of ['u1', 'u7', 'u13']) {
      const catalogs = stack.data.rows.catalog.slice(0, 40).map((r) => r.key[0]!);
      const { targets } = await client.pointWise({
        modelConfigId: CATALOG_RANKER_ID,
        context: { user_id: userId },
        targets: catalogs.map((id) => ({ id })),
        deadlineMs: 5000,
      });
      assert.equal(targets.length, catalogs.length);
      let missing = 0;
      targets.forEach((target, i) => {
        const want = expected(stack, userId, catalogs[i]!);
        assert.equal(target.id, catalogs[i]);
        assert.ok(
          Math.abs((target.values.ctr as number) - want.ctr) < 1e-5,
          `${userId}/${target.id} ctr ${target.values.ctr} vs ${want.ctr}`,
        );
        assert.ok(
          Math.abs((target.values.final_score as number) - want.final) < 1e-5,
          `${userId}/${target.id} final ${target.values.final_score} vs ${want.final}`,
        );
        if (want.missingUserCategory) {
          missing++;
          assert.match(target.error, /user_x_category: entity .* not found/);
        } else assert.equal(target.error, '');
      });
      assert.ok(missing < catalogs.length, 'most users have some categories');
    }
  });

  test('pairs and slates are scored: one row each, slate_ctr the mean ctr, preference first over last', async () => {
    const catalogs = stack.data.rows.catalog.slice(0, 6).map((r) => r.key[0]!);
    const ctr = catalogs.map((id) => expected(stack, 'u3', id).ctr);
    const logit = (p: number) => Math.log(p / (1 - p));
    const preference = (a: number, b: number) => 1 / (1 + Math.exp(-(logit(ctr[a]!) - logit(ctr[b]!))));
    const mean = (indexes: number[]) => indexes.reduce((sum, i) => sum + ctr[i]!, 0) / indexes.length;
    const request = {
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: 'u3' },
      targets: catalogs.map((id) => ({ id })),
      deadlineMs: 5000,
    };
    const pairs: [number, number][] = [
      [0, 1],
      [1, 0],
      [2, 5],
    ];
    const paired = await client.pairWise({
      ...request,
      pairs: pairs.map(([first, second]) => ({ first, second })),
    });
    assert.equal(paired.pairs.length, pairs.length);
    paired.pairs.forEach((row, i) => {
      const [a, b] = pairs[i]!;
      assert.equal(row.error, '', `pair ${a}-${b}`);
      assert.ok(
        Math.abs((row.values.preference as number) - preference(a, b)) < 1e-4,
        `pair ${a}-${b} preference`,
      );
      assert.ok(Math.abs((row.values.slate_ctr as number) - mean([a, b])) < 1e-5, `pair ${a}-${b} slate_ctr`);
    });
    // A pair and its reverse are complementary preferences.
    assert.ok(
      Math.abs(
        (paired.pairs[0]!.values.preference as number) + (paired.pairs[1]!.values.preference as number) - 1,
      ) < 1e-5,
    );

    const slates = [[0, 1, 2], [3, 4, 5], [2]];
    const slated = await client.slateWise({ ...request, slates: slates.map((targets) => ({ targets })) });
    assert.equal(slated.slates.length, slates.length);
    slated.slates.forEach((row, i) => {
      const slate = slates[i]!;
      assert.equal(row.error, '', `slate ${slate}`);
      assert.ok(Math.abs((row.values.slate_ctr as number) - mean(slate)) < 1e-5, `slate ${slate} slate_ctr`);
      assert.ok(
        Math.abs((row.values.preference as number) - preference(slate[0]!, slate.at(-1)!)) < 1e-4,
        `slate ${slate} preference`,
      );
    });
  });

  test('cache hits avoid feature store calls (counted on the server); a cache version change refetches', async () => {
    const catalogs = ['c1', 'c2', 'c3', 'c4'];
    const request = {
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: 'u2' },
      targets: catalogs.map((id) => ({ id })),
      deadlineMs: 5000,
    };
    const first = await client.pointWise(request);
    // Catalog features are cached; wait until a request reads none from the store.
    await eventually(
      async () => {
        const before = stack.featureStore.reads.get('catalog') ?? 0;
        await client.pointWise(request);
        return (stack.featureStore.reads.get('catalog') ?? 0) === before;
      },
      5000,
      'catalog features served from the cache',
    );
    const again = await client.pointWise(request);
    assert.deepEqual(
      again.targets.map((t) => t.values.ctr),
      first.targets.map((t) => t.values.ctr),
    );
    const { body } = await stack.metrics.scrape();
    assert.match(
      body,
      /orchestrator_feature_cache_requests_total\{model="catalog_ranker",component="catalog_features",result="hit"\} [1-9]/,
    );
    await eventually(
      () =>
        packets.some(
          (p) =>
            p.startsWith('lattice.orchestrator_feature_cache_requests_total:') && p.includes('result:hit'),
        ),
      10_000,
      'cache hits sent to StatsD',
    );

    const doc = catalogRankerConfig({
      modelServer: stack.targets.modelServer,
      computeServer: stack.targets.computeServer,
    });
    doc.cache = { version: 2, ttl_seconds: 300 };
    const version = stack.orchestrator.registry.require(CATALOG_RANKER_ID).version;
    await stack.config.put(`models/${CATALOG_RANKER_ID}`, doc);
    await eventually(
      () => stack.orchestrator.registry.require(CATALOG_RANKER_ID).version !== version,
      10_000,
      'the new cache version',
    );
    const before = stack.featureStore.reads.get('catalog') ?? 0;
    await client.pointWise(request);
    assert.equal(
      (stack.featureStore.reads.get('catalog') ?? 0) - before,
      catalogs.length,
      'the new version refetches',
    );
  });

  test('the feature store stopped: defaults and row errors, and the request answers within its deadline', async () => {
    await stack.stopFeatureStore();
    // Answered, with row errors: a request that waited on the stopped store past its deadline would
    // fail DEADLINE_EXCEEDED as a whole instead (the deadline is generous: a busy machine is slow).
    const { targets } = await client.pointWise({
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: 'u3' },
      targets: [{ id: 'c50' }, { id: 'c51' }],
      deadlineMs: 30_000,
    });
    for (const target of targets) {
      assert.match(target.error, /user_features failed/);
      assert.match(target.error, /category_features/);
    }
  });
});
