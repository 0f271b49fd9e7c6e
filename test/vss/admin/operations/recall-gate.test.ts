/**
 * The reset's recall gate (verify_recall, docs/vss.md "Recall gate and rollback") on the real engine
 * (PGlite, the memory queue, the embedded vector DB, the consumers, the file job runner), through the
 * admin HTTP API, on 3,000 clustered 16-d points:
 *
 * - a version built with sound HNSW parameters passes and flips, with its figures on the version;
 * - the same data built with the weakest graph the engine accepts (m 2, ef_construction 4, ef_search 1)
 *   is refused: the operation fails at verify_recall with the measured figures in its error and on
 *   the version, the variant stays READY on the version it served, and searches keep reading it;
 * - a retry measures again: after lowering min_recall (a tuning change) the same version flips.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SqlClient } from '../../../../src/platform/sql/index.js';
import type { EmbeddedVectorDb } from '../../../../src/platform/vectordb/index.js';
import { collectionName } from '../../../../src/vss/model/index.js';
import { type AdminApiWorld, openAdminApiWorld } from '../../../support/admin-api-world.js';
import {
  type AdminWorld,
  type Catalog,
  DIMENSION,
  registerCatalog,
  waitForOperation,
} from '../../../support/admin-engine-world.js';
import { clusteredFixture } from '../../../support/vector-fixtures.js';
import type { Harness } from '../api/api-harness.js';

const POINTS = 3_000;

/** 3,000 points in 30 tight clusters; `shard` admits 2 % of them, `half` 50 %. */
function writeClusteredData(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const fixture = clusteredFixture({
    count: POINTS,
    dimension: DIMENSION,
    clusters: 30,
    spread: 0.15,
    seed: 11,
  });
  const lines = fixture.ids.map((id, i) =>
    JSON.stringify({
      id,
      emb: Array.from(fixture.vector(i)),
      flag: true,
      shard: `s${i % 50}`,
      half: i % 2 === 0 ? 'even' : 'odd',
    }),
  );
  writeFileSync(join(dir, 'part-0.jsonl'), `${lines.join('\n')}\n`);
}

interface VersionJson {
  version: number;
  status: string;
  recall: {
    k: number;
    passed: boolean;
    variants: Record<
      string,
      { min_recall: number; passed: boolean; buckets: Record<string, { queries: number; recall: number }> }
    >;
  } | null;
}

describe('vss admin: recall-gated flips (verify_recall)', () => {
  let dir: string;
  let sql: SqlClient;
  let vectorDb: EmbeddedVectorDb;
  let world: AdminWorld;
  let api: Harness;

  let opened: AdminApiWorld | undefined;
  before(async () => {
    opened = await openAdminApiWorld('recall-gate', () => ({
      rollbackGraceMs: 3_600_000,
      recallGate: { sampleSize: 100, k: 10 },
    }));
    ({ dir, sql, vectorDb, world, api } = opened);
    writeClusteredData(join(dir, 'data'));
  });
  after(async () => {
    await opened?.close();
  });

  const registerVariantAnswer = (catalog: Catalog, hnsw: Record<string, number>, minRecall: number) =>
    api.call({
      url: '/register-variant',
      body: {
        entity: catalog.entity,
        model_name: catalog.modelName,
        variant: 'all',
        vss_filter: {},
        vectordb_type: 'EMBEDDED',
        vectordb_config: { hnsw },
        job_frequency: 'FREQ_1D',
        min_recall: minRecall,
      },
    });
  const registerVariant = async (catalog: Catalog, hnsw: Record<string, number>) => {
    const answer = await registerVariantAnswer(catalog, hnsw, 0.95);
    assert.equal(answer.status, 201, answer.body);
    assert.equal(answer.json.min_recall, 0.95);
  };
  const reset = async (catalog: Catalog) => {
    const answer = await api.call({
      url: '/reset-model',
      body: { entity: catalog.entity, model_name: catalog.modelName },
    });
    assert.equal(answer.status, 202, answer.body);
    return answer.json as { operation_id: string; version: number };
  };
  const versions = async (catalog: Catalog) => {
    const answer = await api.call({ url: `/models/${catalog.entity}/${catalog.modelName}` });
    assert.equal(answer.status, 200, answer.body);
    return answer.json as {
      variants: { variant: string; state: string; read_version: number | null; min_recall: number }[];
      versions: VersionJson[];
    };
  };
  /** A search as serving makes it (indexed points of the variant): the collection it reads answers. */
  const searchVersion = async (catalog: Catalog, version: number) => {
    const [hits] = await vectorDb.search({
      collection: collectionName(catalog.entity, catalog.modelName, version),
      queries: [{ vector: new Float32Array(DIMENSION).fill(0.1) }],
      filters: [{ field: 'to_be_indexed_all', op: 'IN', values: ['true'] }],
      limit: 5,
      indexedOnly: true,
    });
    return hits!.length;
  };

  it('flips a version built with sound parameters; refuses the weakest graph with its figures; a retry measures again', async () => {
    const catalog = await registerCatalog(world.store, join(dir, 'data'), []);
    await registerVariant(catalog, { m: 16, ef_construction: 128, ef_search: 96 });

    // Sound parameters: measured, passed, flipped.
    const first = await reset(catalog);
    const done = await waitForOperation(world.store, first.operation_id, ['SUCCEEDED', 'FAILED']);
    assert.equal(done.status, 'SUCCEEDED', done.lastError ?? '');
    let state = await versions(catalog);
    assert.equal(state.variants[0]!.read_version, 1);
    const passed = state.versions.find((v) => v.version === 1)!.recall!;
    assert.equal(passed.passed, true);
    assert.equal(passed.k, 10);
    const buckets = passed.variants.all!.buckets;
    assert.ok(buckets.over_10pct!.queries > 0, JSON.stringify(buckets));
    assert.ok(buckets['1_to_10pct']!.queries > 0, JSON.stringify(buckets));
    for (const bucket of Object.values(buckets)) assert.ok(bucket.recall >= 0.95, JSON.stringify(buckets));

    // The same data on the weakest graph: a tuning change the admin API will offer (issue 38 item 5),
    // made in SQL here, read by the next reset's create_collections.
    await sql.query(
      `UPDATE vss_variants SET vectordb_config = $3::jsonb WHERE entity = $1 AND model_name = $2`,
      [
        catalog.entity,
        catalog.modelName,
        JSON.stringify({ hnsw: { m: 2, ef_construction: 4, ef_search: 1 } }),
      ],
    );
    const second = await reset(catalog);
    const failed = await waitForOperation(world.store, second.operation_id, ['SUCCEEDED', 'FAILED']);
    assert.equal(failed.status, 'FAILED', 'the weak version was refused');
    assert.equal(failed.step, 'verify_recall');
    assert.match(
      failed.lastError ?? '',
      /^recall@10 of version 2 is below min_recall: variant all \(min_recall 0\.95\): .*over_10pct 0\.\d+ over \d+ queries/,
    );
    state = await versions(catalog);
    assert.equal(state.variants[0]!.state, 'READY');
    assert.equal(state.variants[0]!.read_version, 1, 'the old version keeps serving');
    const refused = state.versions.find((v) => v.version === 2)!;
    assert.equal(refused.status, 'FAILED');
    assert.equal(refused.recall!.passed, false);
    const weak = refused.recall!.variants.all!;
    assert.equal(weak.passed, false);
    assert.ok(weak.buckets.over_10pct!.recall < 0.95, JSON.stringify(weak));
    assert.ok(await searchVersion(catalog, 1), 'version 1 still answers');

    // A retry measures again: still refused as it is, flipped once min_recall is lowered.
    let retried = await api.call({ url: `/operations/${second.operation_id}/retry`, method: 'POST' });
    assert.equal(retried.status, 202, retried.body);
    const again = await waitForOperation(world.store, second.operation_id, ['SUCCEEDED', 'FAILED']);
    assert.equal(again.status, 'FAILED');
    assert.equal(again.step, 'verify_recall');
    assert.equal(again.attempts, 2);
    await sql.query(`UPDATE vss_variants SET min_recall = 0 WHERE entity = $1 AND model_name = $2`, [
      catalog.entity,
      catalog.modelName,
    ]);
    retried = await api.call({ url: `/operations/${second.operation_id}/retry`, method: 'POST' });
    assert.equal(retried.status, 202, retried.body);
    await waitForOperation(world.store, second.operation_id, ['SUCCEEDED']);
    state = await versions(catalog);
    assert.equal(state.variants[0]!.read_version, 2);
    assert.equal(state.versions.find((v) => v.version === 2)!.recall!.passed, true);
  });

  it('refuses min_recall outside 0..1', async () => {
    const catalog = await registerCatalog(world.store, join(dir, 'data'), []);
    const answer = await registerVariantAnswer(catalog, {}, 1.5);
    assert.equal(answer.status, 400, answer.body);
    assert.match(answer.body, /min_recall/);
  });
});
