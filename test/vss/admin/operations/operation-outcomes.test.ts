/**
 * What failed, retried and superseded operations leave behind, seen through the admin HTTP API on
 * the real engine (PGlite, the memory queue, the embedded vector DB, the consumers and the file job
 * runner): a retry of a reset that a later reset superseded is refused with 409 and changes nothing;
 * a failed reset leaves the variants that serve a version READY on it (the failure is the
 * operation's and its version's); a model's state agrees with its variants'; a retry that succeeds
 * clears the operation's `last_error`; after a DELTA the version's ingested and indexed counts
 * describe what it holds.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type AdminApiWorld, openAdminApiWorld } from '../../../support/admin-api-world.js';
import {
  type AdminWorld,
  type Catalog,
  registerCatalog,
  waitForOperation,
  writeTrainingData,
} from '../../../support/admin-engine-world.js';
import { assertError, type Harness } from '../api/api-harness.js';

describe('vss admin: failed, retried and superseded operations (HTTP API, PGlite)', () => {
  let dir: string;
  let world: AdminWorld;
  let api: Harness;

  let opened: AdminApiWorld | undefined;
  before(async () => {
    opened = await openAdminApiWorld('op-outcomes');
    ({ dir, world, api } = opened);
  });
  after(async () => {
    await opened?.close();
  });

  const reset = async (catalog: Catalog) => {
    const answer = await api.call({
      url: '/reset-model',
      body: { entity: catalog.entity, model_name: catalog.modelName },
    });
    assert.equal(answer.status, 202, answer.body);
    return answer.json as { operation_id: string; version: number };
  };
  const operation = async (id: string) => {
    const answer = await api.call({ url: `/operations/${id}` });
    assert.equal(answer.status, 200, answer.body);
    return answer.json;
  };
  const detail = async (catalog: Catalog) => {
    const answer = await api.call({ url: `/models/${catalog.entity}/${catalog.modelName}` });
    assert.equal(answer.status, 200, answer.body);
    return answer.json as {
      state: string;
      variants: {
        variant: string;
        state: string;
        read_version: number | null;
        write_version: number | null;
        failure_reason: string | null;
      }[];
      versions: { version: number; status: string; failure_reason: string | null }[];
    };
  };
  /** A reset whose training data is missing: its job fails, and so does the reset (at start_job). */
  const failedReset = async (catalog: Catalog, data: string) => {
    rmSync(data, { recursive: true, force: true });
    const accepted = await reset(catalog);
    await waitForOperation(world.store, accepted.operation_id, ['FAILED']);
    return accepted;
  };

  it('a retry of a reset superseded by a later reset is refused with 409 naming both versions, and changes nothing', async () => {
    const data = join(dir, 'superseded');
    writeTrainingData(data, 200);
    const catalog = await registerCatalog(world.store, data);
    await waitForOperation(world.store, (await reset(catalog)).operation_id);
    const failed = await failedReset(catalog, data);
    assert.equal(failed.version, 2);
    writeTrainingData(data, 300, { seed: 3 });
    const later = await reset(catalog);
    assert.equal(later.version, 3);
    await waitForOperation(world.store, later.operation_id);

    const before = await operation(failed.operation_id);
    const refused = await api.call({ method: 'POST', url: `/operations/${failed.operation_id}/retry` });
    assertError(refused, 409, 'FAILED_PRECONDITION', 'operation_id');
    assert.match(refused.error.message, /would write version 2 of model/);
    assert.match(refused.error.message, /now serves version 3/);
    assert.match(refused.error.message, new RegExp(`made READY by operation ${later.operation_id}`));
    assert.match(refused.error.message, /submit a new reset \(POST \/reset-model/);

    // Nothing moved: the operation is as it was, the variants serve version 3.
    const after = await operation(failed.operation_id);
    const model = await detail(catalog);
    assert.equal(model.state, 'READY');
    // The later reset dropped the version it retired and the failed one it superseded.
    assert.deepEqual(
      model.versions.map((v) => [v.version, v.status]),
      [
        [3, 'SERVING'],
        [2, 'DROPPED'],
        [1, 'DROPPED'],
      ],
    );
    assert.deepEqual(
      ((await operation(later.operation_id)).result as { dropped_versions?: number[] }).dropped_versions,
      [1, 2],
    );
    assert.equal(after.status, 'FAILED');
    assert.equal(after.attempts, before.attempts);
    assert.equal(after.last_error, before.last_error);
    for (const variant of (await detail(catalog)).variants) {
      assert.deepEqual(
        [variant.state, variant.read_version, variant.write_version],
        ['READY', 3, 3],
        variant.variant,
      );
    }
  });

  it('a failed reset leaves serving variants READY on the version they serve; its version is FAILED; a retry resumes and flips', async () => {
    const data = join(dir, 'serving');
    writeTrainingData(data, 200);
    const catalog = await registerCatalog(world.store, data);
    await waitForOperation(world.store, (await reset(catalog)).operation_id);
    assert.equal((await detail(catalog)).state, 'READY');

    const failed = await failedReset(catalog, data);
    const seen = await detail(catalog);
    for (const variant of seen.variants) {
      assert.deepEqual(
        [variant.state, variant.read_version, variant.write_version, variant.failure_reason],
        ['READY', 1, 2, null],
        variant.variant,
      );
    }
    assert.equal(seen.state, 'READY');
    const v2 = seen.versions.find((v) => v.version === 2);
    assert.equal(v2?.status, 'FAILED');
    assert.match(String(v2?.failure_reason), /ingestion job/);
    assert.equal((await operation(failed.operation_id)).status, 'FAILED');

    writeTrainingData(data, 300, { seed: 4 });
    const retried = await api.call({ method: 'POST', url: `/operations/${failed.operation_id}/retry` });
    assert.equal(retried.status, 202, retried.body);
    await waitForOperation(world.store, failed.operation_id);
    const done = await detail(catalog);
    for (const variant of done.variants) {
      assert.deepEqual([variant.state, variant.read_version, variant.write_version], ['READY', 2, 2]);
    }
    assert.equal(done.state, 'READY');
    assert.equal(done.versions.find((v) => v.version === 2)?.status, 'SERVING');
  });

  it('a first reset that fails leaves its variants and model FAILED; one that succeeds on retry clears its last_error', async () => {
    const data = join(dir, 'retried');
    writeTrainingData(data, 200);
    const catalog = await registerCatalog(world.store, data);
    const failed = await failedReset(catalog, data);
    assert.match(String((await operation(failed.operation_id)).last_error), /ingestion job/);
    const seen = await detail(catalog);
    assert.equal(seen.state, 'FAILED');
    for (const variant of seen.variants) assert.equal(variant.state, 'FAILED', variant.variant);

    writeTrainingData(data, 200);
    const retried = await api.call({ method: 'POST', url: `/operations/${failed.operation_id}/retry` });
    assert.equal(retried.status, 202, retried.body);
    await waitForOperation(world.store, failed.operation_id);
    const done = await operation(failed.operation_id);
    assert.equal(done.status, 'SUCCEEDED');
    assert.equal(done.attempts, 2);
    assert.equal(done.last_error, null);
    const model = await detail(catalog);
    assert.equal(model.state, 'READY');
    for (const variant of model.variants) assert.equal(variant.state, 'READY', variant.variant);
  });

  it('after a DELTA that replaces some candidates and adds others, the version counts what it holds, ingested and indexed alike', async () => {
    const data = join(dir, 'delta');
    writeTrainingData(data, 400);
    const catalog = await registerCatalog(world.store, data);
    await waitForOperation(world.store, (await reset(catalog)).operation_id);
    // c0..c399 again with other vectors, and c400..c499 new: the version then holds 500 candidates.
    writeTrainingData(data, 500, { seed: 5 });
    const delta = await api.call({
      url: '/reset-model',
      body: { entity: catalog.entity, model_name: catalog.modelName, model_type: 'DELTA' },
    });
    assert.equal(delta.status, 202, delta.body);
    await waitForOperation(world.store, String(delta.json.operation_id));
    const version = (await detail(catalog)).versions.find((v) => v.version === 1) as unknown as {
      ingested_count: number;
      indexed_count: number;
    };
    assert.equal(version.ingested_count, 500);
    // Measured with the ingested count, once indexing reached the threshold (95 %) of it.
    assert.ok(
      version.indexed_count >= 0.95 * version.ingested_count &&
        version.indexed_count <= version.ingested_count,
      JSON.stringify(version),
    );
  });
});
