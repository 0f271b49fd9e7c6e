import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OperationStatus } from '../../../src/vss/store/index.js';
import { type Context, newVariant, registerModel, rejectsWith } from './fixtures.js';

export function operationTests(context: Context): void {
  describe('operations', () => {
    test('an operation is recorded PENDING; its idempotency key returns it again', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const { operation, created } = await store.operations.create({
        kind: 'RESET_MODEL',
        entity,
        modelName: 'm1',
        payload: { frequency: 'FREQ_1D' },
        idempotencyKey: `reset-${entity}`,
      });
      assert.equal(created, true);
      assert.deepEqual(
        [operation.status, operation.step, operation.progress, operation.attempts, operation.variant],
        ['PENDING', null, 0, 0, null],
      );
      assert.deepEqual(operation.payload, { frequency: 'FREQ_1D' });
      assert.match(operation.operationId, /^[0-9a-f-]{36}$/);
      const again = await store.operations.create({
        kind: 'RESET_MODEL',
        entity,
        modelName: 'm1',
        payload: { frequency: 'FREQ_1D' },
        idempotencyKey: `reset-${entity}`,
      });
      assert.deepEqual(again, { operation, created: false });
      assert.deepEqual(await store.operations.get(operation.operationId), operation);
    });

    test('conflicts: a reused key, a second unfinished operation of a kind, unknown targets', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const first = await store.operations.create({
        kind: 'RESET_MODEL',
        entity,
        modelName: 'm1',
        idempotencyKey: `k-${entity}`,
      });
      await rejectsWith(
        store.operations.create({
          kind: 'PROMOTE_MODEL',
          entity,
          modelName: 'm1',
          idempotencyKey: `k-${entity}`,
        }),
        'ALREADY_EXISTS',
        'idempotency_key',
      );
      const busy = await rejectsWith(
        store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'm1' }),
        'FAILED_PRECONDITION',
      );
      assert.match(busy.message, new RegExp(first.operation.operationId));
      // other kinds and other variants are independent
      await store.operations.create({ kind: 'PROMOTE_MODEL', entity, modelName: 'm1' });
      await store.operations.create({
        kind: 'TRIGGER_MODEL_MACHINE',
        entity,
        modelName: 'm1',
        variant: 'organic',
      });
      await rejectsWith(
        store.operations.create({ kind: 'TRIGGER_MODEL_MACHINE', entity, modelName: 'm1' }),
        'INVALID_ARGUMENT',
        'variant',
      );
      await rejectsWith(
        store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'm1', variant: 'organic' }),
        'INVALID_ARGUMENT',
        'variant',
      );
      await rejectsWith(
        store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'absent' }),
        'NOT_FOUND',
        'model_name',
      );
      await rejectsWith(
        store.operations.create({ kind: 'PROMOTE_VARIANT', entity, modelName: 'm1', variant: 'absent' }),
        'NOT_FOUND',
        'variant',
      );
      await rejectsWith(store.operations.get('no-such-operation'), 'NOT_FOUND', 'operation_id');
      // once the first one finishes, the next reset is accepted
      assert.equal(await store.operations.start(first.operation.operationId, 'CREATE_VERSION'), true);
      assert.equal(await store.operations.succeed(first.operation.operationId, 'CREATE_VERSION'), true);
      assert.equal(
        (await store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'm1' })).created,
        true,
      );
    });

    test('steps advance by compare-and-set: of two workers taking a step, one wins', async () => {
      const { store } = context();
      const { entity } = await registerModel(store);
      const { operation } = await store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'm1' });
      const id = operation.operationId;
      const starts = await Promise.all([
        store.operations.start(id, 'CREATE_VERSION'),
        store.operations.start(id, 'CREATE_VERSION'),
      ]);
      assert.deepEqual(starts.sort(), [false, true]);
      const advances = await Promise.all([
        store.operations.advance(id, 'CREATE_VERSION', 'INGEST', 0.1),
        store.operations.advance(id, 'CREATE_VERSION', 'INGEST', 0.1),
      ]);
      assert.deepEqual(advances.sort(), [false, true]);
      assert.equal(await store.operations.reportProgress(id, 'INGEST', 0.5), true);
      assert.equal(await store.operations.reportProgress(id, 'CREATE_VERSION', 0.9), false, 'stale step');
      await rejectsWith(store.operations.reportProgress(id, 'INGEST', 1.5), 'INVALID_ARGUMENT', 'progress');
      await store.operations.setResult(id, { version: 2, variant_version_map: { organic: 2 } });
      const running = await store.operations.get(id);
      assert.deepEqual(
        [running.status, running.step, running.progress, running.attempts],
        ['RUNNING', 'INGEST', 0.5, 1],
      );
      assert.ok(running.startedAt instanceof Date);
      assert.deepEqual(running.result, { version: 2, variant_version_map: { organic: 2 } });
      assert.equal(await store.operations.succeed(id, 'INGEST', { version: 2 }), true);
      assert.equal(await store.operations.succeed(id, 'INGEST'), false);
      const done = await store.operations.get(id);
      assert.deepEqual([done.status, done.progress, done.result], ['SUCCEEDED', 1, { version: 2 }]);
      assert.ok(done.finishedAt instanceof Date);
      await rejectsWith(store.operations.start('absent-op', 'X'), 'NOT_FOUND', 'operation_id');
    });

    test('a failed operation keeps its step and error; retry resumes that step unless another is active', async () => {
      const { sql, store } = context();
      const { entity } = await registerModel(store);
      const { operation } = await store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'm1' });
      const id = operation.operationId;
      await store.operations.start(id, 'INGEST');
      assert.equal(
        await store.operations.fail(id, { status: 'RUNNING', step: 'INGEST' }, 'job runner: exit 1'),
        true,
      );
      const failed = await store.operations.get(id);
      assert.deepEqual(
        [failed.status, failed.step, failed.lastError],
        ['FAILED', 'INGEST', 'job runner: exit 1'],
      );
      assert.deepEqual(
        (await store.operations.list({ entity, unfinished: true })).map((o) => o.operationId),
        [],
      );
      const other = await store.operations.create({ kind: 'RESET_MODEL', entity, modelName: 'm1' });
      await rejectsWith(store.operations.retry(id), 'FAILED_PRECONDITION');
      await store.operations.fail(
        other.operation.operationId,
        { status: 'PENDING', step: null },
        'superseded',
      );
      assert.equal(await store.operations.retry(id), true);
      assert.equal(await store.operations.retry(id), false);
      const retried = await store.operations.get(id);
      assert.deepEqual(
        [retried.status, retried.step, retried.attempts, retried.finishedAt],
        ['RUNNING', 'INGEST', 2, null],
      );
      assert.deepEqual(
        (await store.operations.list({ entity, modelName: 'm1', unfinished: true })).map(
          (o) => o.operationId,
        ),
        [id],
      );
      assert.equal((await store.operations.list({ entity })).length, 2);
      for (const [status, extra] of [
        ['DONE', ''],
        ['FAILED', ', last_error = NULL'],
        ['SUCCEEDED', ', finished_at = NULL'],
      ] as [OperationStatus | 'DONE', string][]) {
        await rejectsWith(
          sql.query(`UPDATE vss_operations SET status = '${status}'${extra} WHERE operation_id = $1`, [id]),
          'FAILED_PRECONDITION',
        );
      }
    });
  });
}
