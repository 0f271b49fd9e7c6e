/**
 * Retrieval and ranking in one call (issue 40), on a real stack: the reference feature store, model
 * server and compute server with the orchestrator in front (test/support/stack.ts), and vss serving
 * and consumers (test/support/vss-stack.ts) holding products whose ids are the feature store's
 * catalog ids. A config that retrieves from vss answers a PointWise Predict without targets with the
 * list a client gets by calling Search, then Predict on the plain ranker, then sorting and cutting
 * itself; a failing optional retriever degrades (named in `errors`), a failing required one fails the
 * call naming it; an invalid retrieval block is rejected with its JSON path while the previous
 * revision serves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CATALOG_RANKER_ID, catalogRecommenderConfig } from '../../examples/catalog-ranker.js';
import { OrchestratorClient, type PredictResult } from '../../src/orchestrator/client.js';
import type { ModelConfigInput } from '../../src/orchestrator/config/index.js';
import { closedPort } from '../support/closed-port.js';
import { putServed, serveProducts } from '../support/retrieval-stack.js';
import { eventually } from '../support/servers.js';
import { type Stack, startStack } from '../support/stack.js';
import { seededVector } from '../support/vss-ingest-catalog.js';
import { inProcessVssStack, type VssStack } from '../support/vss-stack.js';

const CATALOGS = 60;
const K = 30;
const LIMIT = 10;
const CATEGORIES = ['shoes', 'books', 'games'];

describe('retrieval → ranking in one call', () => {
  let stack: Stack;
  let vss: VssStack;
  let client: OrchestratorClient;
  let brokenTarget: string;

  /** The demo's recommender, over this stack, with one retriever (Search's k, the `all` variant). */
  function config(id: string, extra: Record<string, unknown>[] = []): ModelConfigInput {
    const doc = catalogRecommenderConfig({ ...stack.targets, vss: vss.address });
    return {
      ...doc,
      model_config_id: id,
      retrieval: {
        deadline_ms: 2000,
        retrievers: [
          {
            name: 'similar',
            target: vss.address,
            entity: 'catalog',
            model: 'products',
            variant: 'all',
            query: { candidate_id_from: 'item_id' },
            k: K,
            attributes: [{ name: 'category', column: 'vss_category' }],
          },
          ...(extra as never[]),
        ],
      },
      response: { ...doc.response, limit: LIMIT },
    } as ModelConfigInput;
  }
  const broken = (required: boolean) => ({
    name: 'broken',
    target: brokenTarget,
    entity: 'catalog',
    model: 'products',
    variant: 'all',
    query: { candidate_id_from: 'item_id' },
    k: 5,
    required,
  });

  const put = (doc: ModelConfigInput) => putServed(stack, doc);

  before(async () => {
    stack = await startStack({ catalogs: CATALOGS });
    vss = await inProcessVssStack();
    brokenTarget = `127.0.0.1:${await closedPort()}`;
    await serveProducts(vss, CATALOGS, (i) => CATEGORIES[i % CATEGORIES.length]!);
    await eventually(
      async () => (await search('c1').catch(() => [])).length > 0,
      30_000,
      'the products to be served',
    );
    await put(config('retrieve_rank'));
    await put(config('retrieve_rank_degrading', [broken(false)]));
    await put(config('retrieve_rank_strict', [broken(true)]));
    client = new OrchestratorClient(stack.address);
  });
  after(async () => {
    client?.close();
    await vss?.close();
    await stack?.stop();
  });

  async function search(item: string | number[]) {
    const query = typeof item === 'string' ? { candidateId: item } : { embedding: { values: item } };
    const response = await vss.client.search({
      entity: 'catalog',
      modelName: 'products',
      variant: 'all',
      queries: [{ ...query, filters: [], pageToken: '' }],
      pageSize: K,
      attributes: ['category'],
    });
    assert.equal(response.results[0]!.error, '');
    return response.results[0]!.candidates;
  }

  /** What a client does without retrieval: Search, Predict on the ranker with those targets, sort, cut. */
  async function twoCalls(userId: string, itemId: string | number[]) {
    const candidates = await search(itemId);
    const ranked = await client.pointWise({
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: userId },
      targets: candidates.map((c) => ({ id: c.id })),
    });
    return ranked.targets
      .map((t, i) => ({
        id: t.id,
        score: t.values.final_score as number,
        category: candidates[i]!.attributes.category,
      }))
      .sort((a, b) => b.score - a.score)
      .slice(0, LIMIT);
  }

  const oneCall = (id: string, userId: string, itemId: string): Promise<PredictResult> =>
    client.pointWise({ modelConfigId: id, context: { user_id: userId, item_id: itemId }, deadlineMs: 5000 });

  const ranked = (result: PredictResult) =>
    result.targets.map((t) => ({
      id: t.id,
      score: t.values.final_score as number,
      category: t.values.vss_category as string,
    }));

  test('a retrieval config answers a Predict without targets with the list Search then Predict gives', async () => {
    for (const [userId, itemId] of [
      ['u3', 'c7'],
      ['u11', 'c42'],
    ] as const) {
      const one = await oneCall('retrieve_rank', userId, itemId);
      assert.deepEqual(one.errors, []);
      assert.equal(one.targets.length, LIMIT);
      assert.ok(
        one.targets.every((t) => t.error === ''),
        JSON.stringify(one.targets),
      );
      assert.deepEqual(ranked(one), await twoCalls(userId, itemId));
    }
  });

  test('the other query forms: a context vector, and the stored embedding of a context id', async () => {
    const vector = seededVector(1000, 8);
    const byVector = config('retrieve_rank_vector');
    byVector.retrieval!.retrievers[0]!.query = { context_feature: 'query_vector' };
    await put(byVector);
    const one = await client.pointWise({
      modelConfigId: 'retrieve_rank_vector',
      context: { user_id: 'u5', query_vector: { type: 'FP32_VECTOR', value: vector, vectorDim: 8 } },
      deadlineMs: 5000,
    });
    assert.deepEqual(one.errors, []);
    assert.deepEqual(ranked(one), await twoCalls('u5', vector));

    // GetEmbeddings of the context's id, then a Search with it: the neighbours of that product.
    const byEmbedding = config('retrieve_rank_embedding');
    byEmbedding.retrieval!.retrievers[0]!.query = {
      entity_embedding: { entity: 'catalog', model: 'products', id_from: 'item_id' },
    };
    await put(byEmbedding);
    const viaEmbedding = await oneCall('retrieve_rank_embedding', 'u5', 'c9');
    assert.deepEqual(viaEmbedding.errors, []);
    assert.deepEqual(ranked(viaEmbedding), await twoCalls('u5', seededVector(8, 8)));
  });

  test("a feature-store vector of a context entity: the user's profile embedding", async () => {
    const byProfile = config('retrieve_rank_profile');
    byProfile.retrieval!.retrievers[0]!.query = {
      feature_store_vector: { entity: 'user', column: 'user:profile:embedding', id_from: 'user_id' },
    };
    await put(byProfile);
    // The demo's users carry an 8-dimension embedding, the products' dimension.
    const user = stack.data.rows.user.find((row) => row.key[0] === 'u4')!;
    const embedding = Array.from(Float32Array.from(user.values.profile!.embedding as number[]));
    const one = await client.pointWise({
      modelConfigId: 'retrieve_rank_profile',
      context: { user_id: 'u4' },
      deadlineMs: 5000,
    });
    assert.deepEqual(one.errors, []);
    assert.deepEqual(ranked(one), await twoCalls('u4', embedding));
    // A user the feature store does not know: the required retriever fails, named.
    const strict = config('retrieve_rank_profile_strict');
    strict.retrieval!.retrievers[0]!.query = byProfile.retrieval!.retrievers[0]!.query;
    strict.retrieval!.retrievers[0]!.required = true;
    await put(strict);
    await assert.rejects(
      client.pointWise({ modelConfigId: 'retrieve_rank_profile_strict', context: { user_id: 'nobody' } }),
      /required retriever similar failed: .*no user:profile:embedding in the feature store for user "nobody"/,
    );
  });

  test('a failing optional retriever contributes nothing and is named in errors', async () => {
    const degraded = await oneCall('retrieve_rank_degrading', 'u3', 'c7');
    assert.equal(degraded.errors.length, 1);
    assert.match(degraded.errors[0]!, /^retriever broken: /);
    assert.deepEqual(ranked(degraded), await twoCalls('u3', 'c7'));
  });

  test('a failing required retriever fails the call, naming it', async () => {
    await assert.rejects(oneCall('retrieve_rank_strict', 'u3', 'c7'), (err: Error & { code?: number }) => {
      assert.match(err.message, /required retriever broken failed/);
      return true;
    });
  });

  test('targets given to a retrieval config are refused', async () => {
    await assert.rejects(
      client.pointWise({
        modelConfigId: 'retrieve_rank',
        context: { user_id: 'u3', item_id: 'c7' },
        targets: [{ id: 'c1' }],
      }),
      /retrieves its targets/,
    );
  });

  test('an invalid retrieval block is rejected with its JSON path; the previous revision serves', async () => {
    const before = ranked(await oneCall('retrieve_rank', 'u3', 'c7'));
    const bad = config('retrieve_rank');
    bad.retrieval!.retrievers[0]!.quota = K + 1;
    await stack.config.put('models/retrieve_rank', bad);
    await eventually(
      () =>
        stack.orchestrator.registry.status().find((s) => s.id === 'retrieve_rank')?.lastError !== undefined,
      10_000,
      'the invalid revision to be rejected',
    );
    const status = stack.orchestrator.registry.status().find((s) => s.id === 'retrieve_rank')!;
    assert.ok(
      status.problems?.some((p) => p.path === 'retrieval.retrievers[0].quota'),
      JSON.stringify(status.problems),
    );
    assert.deepEqual(ranked(await oneCall('retrieve_rank', 'u3', 'c7')), before);
  });
});
