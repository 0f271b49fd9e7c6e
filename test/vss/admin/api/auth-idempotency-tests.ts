/**
 * API keys (401 with WWW-Authenticate for a missing or wrong key; probes and /metrics open) and
 * Idempotency-Key (replay, conflicts, concurrent duplicates run once, a 5xx releases the key, a
 * stale reservation is taken over, the lifecycle gets a key derived from the client's).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_IDEMPOTENCY_KEY } from '../../../../src/vss/admin/api/index.js';
import { assertError, bodies, type Harness, openHarness, registerAll, unique } from './api-harness.js';

const KEY = 'k'.repeat(24);
const OTHER_KEY = 'o'.repeat(32);

export function authTests(get: () => Harness): void {
  test('with API keys: a missing or wrong key is 401 with WWW-Authenticate; a right one passes', async () => {
    const base = get();
    const h = await openHarness(base.sql, { apiKeys: [KEY, OTHER_KEY] }, base.store, base.checker);
    try {
      const b = bodies(unique());
      const missing = await h.call({ url: '/register-store', body: b.store });
      assertError(missing, 401, 'UNAUTHENTICATED', 'Authorization');
      assert.match(String(missing.headers['www-authenticate']), /^Bearer/);
      for (const authorization of [
        `Bearer ${KEY}x`,
        `Bearer ${KEY.slice(1)}`,
        KEY,
        `Basic ${KEY}`,
        'Bearer ',
      ]) {
        const wrong = await h.call({ url: '/register-store', body: b.store, headers: { authorization } });
        assertError(wrong, 401, 'UNAUTHENTICATED', 'Authorization');
        assert.match(String(wrong.headers['www-authenticate']), /^Bearer/);
      }
      assertError(await h.call({ url: '/models' }), 401, 'UNAUTHENTICATED');
      assertError(await h.call({ url: '/stores' }), 401, 'UNAUTHENTICATED');
      assertError(await h.call({ url: '/operations/x' }), 401, 'UNAUTHENTICATED');
      assertError(await h.call({ url: '/no-such-route' }), 401, 'UNAUTHENTICATED');
      assert.equal((await h.app.inject({ method: 'GET', url: '/docs' })).statusCode, 401);
      const right = await h.call({
        url: '/register-store',
        body: b.store,
        headers: { authorization: `Bearer ${OTHER_KEY}` },
      });
      assert.equal(right.status, 201, right.body);
      const lowerScheme = await h.call({ url: '/models', headers: { authorization: `bearer ${KEY}` } });
      assert.equal(lowerScheme.status, 200);
      for (const url of ['/healthz', '/readyz', '/metrics']) {
        assert.equal((await h.call({ url })).status, 200, `${url} stays open`);
      }
    } finally {
      await h.close();
    }
  });

  test('without API keys every route is open', async () => {
    const h = get();
    assert.equal((await h.call({ url: '/models' })).status, 200);
  });
}

export function idempotencyTests(get: () => Harness): void {
  test('Idempotency-Key: the first answer is replayed; another body or path with the key is 409', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = `reset-${unique()}`;
    const body = { entity: b.entity, model_name: 'm1' };
    const first = await h.call({ url: '/reset-model', body, headers: { 'idempotency-key': key } });
    assert.equal(first.status, 202, first.body);
    const lifecycleKey = h.lifecycle.calls.at(-1)?.options?.idempotencyKey;
    assert.ok(lifecycleKey?.startsWith('http-'), 'the lifecycle gets a key derived from the client’s');
    const callsBefore = h.lifecycle.calls.length;
    const replay = await h.call({
      url: '/reset-model',
      body: { model_name: 'm1', entity: b.entity },
      headers: { 'idempotency-key': key },
    });
    assert.equal(replay.status, 202);
    assert.equal(replay.body, first.body);
    assert.equal(replay.headers['idempotency-replayed'], 'true');
    assert.equal(h.lifecycle.calls.length, callsBefore, 'a replay does not reach the lifecycle');
    const otherBody = await h.call({
      url: '/reset-model',
      body: { ...body, frequency: 'FREQ_1H' },
      headers: { 'idempotency-key': key },
    });
    assertError(otherBody, 409, 'ALREADY_EXISTS', 'Idempotency-Key');
    const otherPath = await h.call({ url: '/promote-model', body, headers: { 'idempotency-key': key } });
    assertError(otherPath, 409, 'ALREADY_EXISTS', 'Idempotency-Key');
  });

  test('Idempotency-Key: 4xx answers are replayed too; invalid bodies reserve nothing', async () => {
    const h = get();
    const b = bodies(unique());
    const key = `store-${unique()}`;
    const missingModel = await h.call({
      url: '/register-model',
      body: b.model,
      headers: { 'idempotency-key': key },
    });
    assertError(missingModel, 404, 'NOT_FOUND', 'store_id');
    const replay = await h.call({
      url: '/register-model',
      body: b.model,
      headers: { 'idempotency-key': key },
    });
    assert.equal(replay.status, 404);
    assert.equal(replay.body, missingModel.body);
    const invalidKey = `invalid-${unique()}`;
    assertError(
      await h.call({
        url: '/register-store',
        body: { ...b.store, store_id: 'one' },
        headers: { 'idempotency-key': invalidKey },
      }),
      400,
      'INVALID_ARGUMENT',
      'store_id',
    );
    const { rows } = await h.sql.query('SELECT 1 FROM vss_admin_requests WHERE idempotency_key = $1', [
      invalidKey,
    ]);
    assert.equal(rows.length, 0);
    const fixed = await h.call({
      url: '/register-store',
      body: b.store,
      headers: { 'idempotency-key': invalidKey },
    });
    assert.equal(fixed.status, 201, fixed.body);
  });

  test('Idempotency-Key: longer than 256 characters, empty or not ASCII is 400 naming the header', async () => {
    const h = get();
    const b = bodies(unique());
    for (const key of ['x'.repeat(MAX_IDEMPOTENCY_KEY + 1), '', 'clé']) {
      const answer = await h.call({
        url: '/register-store',
        body: b.store,
        headers: { 'idempotency-key': key },
      });
      assertError(answer, 400, 'INVALID_ARGUMENT', 'Idempotency-Key');
    }
    const longest = await h.call({
      url: '/register-store',
      body: b.store,
      headers: { 'idempotency-key': 'x'.repeat(MAX_IDEMPOTENCY_KEY) },
    });
    assert.equal(longest.status, 201, longest.body);
  });

  test('Idempotency-Key: concurrent duplicates run the operation once', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = `concurrent-${unique()}`;
    const before = h.lifecycle.calls.filter((c) => c.method === 'promoteModel').length;
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        h.call({
          url: '/promote-model',
          body: { entity: b.entity, model_name: 'm1' },
          headers: { 'idempotency-key': key },
        }),
      ),
    );
    const accepted = answers.filter((a) => a.status === 202);
    const inProgress = answers.filter((a) => a.status === 409);
    assert.equal(accepted.length + inProgress.length, answers.length, answers.map((a) => a.body).join('\n'));
    for (const a of inProgress) assertError(a, 409, 'ABORTED', 'Idempotency-Key');
    assert.ok(accepted.length >= 1);
    assert.equal(new Set(accepted.map((a) => a.json.operation_id)).size, 1);
    assert.equal(h.lifecycle.calls.filter((c) => c.method === 'promoteModel').length - before, 1);
    const later = await h.call({
      url: '/promote-model',
      body: { entity: b.entity, model_name: 'm1' },
      headers: { 'idempotency-key': key },
    });
    assert.equal(later.status, 202);
    assert.equal(later.json.operation_id, accepted[0]?.json.operation_id);
  });

  test('Idempotency-Key: a 5xx releases the key, so the retry runs', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = `fault-${unique()}`;
    const body = { entity: b.entity, model_name: 'm1', variant: 'organic' };
    h.lifecycle.failNext = new Error('transient');
    assertError(
      await h.call({ url: '/promote-variant', body, headers: { 'idempotency-key': key } }),
      500,
      'INTERNAL',
    );
    const retried = await h.call({ url: '/promote-variant', body, headers: { 'idempotency-key': key } });
    assert.equal(retried.status, 202, retried.body);
    assert.equal(retried.headers['idempotency-replayed'], undefined);
  });

  test('Idempotency-Key: a reservation left by a dead request is taken over after its lease', async () => {
    const base = get();
    const h = await openHarness(base.sql, { idempotencyLeaseMs: 1000 }, base.store);
    try {
      const b = await registerAll(h, unique());
      const key = `stale-${unique()}`;
      const body = { entity: b.entity, model_name: 'm1' };
      const first = await h.call({ url: '/promote-model', body, headers: { 'idempotency-key': key } });
      assert.equal(first.status, 202);
      // As if the process had died after the lifecycle call, before recording the answer.
      await h.sql.query(
        `UPDATE vss_admin_requests SET status_code = 0, response = '{}'::jsonb WHERE idempotency_key = $1`,
        [key],
      );
      assertError(
        await h.call({ url: '/promote-model', body, headers: { 'idempotency-key': key } }),
        409,
        'ABORTED',
      );
      await h.sql.query(
        `UPDATE vss_admin_requests SET created_at = now() - interval '1 hour' WHERE idempotency_key = $1`,
        [key],
      );
      const takenOver = await h.call({ url: '/promote-model', body, headers: { 'idempotency-key': key } });
      assert.equal(takenOver.status, 202, takenOver.body);
      assert.equal(
        takenOver.json.operation_id,
        first.json.operation_id,
        'the lifecycle returned the first operation',
      );
      assert.equal(takenOver.json.created, false);
    } finally {
      await h.close();
    }
  });
}
