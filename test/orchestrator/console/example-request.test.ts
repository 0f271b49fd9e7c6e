/**
 * Example requests for a config whose ids cannot be looked up (no feature component reads them):
 * the ids are made up and said to be, and every other request feature is typed as its reader
 * declares it (here a compute over FP64).
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import { exampleRequest } from '../../../src/orchestrator/console/index.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { blendOnly, testRegistry } from '../../support/orchestrator.js';

test('made-up ids and typed context values for a config without feature components', async () => {
  const store = await createConfigStore({
    kind: 'file',
    dir: mkdtempSync(join(tmpdir(), 'lattice-example-')),
  });
  const registry = testRegistry(store);
  try {
    const { model } = registry.build('blend_only', '1', blendOnly());
    const { request, ids } = await exampleRequest(model, 'slatewise', undefined);
    assert.deepEqual(ids, { item_id: 'made up' });
    assert.deepEqual(
      request.targets.map((t) => t.id),
      ['i1', 'i2', 'i3', 'i4'],
    );
    assert.deepEqual(
      request.contextFeatures!.map((f) => [
        f.name,
        f.dataType,
        decodeValue(DataType.FP64, Buffer.from(f.value, 'base64')),
      ]),
      [
        ['price', 'DATA_TYPE_FP64', 1],
        ['bonus', 'DATA_TYPE_FP64', 1],
      ],
    );
    assert.deepEqual(request.slates, [{ slateTargetIndices: [0, 1, 2] }, { slateTargetIndices: [1, 2, 3] }]);
    assert.equal(request.returnTargetScores, true);
  } finally {
    await store.close();
  }
});
