/**
 * A variant on pgvector onboarded end to end through the admin API (issue 38), against `lattice vss`
 * as a process of its own with both clusters' vector databases on pgvector in its PGlite database
 * (LATTICE_VSS_VECTOR_DB and LATTICE_VSS_PRODUCTION_VECTOR_DB set to pgvector, as an operator does):
 * register a store, a 64-d COSINE model and a PGVECTOR variant; write Parquet training data;
 * reset-model → READY; Search over gRPC answers recall@10 ≥ 0.95 against brute force; promote-model
 * copies the version into the production cluster's tables, the variant serves from there, and Search
 * answers the same candidates.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { adminCall, registerModelBody } from '../support/admin-http.js';
import { type LatticeVssProcess, startLatticeVss } from '../support/lattice-vss-process.js';
import { Client } from '../vss/serving/harness.js';
import {
  bruteForceTop10,
  clusteredVectors,
  DIMENSION,
  waitOperation,
  writeTraining,
} from './vss-onboarding-world.js';

const ROWS = 1_500;
const QUERIES = 20;
const ENTITY = 'products';
const MODEL = 'clip';

test('a pgvector variant: register, reset to READY, search, promote and search again', {
  timeout: 300_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-onboard-pgvector-'));
  const training = join(dir, 'training');
  const vectors = clusteredVectors(ROWS, 3);
  writeTraining(training, 'p', vectors);
  let child: LatticeVssProcess | undefined;
  let client: Client | undefined;
  try {
    child = await startLatticeVss({
      command: 'vss',
      env: {
        LATTICE_DATA_DIR: join(dir, 'data'),
        LATTICE_VSS_ADMIN_PORT: '0',
        LATTICE_VSS_TRAINING_DATA_ROOTS: dir,
        LATTICE_VSS_VECTOR_DB: 'pgvector',
        LATTICE_VSS_PRODUCTION_VECTOR_DB: 'pgvector',
      },
    });
    const base = child.adminUrl!;
    assert.ok(base, child.output());
    const created = async (path: string, body: Record<string, unknown>) => {
      const answer = await adminCall(base, 'POST', path, body);
      assert.equal(answer.status, 201, `${path}: ${JSON.stringify(answer.json)}`);
    };
    await created('/register-store', {
      store_id: 9,
      entity: ENTITY,
      db_conf_id: 'local',
      embeddings_table: 'products_embeddings',
      aggregator_table: 'products_attributes',
    });
    await created(
      '/register-model',
      registerModelBody({
        entity: ENTITY,
        modelName: MODEL,
        storeId: 9,
        dimension: DIMENSION,
        trainingDataPath: `file://${training}`,
      }),
    );
    await created('/register-variant', {
      entity: ENTITY,
      model_name: MODEL,
      variant: 'all',
      vss_filter: JSON.stringify({ criteria: [] }),
      vectordb_type: 'PGVECTOR',
      vectordb_config: '{}',
      job_frequency: 'FREQ_1D',
    });

    const reset = await adminCall(base, 'POST', '/reset-model', { entity: ENTITY, model_name: MODEL });
    assert.equal(reset.status, 202, JSON.stringify(reset.json));
    await waitOperation(base, String(reset.json.operation_id));

    client = new Client(child.servingAddress!);
    const queries = clusteredVectors(QUERIES, 98, 3);
    const search = async (query: Float32Array) => {
      const response = await client!.search({
        entity: ENTITY,
        modelName: MODEL,
        variant: 'all',
        queries: [{ embedding: { values: Array.from(query) }, pageToken: '', filters: [] }],
        pageSize: 10,
      });
      assert.equal(response.results[0]!.error, '');
      return response.results[0]!.candidates.map((c) => Number(c.id.slice(1)));
    };
    const experiment: number[][] = [];
    let hits = 0;
    for (const query of queries) {
      const ids = await search(query);
      assert.equal(ids.length, 10);
      experiment.push(ids);
      const truth = new Set(bruteForceTop10(query, vectors, () => true));
      hits += ids.filter((n) => truth.has(n)).length;
    }
    const recall = hits / (QUERIES * 10);
    assert.ok(recall >= 0.95, `recall@10 on pgvector: ${recall} < 0.95`);

    const promote = await adminCall(base, 'POST', '/promote-model', { entity: ENTITY, model_name: MODEL });
    assert.equal(promote.status, 202, JSON.stringify(promote.json));
    await waitOperation(base, String(promote.json.operation_id));
    const model = (await adminCall(base, 'GET', `/models/${ENTITY}/${MODEL}`)).json as {
      variants: { variant: string; state: string; cluster: string; vectordb_type: string }[];
    };
    assert.deepEqual(
      model.variants.map((v) => [v.variant, v.state, v.cluster, v.vectordb_type]),
      [['all', 'READY', 'production', 'PGVECTOR']],
    );
    for (const [i, query] of queries.entries()) {
      assert.deepEqual(await search(query), experiment[i], `query ${i} from the production cluster`);
    }
  } finally {
    client?.close();
    const code = await child?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (child) assert.equal(code, 0, child.output());
  }
});
