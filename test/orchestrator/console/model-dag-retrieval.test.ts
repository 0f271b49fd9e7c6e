/**
 * The DAG of a config with a retrieval stage: one retriever node per retriever, with its vss model,
 * variant, k, quota, deadline and whether it is required, each feeding feature_init.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { catalogRecommenderConfig } from '../../../examples/catalog-ranker.js';
import { modelDag } from '../../../src/orchestrator/console/model-dag.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { testRegistry } from '../../support/orchestrator.js';

test('a retrieval config draws its retrievers before feature_init', async () => {
  const store = await createConfigStore({ kind: 'file', dir: mkdtempSync(join(tmpdir(), 'lattice-dag-')) });
  // Components are never run here: a stand-in for each.
  const registry = testRegistry(store, (plan) => ({ name: plan.name, required: false, run: () => {} }));
  try {
    const doc = catalogRecommenderConfig({ modelServer: 'm:1', computeServer: 'c:1', vss: 'v:1' });
    const { model } = registry.build('catalog_recommender', '1', doc);
    const dag = modelDag(model);
    const retrievers = dag.nodes.filter((n) => n.kind === 'retriever');
    assert.deepEqual(retrievers, [
      {
        id: 'similar',
        kind: 'retriever',
        inputs: ['item_id'],
        outputs: ['catalog_id', 'similar_score', 'vss_category'],
        deadline_ms: 500,
        endpoint: 'v:1',
        required: false,
        entity: 'catalog',
        vss_model: 'products',
        variant: 'all',
        k: 100,
        quota: 40,
      },
      {
        id: 'similar_shoes',
        kind: 'retriever',
        inputs: ['item_id'],
        outputs: ['catalog_id', 'similar_shoes_score'],
        deadline_ms: 500,
        endpoint: 'v:1',
        required: false,
        entity: 'catalog',
        vss_model: 'products',
        variant: 'shoes',
        k: 20,
        quota: 10,
      },
    ]);
    const edges = dag.edges.map((e) => `${e.from}>${e.to}`);
    assert.ok(edges.includes('similar>feature_init'));
    assert.ok(edges.includes('similar_shoes>feature_init'));
    assert.ok(edges.includes('feature_init>catalog_features'));
    // Every edge joins two drawn nodes.
    const ids = new Set(dag.nodes.map((n) => n.id));
    for (const e of dag.edges) assert.ok(ids.has(e.from) && ids.has(e.to), `${e.from}>${e.to}`);
  } finally {
    await store.close();
  }
});
