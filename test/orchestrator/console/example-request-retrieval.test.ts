/**
 * The console's example PointWise request for a config with a retrieval stage: no targets, the
 * retrievers' id context features set, and none of the columns retrieval fills sent as context.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { catalogRecommenderConfig } from '../../../examples/catalog-ranker.js';
import { exampleRequest } from '../../../src/orchestrator/console/index.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { testRegistry } from '../../support/orchestrator.js';

test('a retrieval config example gives no targets and the context its retrievers read', async () => {
  const store = await createConfigStore({
    kind: 'file',
    dir: mkdtempSync(join(tmpdir(), 'lattice-example-')),
  });
  // Components are never run here: a stand-in for each.
  const registry = testRegistry(store, (plan) => ({ name: plan.name, required: false, run: () => {} }));
  try {
    const doc = catalogRecommenderConfig({ modelServer: 'm:1', computeServer: 'c:1', vss: 'v:1' });
    // Request features declared: the retrieval columns are among them, yet never context.
    const { model } = registry.build('catalog_recommender', '1', doc);
    const { request } = await exampleRequest(model, 'pointwise', undefined);
    assert.deepEqual(request.targets, []);
    assert.deepEqual(request.contextFeatures!.map((f) => [f.name, f.dataType]).sort(), [
      ['item_id', 'DATA_TYPE_STRING'],
      ['user_id', 'DATA_TYPE_STRING'],
    ]);
  } finally {
    await store.close();
  }
});
