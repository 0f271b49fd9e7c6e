/**
 * The spec's onboarding over HTTP (issue 15), against `lattice vss` as a process of its own: register
 * a store, a 64-d COSINE model and two variants with different `vss_filter`s; write 50,000
 * embeddings as a Parquet directory; reset-model; the operation reaches READY for both variants;
 * Search over gRPC returns the ingested candidates with recall@10 ≥ 0.95 against brute force, each
 * variant only its members. Then a second reset with other embeddings (and other ids) while clients
 * walk pages without pause: zero failed calls, no walk mixes versions, and afterwards the first
 * version is dropped once its rollback grace period (6 s here) is over.
 *
 * On embedded defaults and on PostgreSQL (a schema of its own) + JetStream (topics of their own).
 * VSS_ONBOARD_ROWS changes the row count.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { SearchResponse } from '../../src/gen/vss/v1/vss.js';
import { adminCall, registerModelBody } from '../support/admin-http.js';
import { type LatticeVssProcess, startLatticeVss } from '../support/lattice-vss-process.js';
import { eventually, realServer } from '../support/servers.js';
import { isolatedDistributedSettings } from '../support/vss-stack.js';
import { Client } from '../vss/serving/harness.js';
import {
  brandOf,
  bruteForceTop10,
  clusteredVectors,
  DIMENSION,
  waitOperation,
  writeTraining,
} from './vss-onboarding-world.js';

const ROWS = Number(process.env.VSS_ONBOARD_ROWS ?? 50_000);
const QUERIES = 40;
const ENTITY = 'products';
const MODEL = 'clip';

interface Mode {
  name: string;
  /** Settings file and environment of the child, and what to clean up after. */
  prepare(
    dir: string,
  ): Promise<{ env: Record<string, string>; settingsFile?: string; cleanup(): Promise<void> }>;
}

const embedded: Mode = {
  name: 'embedded defaults',
  prepare: async (dir) => ({ env: { LATTICE_DATA_DIR: join(dir, 'data') }, cleanup: async () => {} }),
};

function distributed(nats: string, postgres: string): Mode {
  return {
    name: 'PostgreSQL + JetStream',
    prepare: (dir) =>
      isolatedDistributedSettings(dir, { nats, postgres }, 'onboard', { admin: { pollIntervalMs: 200 } }),
  };
}

async function onboard(mode: Mode): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-onboard-'));
  const training = join(dir, 'training');
  const v1 = clusteredVectors(ROWS, 1);
  writeTraining(training, 'p', v1);
  const { env, settingsFile, cleanup } = await mode.prepare(dir);
  let child: LatticeVssProcess | undefined;
  let client: Client | undefined;
  try {
    child = await startLatticeVss({
      command: 'vss',
      // A rollback grace period of 6 s (past the 5 s a flip keeps any old version for page walks): the
      // first version is kept for rollback-model, then the sweep drops it.
      env: {
        LATTICE_VSS_ADMIN_PORT: '0',
        LATTICE_VSS_TRAINING_DATA_ROOTS: dir,
        LATTICE_VSS_ROLLBACK_GRACE_MS: '6000',
        ...env,
      },
      ...(settingsFile === undefined ? {} : { settingsFile }),
    });
    const base = child.adminUrl!;
    assert.ok(base, child.output());
    assert.equal(
      (
        await adminCall(base, 'POST', '/register-store', {
          store_id: 7,
          entity: ENTITY,
          db_conf_id: 'local',
          embeddings_table: 'products_embeddings',
          aggregator_table: 'products_attributes',
        })
      ).status,
      201,
    );
    const model = await adminCall(
      base,
      'POST',
      '/register-model',
      registerModelBody({
        entity: ENTITY,
        modelName: MODEL,
        storeId: 7,
        dimension: DIMENSION,
        trainingDataPath: `file://${training}`,
      }),
    );
    assert.equal(model.status, 201, JSON.stringify(model.json));
    for (const [variant, criteria] of [
      ['all', []],
      ['brand_a', [{ column_name: 'brand', filter_value: 'a', default_value: '' }]],
    ] as const) {
      const registered = await adminCall(base, 'POST', '/register-variant', {
        entity: ENTITY,
        model_name: MODEL,
        variant,
        vss_filter: JSON.stringify({ criteria }),
        vectordb_type: 'EMBEDDED',
        vectordb_config: '{}',
        job_frequency: 'FREQ_1D',
      });
      assert.equal(registered.status, 201, JSON.stringify(registered.json));
    }

    const reset = await adminCall(base, 'POST', '/reset-model', { entity: ENTITY, model_name: MODEL });
    assert.equal(reset.status, 202, JSON.stringify(reset.json));
    assert.equal(reset.json.version, 1);
    assert.deepEqual(reset.json.variant_version_map, { all: 1, brand_a: 1 });
    await waitOperation(base, String(reset.json.operation_id));
    const state = (await adminCall(base, 'GET', `/models/${ENTITY}/${MODEL}`)).json as {
      variants: { variant: string; state: string; read_version: number }[];
    };
    for (const v of state.variants) {
      assert.equal(v.state, 'READY', v.variant);
      assert.equal(v.read_version, 1, v.variant);
    }

    // recall@10 against brute force, each variant only its members.
    client = new Client(child.servingAddress!);
    const queries = clusteredVectors(QUERIES, 99, 1);
    for (const [variant, member] of [
      ['all', () => true],
      ['brand_a', (n: number) => brandOf(n) === 'a'],
    ] as const) {
      let hits = 0;
      for (const query of queries) {
        const response = await client.search({
          entity: ENTITY,
          modelName: MODEL,
          variant,
          queries: [{ embedding: { values: Array.from(query) }, pageToken: '', filters: [] }],
          pageSize: 10,
        });
        const ids = response.results[0]!.candidates.map((c) => Number(c.id.slice(1)));
        assert.equal(ids.length, 10);
        for (const n of ids) assert.ok(member(n), `${variant} returned non-member p${n}`);
        const truth = new Set(bruteForceTop10(query, v1, member));
        hits += ids.filter((n) => truth.has(n)).length;
      }
      const recall = hits / (QUERIES * 10);
      assert.ok(recall >= 0.95, `${variant}: recall@10 ${recall} < 0.95`);
    }

    // A second reset with other embeddings and ids (q…) while clients walk pages without pause.
    rmSync(training, { recursive: true });
    writeTraining(training, 'q', clusteredVectors(ROWS, 2, 1));
    let searching = true;
    let calls = 0;
    const failures: string[] = [];
    const walks = Array.from({ length: 3 }, async (_, w) => {
      const query = Array.from(queries[w]!);
      while (searching) {
        let token = '';
        const prefixes = new Set<string>();
        for (let page = 0; page < 4; page++) {
          let response: SearchResponse;
          try {
            response = await client!.search({
              entity: ENTITY,
              modelName: MODEL,
              variant: 'all',
              queries: [{ embedding: { values: query }, pageToken: token, filters: [] }],
              pageSize: 10,
            });
          } catch (err) {
            failures.push(String(err));
            break;
          }
          calls++;
          const result = response.results[0]!;
          for (const c of result.candidates) prefixes.add(c.id[0]!);
          token = result.nextPageToken;
          if (!token) break;
        }
        if (prefixes.size > 1) failures.push(`a page walk mixed versions: ${[...prefixes].join(',')}`);
      }
    });
    const second = await adminCall(base, 'POST', '/reset-model', { entity: ENTITY, model_name: MODEL });
    assert.equal(second.status, 202, JSON.stringify(second.json));
    assert.equal(second.json.version, 2);
    const done = await waitOperation(base, String(second.json.operation_id));
    // Keep searching a little past the flip, then stop.
    const after = calls + 30;
    await eventually(() => calls >= after, 60_000, 'searches after the flip');
    searching = false;
    await Promise.all(walks);
    assert.deepEqual(failures, []);
    assert.ok(calls > 30, `only ${calls} searches ran`);

    const response = await client.search({
      entity: ENTITY,
      modelName: MODEL,
      variant: 'all',
      queries: [{ embedding: { values: Array.from(queries[0]!) }, pageToken: '', filters: [] }],
      pageSize: 10,
    });
    for (const c of response.results[0]!.candidates) assert.equal(c.id[0], 'q');
    // The previous version is kept for its rollback grace period, then the sweep drops it.
    const result = done.result as { dropped_versions: number[]; kept_versions?: number[] };
    assert.deepEqual([result.dropped_versions, result.kept_versions], [[], [1]]);
    const statuses = async () =>
      (
        (await adminCall(base, 'GET', `/models/${ENTITY}/${MODEL}`)).json as {
          versions: { version: number; status: string }[];
        }
      ).versions;
    await eventually(
      async () => (await statuses()).find((v) => v.version === 1)?.status === 'DROPPED',
      60_000,
      'version 1 to be dropped once its grace period is over',
    );
    assert.equal((await statuses()).find((v) => v.version === 2)?.status, 'SERVING');
  } finally {
    client?.close();
    const code = await child?.stop();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
    if (child) assert.equal(code, 0, child.output());
  }
}

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];

describe('vss onboarding over HTTP (lattice vss)', { timeout: 900_000 }, () => {
  test(`on ${embedded.name}`, () => onboard(embedded));
  test('on PostgreSQL + JetStream', { skip: natsUrl === undefined || postgresUrl === undefined }, () =>
    onboard(distributed(natsUrl!, postgresUrl!)),
  );
});
