/**
 * The routes that start operations: reset-model, trigger-model-machine, promote-model,
 * promote-variant and POST /operations/{id}/retry — 202 with the operation id, the lifecycle's
 * FAILED_PRECONDITION as 409, unknown targets 404, invalid names 400 naming the field — and
 * rollback-model (200 with what it flipped back).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LatticeError } from '../../../../src/platform/errors.js';
import { assertError, type Harness, registerAll, unique } from './api-harness.js';

export function operationTests(get: () => Harness): void {
  test('reset-model: 202 with the operation, version map, mq_id, training data path and version', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const answer = await h.call({
      url: '/reset-model',
      body: { entity: b.entity, model_name: 'm1', frequency: 'FREQ_1D' },
    });
    assert.equal(answer.status, 202, answer.body);
    assert.deepEqual(
      { ...answer.json, operation_id: undefined },
      {
        operation_id: undefined,
        status: 'PENDING',
        created: true,
        variant_version_map: { organic: 1 },
        mq_id: 7,
        training_data_path: b.model.training_data_path,
        version: 1,
      },
    );
    const call = h.lifecycle.calls.at(-1);
    assert.equal(call?.method, 'resetModel');
    assert.equal(call?.options?.frequency, 'FREQ_1D');
    assert.equal(call?.options?.idempotencyKey, undefined);
    const operation = await h.call({ url: `/operations/${String(answer.json.operation_id)}` });
    assert.equal(operation.status, 200);
    assert.equal(operation.json.kind, 'RESET_MODEL');
  });

  test('reset-model with model_type DELTA: 202 with a DELTA_MODEL operation; another model_type is 400', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const answer = await h.call({
      url: '/reset-model',
      body: { entity: b.entity, model_name: 'm1', model_type: 'DELTA' },
    });
    assert.equal(answer.status, 202, answer.body);
    assert.equal(answer.json.mq_id, 7);
    assert.equal(answer.json.training_data_path, b.model.training_data_path);
    assert.equal(h.lifecycle.calls.at(-1)?.method, 'deltaModel');
    const operation = await h.call({ url: `/operations/${String(answer.json.operation_id)}` });
    assert.equal(operation.json.kind, 'DELTA_MODEL');
    assertError(
      await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'm1', model_type: 'FULL' } }),
      400,
      'INVALID_ARGUMENT',
      'model_type',
    );
  });

  test('reset-model: a reset while one runs is 409; unknown model 404; bad names and frequency 400', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    assert.equal(
      (await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'm1' } })).status,
      202,
    );
    const second = await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'm1' } });
    assertError(second, 409, 'FAILED_PRECONDITION');
    assertError(
      await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'absent' } }),
      404,
      'NOT_FOUND',
      'model_name',
    );
    assertError(
      await h.call({ url: '/reset-model', body: { entity: 'x; DROP TABLE vss_models', model_name: 'm1' } }),
      400,
      'INVALID_ARGUMENT',
      'entity',
    );
    assertError(
      await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'm1', frequency: 'DAILY' } }),
      400,
      'INVALID_ARGUMENT',
      'frequency',
    );
    assertError(
      await h.call({ url: '/reset-model', body: { entity: b.entity } }),
      400,
      'INVALID_ARGUMENT',
      'model_name',
    );
  });

  test('trigger-model-machine, promote-model, promote-variant: 202 with the operation id', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const variant = { entity: b.entity, model_name: 'm1', variant: 'organic' };
    const model = { entity: b.entity, model_name: 'm1' };
    for (const [url, body, kind] of [
      ['/trigger-model-machine', variant, 'TRIGGER_MODEL_MACHINE'],
      ['/promote-model', model, 'PROMOTE_MODEL'],
      ['/promote-variant', variant, 'PROMOTE_VARIANT'],
    ] as const) {
      const answer = await h.call({ url, body });
      assert.equal(answer.status, 202, `${url}: ${answer.body}`);
      assert.deepEqual(Object.keys(answer.json).sort(), ['created', 'operation_id', 'status']);
      const operation = await h.call({ url: `/operations/${String(answer.json.operation_id)}` });
      assert.equal(operation.json.kind, kind);
    }
  });

  test('operation routes: unknown variant 404, bad variant name 400, lifecycle refusal 409', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    assertError(
      await h.call({
        url: '/promote-variant',
        body: { entity: b.entity, model_name: 'm1', variant: 'absent' },
      }),
      404,
      'NOT_FOUND',
      'variant',
    );
    assertError(
      await h.call({
        url: '/trigger-model-machine',
        body: { entity: b.entity, model_name: 'm1', variant: 'a"b' },
      }),
      400,
      'INVALID_ARGUMENT',
      'variant',
    );
    assertError(
      await h.call({
        url: '/promote-model',
        body: { entity: b.entity, model_name: 'm1', variant: 'organic' },
      }),
      400,
      'INVALID_ARGUMENT',
      'variant',
    );
    h.lifecycle.failNext = new LatticeError('FAILED_PRECONDITION', 'variant organic is not INGESTED');
    const refused = await h.call({
      url: '/trigger-model-machine',
      body: { entity: b.entity, model_name: 'm1', variant: 'organic' },
    });
    assertError(refused, 409, 'FAILED_PRECONDITION');
    assert.equal(refused.error.message, 'variant organic is not INGESTED');
  });

  test('rollback-model: 200 with each variant flipped back; 409 with nothing to go back to; 404; 400', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const body = { entity: b.entity, model_name: 'm1' };
    const refused = await h.call({ url: '/rollback-model', body });
    assertError(refused, 409, 'FAILED_PRECONDITION', 'model_name');
    assert.match(refused.error.message, /no previous version to roll back to/);
    // Versions 1 then 2 served (as resets flip them), in the store.
    const key = { entity: b.entity, modelName: 'm1', variant: 'organic' };
    for (const version of [1, 2]) {
      await h.store.versions.create({ entity: b.entity, modelName: 'm1', version });
      await h.store.versions.transition(
        { entity: b.entity, modelName: 'm1', version },
        'INGESTING',
        'INGESTED',
      );
      const current = await h.store.variants.get(key);
      await h.store.variants.transition(key, current.state, 'INGESTING', { writeVersion: version });
      await h.store.variants.transition(key, 'INGESTING', 'INGESTED');
      await h.store.variants.transition(key, 'INGESTED', 'INDEXING');
      assert.ok((await h.store.flipReadVersion(key, version)).applied);
    }
    const listed = await h.call({ url: `/models/${b.entity}/m1` });
    const variant = (listed.json.variants as Record<string, unknown>[])[0]!;
    assert.equal(variant.previous_read_version, 1);
    assert.equal((variant.rollback as { available: boolean }).available, true);
    const answer = await h.call({ url: '/rollback-model', body });
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(answer.json, {
      entity: b.entity,
      model_name: 'm1',
      variants: [{ variant: 'organic', from_version: 2, to_version: 1 }],
      retired_versions: [2],
    });
    const after = await h.store.variants.get(key);
    assert.deepEqual([after.readVersion, after.writeVersion, after.previousReadVersion], [1, 1, null]);
    assertError(
      await h.call({ url: '/rollback-model', body: { entity: b.entity, model_name: 'absent' } }),
      404,
      'NOT_FOUND',
      'model_name',
    );
    assertError(
      await h.call({ url: '/rollback-model', body: { entity: b.entity } }),
      400,
      'INVALID_ARGUMENT',
      'model_name',
    );
  });

  test('POST /operations/{id}/retry: 202 for a FAILED operation, 409 otherwise, 404 unknown, 400 bad id', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const reset = await h.call({ url: '/reset-model', body: { entity: b.entity, model_name: 'm1' } });
    const id = String(reset.json.operation_id);
    assertError(await h.call({ method: 'POST', url: `/operations/${id}/retry` }), 409, 'FAILED_PRECONDITION');
    assert.ok(await h.store.operations.start(id, 'ingest'));
    assert.ok(
      await h.store.operations.fail(id, { status: 'RUNNING', step: 'ingest' }, 'job failed: disk full'),
    );
    const failed = await h.call({ url: `/operations/${id}` });
    assert.equal(failed.json.status, 'FAILED');
    assert.equal(failed.json.last_error, 'job failed: disk full');
    const retried = await h.call({ method: 'POST', url: `/operations/${id}/retry` });
    assert.equal(retried.status, 202, retried.body);
    assert.equal(retried.json.operation_id, id);
    assert.equal(retried.json.status, 'RUNNING');
    // A client that sends a JSON content type with no body is answered the same.
    assert.ok(await h.store.operations.fail(id, { status: 'RUNNING', step: 'ingest' }, 'failed again'));
    const emptyJson = await h.call({
      method: 'POST',
      url: `/operations/${id}/retry`,
      body: '',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(emptyJson.status, 202, emptyJson.body);
    assertError(await h.call({ method: 'POST', url: '/operations/absent-op/retry' }), 404, 'NOT_FOUND');
    assertError(
      await h.call({ method: 'POST', url: '/operations/a%20b/retry' }),
      400,
      'INVALID_ARGUMENT',
      'id',
    );
  });
}
