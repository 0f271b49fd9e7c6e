/**
 * GET /stores, GET /models, GET /models/{entity}/{model}, GET /operations/{id}: the stores, states, versions with counts,
 * recent operations, an operation's progress and the payload the engine writes, ISO dates.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, type Harness, registerAll, unique } from './api-harness.js';

const isoDate = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export function statusTests(get: () => Harness): void {
  test('GET /stores lists every registered store with its entity and tables', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const answer = await h.call({ url: '/stores' });
    assert.equal(answer.status, 200);
    const stores = answer.json.stores as Array<Record<string, unknown>>;
    const listed = stores.find((s) => s.store_id === b.store.store_id);
    assert.ok(listed, 'the store is listed');
    assert.equal(listed.entity, b.entity);
    assert.equal(typeof listed.embeddings_table, 'string');
    assert.match(String(listed.created_at), isoDate);
  });

  test('GET /models lists every model with its variants, versions read and written, and their counts', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = { entity: b.entity, modelName: 'm1' };
    await h.store.versions.create({ ...key, version: 1 });
    await h.store.versions.addCounts({ ...key, version: 1 }, { ingested: 120, failed: 3 });
    assert.ok(
      await h.store.variants.transition({ ...key, variant: 'organic' }, 'REGISTERED', 'INGESTING', {
        writeVersion: 1,
      }),
    );
    const answer = await h.call({ url: '/models' });
    assert.equal(answer.status, 200);
    const models = answer.json.models as Array<Record<string, unknown>>;
    const model = models.find((m) => m.entity === b.entity);
    assert.ok(model, 'the model is listed');
    assert.equal(model.state, 'REGISTERED');
    assert.equal(model.cluster, 'experiment');
    assert.match(String(model.created_at), isoDate);
    const variants = model.variants as Array<Record<string, unknown>>;
    assert.equal(variants.length, 1);
    const variant = variants[0]!;
    assert.equal(variant.state, 'INGESTING');
    assert.equal(variant.failed_state, null);
    assert.equal(variant.read_version, null);
    assert.equal(variant.write_version, 1);
    assert.equal(variant.read_counts, null);
    assert.deepEqual(variant.write_counts, {
      version: 1,
      status: 'INGESTING',
      ingested_count: 120,
      failed_count: 3,
      indexed_count: null,
    });
  });

  test('GET /models shows a failed variant with the state it failed in and why', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = { entity: b.entity, modelName: 'm1', variant: 'organic' };
    assert.ok(await h.store.variants.fail(key, 'REGISTERED', 'collection could not be created'));
    const answer = await h.call({ url: `/models/${b.entity}/m1` });
    const variant = (answer.json.variants as Array<Record<string, unknown>>)[0]!;
    assert.equal(variant.state, 'FAILED');
    assert.equal(variant.failed_state, 'REGISTERED');
    assert.equal(variant.failure_reason, 'collection could not be created');
  });

  test('GET /models/{entity}/{model}: the model with its versions (newest first) and recent operations', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = { entity: b.entity, modelName: 'm1' };
    await h.store.versions.create({ ...key, version: 1 });
    await h.store.versions.create({ ...key, version: 2 });
    assert.ok(await h.store.versions.transition({ ...key, version: 1 }, 'INGESTING', 'INGESTED'));
    const reset = await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'm1' } });
    const answer = await h.call({ url: `/models/${b.entity}/m1` });
    assert.equal(answer.status, 200, answer.body);
    const versions = answer.json.versions as Array<Record<string, unknown>>;
    assert.deepEqual(
      versions.map((v) => [v.version, v.status]),
      [
        [2, 'INGESTING'],
        [1, 'INGESTED'],
      ],
    );
    assert.match(String(versions[1]?.ingested_at), isoDate);
    assert.equal(versions[0]?.ingested_at, null);
    const operations = answer.json.operations as Array<Record<string, unknown>>;
    assert.deepEqual(
      operations.map((o) => o.operation_id),
      [reset.json.operation_id],
    );
    assert.equal((answer.json.variants as unknown[]).length, 1);
  });

  test('GET /models/{entity}/{model}: 404 for an unknown model, 400 naming a bad segment', async () => {
    const h = get();
    assertError(await h.call({ url: '/models/nobody/nothing' }), 404, 'NOT_FOUND', 'model');
    assertError(await h.call({ url: '/models/a%22b/m1' }), 400, 'INVALID_ARGUMENT', 'entity');
    assertError(await h.call({ url: `/models/e/${'m'.repeat(200)}` }), 400, 'INVALID_ARGUMENT', 'model');
    assertError(await h.call({ url: `/models/e/${'m'.repeat(5000)}` }), 400, 'INVALID_ARGUMENT', 'path');
    assertError(await h.call({ url: '/models/e/%E0%A4%A' }), 400, 'INVALID_ARGUMENT');
  });

  test('GET /operations/{id}: status, step, progress, attempts, result, payload with job progress, dates', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const { operation } = await h.store.operations.create({
      kind: 'RESET_MODEL',
      entity: b.entity,
      modelName: 'm1',
      payload: {
        job: { rows_read: 1200, rows_published: 1100, percent: 55 },
        bad_rows: [{ file: 'a.jsonl', row: 7, reason: 'no id' }],
      },
    });
    const id = operation.operationId;
    assert.ok(await h.store.operations.start(id, 'ingest'));
    assert.ok(await h.store.operations.reportProgress(id, 'ingest', 0.55));
    const answer = await h.call({ url: `/operations/${id}` });
    assert.equal(answer.status, 200, answer.body);
    const op = answer.json;
    assert.equal(op.status, 'RUNNING');
    assert.equal(op.step, 'ingest');
    assert.ok(Math.abs(Number(op.progress) - 0.55) < 1e-6);
    assert.equal(op.attempts, 1);
    assert.equal(op.last_error, null);
    assert.equal(op.result, null);
    assert.deepEqual((op.payload as Record<string, unknown>).job, {
      rows_read: 1200,
      rows_published: 1100,
      percent: 55,
    });
    assert.deepEqual((op.payload as Record<string, unknown>).bad_rows, [
      { file: 'a.jsonl', row: 7, reason: 'no id' },
    ]);
    assert.match(String(op.created_at), isoDate);
    assert.match(String(op.started_at), isoDate);
    assert.equal(op.finished_at, null);
    assert.ok(await h.store.operations.succeed(id, 'ingest', { version: 1 }));
    const done = await h.call({ url: `/operations/${id}` });
    assert.equal(done.json.status, 'SUCCEEDED');
    assert.deepEqual(done.json.result, { version: 1 });
    assert.match(String(done.json.finished_at), isoDate);
  });

  test('GET /operations/{id}: 404 unknown, 400 for an id outside the id alphabet', async () => {
    const h = get();
    assertError(await h.call({ url: '/operations/no-such-operation' }), 404, 'NOT_FOUND', 'id');
    assertError(await h.call({ url: `/operations/${'x'.repeat(65)}` }), 400, 'INVALID_ARGUMENT', 'id');
    assertError(await h.call({ url: "/operations/x';DROP" }), 400, 'INVALID_ARGUMENT', 'id');
  });
}
