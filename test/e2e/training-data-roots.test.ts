/**
 * `training_data_path` is confined to the configured roots (default: the data directory and the model
 * repository), checked as the kernel opens it: `lattice vss` refuses a path outside them with 400
 * naming the field and the roots, at register-model and at reset-model (for a model registered while
 * the roots were wider), and a job fails rather than read a file a symlink inside a root points out of.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { adminCall, registerModelBody } from '../support/admin-http.js';
import { startLatticeVss } from '../support/lattice-vss-process.js';
import { eventually } from '../support/servers.js';

const ENTITY = 'catalog';

function rows(prefix: string): string {
  return Array.from({ length: 20 }, (_, i) =>
    JSON.stringify({ id: `${prefix}${i}`, emb: [i, 1, 0, 1], flag: true }),
  ).join('\n');
}

function modelBody(modelName: string, trainingDataPath: string) {
  return registerModelBody({ entity: ENTITY, modelName, storeId: 1, dimension: 4, trainingDataPath });
}

test('training_data_path outside the roots is refused with 400; a symlink out of a root fails the job', {
  timeout: 180_000,
}, async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'lattice-roots-')));
  const data = join(dir, 'data');
  const outside = join(dir, 'outside');
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'part-0.jsonl'), rows('o'));
  const inside = join(data, 'training');
  mkdirSync(inside, { recursive: true });
  writeFileSync(join(inside, 'part-0.jsonl'), rows('i'));
  symlinkSync(join(outside, 'part-0.jsonl'), join(inside, 'part-1.jsonl'));
  symlinkSync(outside, join(data, 'linked-out'));
  const env = { LATTICE_DATA_DIR: data };
  try {
    // Wider roots: a model whose data is outside the data directory registers.
    let vss = await startLatticeVss({
      command: 'vss',
      env: { ...env, LATTICE_VSS_TRAINING_DATA_ROOTS: dir },
    });
    try {
      const base = vss.adminUrl!;
      const store = await adminCall(base, 'POST', '/register-store', {
        store_id: 1,
        entity: ENTITY,
        db_conf_id: 'local',
        embeddings_table: 'catalog_embeddings',
        aggregator_table: 'catalog_attributes',
      });
      assert.equal(store.status, 201, JSON.stringify(store.json));
      const legacy = await adminCall(base, 'POST', '/register-model', modelBody('legacy', outside));
      assert.equal(legacy.status, 201, JSON.stringify(legacy.json));
    } finally {
      assert.equal(await vss.stop(), 0, vss.output());
    }

    // Default roots: the data directory and the model repository.
    vss = await startLatticeVss({ command: 'vss', env });
    try {
      const base = vss.adminUrl!;
      for (const path of [
        outside,
        `file://${outside}`,
        join(data, '..', 'outside'),
        join(data, 'linked-out'),
      ]) {
        const refused = await adminCall(base, 'POST', '/register-model', modelBody('products', path));
        assert.equal(refused.status, 400, `${path}: ${JSON.stringify(refused.json)}`);
        const error = refused.json.error as { code: string; field: string; message: string };
        assert.equal(error.code, 'INVALID_ARGUMENT');
        assert.equal(error.field, 'training_data_path');
        assert.ok(error.message.includes(data), error.message);
        assert.ok(error.message.includes(join(data, 'models')), error.message);
        assert.match(error.message, /vss\.admin\.trainingDataRoots \(LATTICE_VSS_TRAINING_DATA_ROOTS\)/);
      }
      const reset = await adminCall(base, 'POST', '/reset-model', { entity: ENTITY, model_name: 'legacy' });
      assert.equal(reset.status, 400, JSON.stringify(reset.json));
      assert.equal((reset.json.error as { field: string }).field, 'training_data_path');

      // Inside the data directory: registered; its job refuses the file a symlink leads out to.
      const model = await adminCall(base, 'POST', '/register-model', modelBody('products', inside));
      assert.equal(model.status, 201, JSON.stringify(model.json));
      const variant = await adminCall(base, 'POST', '/register-variant', {
        entity: ENTITY,
        model_name: 'products',
        variant: 'all',
        vss_filter: JSON.stringify({ criteria: [] }),
        vectordb_type: 'EMBEDDED',
        vectordb_config: '{}',
        job_frequency: 'FREQ_1D',
      });
      assert.equal(variant.status, 201, JSON.stringify(variant.json));
      const started = await adminCall(base, 'POST', '/reset-model', {
        entity: ENTITY,
        model_name: 'products',
      });
      assert.equal(started.status, 202, JSON.stringify(started.json));
      let operation: Record<string, unknown> = {};
      await eventually(
        async () => {
          operation = (await adminCall(base, 'GET', `/operations/${String(started.json.operation_id)}`)).json;
          return operation.status === 'FAILED' || operation.status === 'SUCCEEDED';
        },
        120_000,
        'the reset to end',
      );
      assert.equal(operation.status, 'FAILED', JSON.stringify(operation));
      assert.match(String(operation.last_error), /part-1\.jsonl -> .*outside.*is outside the directories/);
    } finally {
      assert.equal(await vss.stop(), 0, vss.output());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
