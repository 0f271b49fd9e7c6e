/**
 * The orchestrator beside its feature store, model server and compute in one process, as in
 * `lattice up`: its calls to them take their LocalChannels (no loopback network, whose every
 * crossing waits on the one event loop behind other work). Predict answers the same scores, the
 * servers' handlers ran (their stores were read), and no call reached their network listeners.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CATALOG_RANKER_ID } from '../../examples/catalog-ranker.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { expectedCatalogScore } from '../support/orchestrator-process.js';
import { type Stack, startStack } from '../support/stack.js';

describe('orchestrator calling the servers of its own process without the network', () => {
  let stack: Stack;
  let client: OrchestratorClient;

  before(async () => {
    stack = await startStack({ local: true });
    client = new OrchestratorClient(stack.address);
  });
  after(async () => {
    client.close();
    await stack.stop();
  });

  test('Predict scores match the seeded data; no call crossed the servers network listeners', async () => {
    const catalogs = stack.data.rows.catalog.slice(0, 12).map((r) => r.key[0]!);
    const { targets } = await client.pointWise({
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: 'u3' },
      targets: catalogs.map((id) => ({ id })),
      deadlineMs: 5000,
    });
    assert.equal(targets.length, catalogs.length);
    targets.forEach((target, i) => {
      const want = expectedCatalogScore(stack, 'u3', catalogs[i]!);
      assert.equal(target.id, catalogs[i]);
      assert.ok(
        Math.abs((target.values.final_score as number) - want.final) < 1e-5,
        `${target.id}: final_score ${target.values.final_score} ≠ ${want.final}`,
      );
    });
    // The feature store's handler read its store for every feature entity of the DAG.
    assert.deepEqual([...stack.featureStore.reads.keys()].sort(), [
      'catalog',
      'category',
      'user',
      'user_category',
    ]);
    // The orchestrator counted its calls to each server as OK …
    const orchestrator = (await stack.metrics.scrape()).body;
    for (const service of ['feature_store', 'model_server', 'numerix']) {
      assert.match(
        orchestrator,
        new RegExp(`orchestrator_external_requests_total\\{service="${service}",[^}]*outcome="ok"\\} [1-9]`),
      );
    }
    // … and none of them reached a server through its gRPC listener (whose interceptor counts each).
    const servers = (await stack.serverMetrics.scrape()).body;
    assert.doesNotMatch(servers, /grpc_server_handled_total\{server="(featurestore|modelserver|compute)"/);
  });
});
