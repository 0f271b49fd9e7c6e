/**
 * register-store, register-model, register-variant: created, the same body again, a different body
 * under an existing name, JSON-holding fields as strings and as objects, and every validation error
 * naming its field, including identifiers that become table or column names.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, bodies, type Harness, registerAll, unique } from './api-harness.js';

export function registrationTests(get: () => Harness): void {
  test('register-store: 201 with the store, 200 with the same store for the same body', async () => {
    const h = get();
    const b = bodies(unique());
    const first = await h.call({ url: '/register-store', body: b.store });
    assert.equal(first.status, 201, first.body);
    assert.equal(first.json.embeddings_table, b.store.embeddings_table);
    assert.match(String(first.json.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const again = await h.call({ url: '/register-store', body: { ...b.store } });
    assert.equal(again.status, 200, again.body);
    assert.deepEqual(again.json, first.json);
  });

  test('register-store: a different body under an existing id or entity is 409 naming what differs', async () => {
    const h = get();
    const b = bodies(unique());
    assert.equal((await h.call({ url: '/register-store', body: b.store })).status, 201);
    const otherConf = await h.call({ url: '/register-store', body: { ...b.store, db_conf_id: 'other' } });
    assertError(otherConf, 409, 'ALREADY_EXISTS', 'db_conf_id');
    const otherTables = await h.call({
      url: '/register-store',
      body: {
        ...b.store,
        embeddings_table: `${b.store.embeddings_table}_x`,
        aggregator_table: 'agg_other_x',
      },
    });
    assertError(otherTables, 409, 'ALREADY_EXISTS', 'embeddings_table');
    assert.match(otherTables.error.message, /embeddings_table, aggregator_table/);
    const sameEntityNewId = await h.call({ url: '/register-store', body: { ...b.store, store_id: 999_999 } });
    assertError(sameEntityNewId, 409, 'ALREADY_EXISTS', 'store_id');
    const c = bodies(unique());
    const tableTaken = await h.call({
      url: '/register-store',
      body: { ...c.store, embeddings_table: b.store.embeddings_table },
    });
    assertError(tableTaken, 409, 'ALREADY_EXISTS', 'embeddings_table');
  });

  test('register-store: identifiers that become table names are validated (injection attempts are 400)', async () => {
    const h = get();
    const b = bodies(unique());
    const cases: Array<[string, unknown, string]> = [
      ['embeddings_table', 'x; DROP TABLE vss_models', 'embeddings_table'],
      ['embeddings_table', 'a"b', 'embeddings_table'],
      ['aggregator_table', 'Agg', 'aggregator_table'],
      ['embeddings_table', 'vss_models', 'embeddings_table'],
      ['aggregator_table', 'pg_class', 'aggregator_table'],
      ['entity', 'x; DROP TABLE vss_models', 'entity'],
      ['entity', 'a"b', 'entity'],
      ['entity', '../etc', 'entity'],
      ['aggregator_table', b.store.embeddings_table, 'aggregator_table'],
      ['store_id', 0, 'store_id'],
      ['store_id', '1', 'store_id'],
      ['store_id', 1.5, 'store_id'],
      ['db_conf_id', '', 'db_conf_id'],
    ];
    for (const [field, value, named] of cases) {
      const answer = await h.call({ url: '/register-store', body: { ...b.store, [field]: value } });
      assertError(answer, 400, 'INVALID_ARGUMENT', named);
      assert.ok(answer.error.message.length < 300, answer.error.message);
    }
    const { rows } = await h.sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'vss_models' AND table_schema = current_schema()",
    );
    assert.equal(rows[0]?.n, 1);
    assert.equal(await h.store.stores.findByEntity(b.entity), undefined);
  });

  test('register-model: JSON fields as strings or objects are the same registration', async () => {
    const h = get();
    const b = bodies(unique());
    assert.equal((await h.call({ url: '/register-store', body: b.store })).status, 201);
    const asStrings = {
      ...b.model,
      ingestion_column_mapping: JSON.stringify({
        id_column: 'id',
        embedding_column: 'emb',
        to_be_indexed_column: 'flag',
        search_embedding_column: 'search',
      }),
      model_config: JSON.stringify(b.model.model_config),
    };
    const first = await h.call({ url: '/register-model', body: asStrings });
    assert.equal(first.status, 201, first.body);
    assert.deepEqual(first.json.model_config, { distance_function: 'COSINE', vector_dimension: 4 });
    assert.equal(
      (first.json.ingestion_column_mapping as Record<string, string>).search_embedding_column,
      'search',
    );
    assert.equal(first.json.state, 'REGISTERED');
    assert.equal(first.json.cluster, 'experiment');
    const asObjects = {
      ...b.model,
      ingestion_column_mapping: JSON.parse(asStrings.ingestion_column_mapping),
      model_config: { vector_dimension: 4, distance_function: 'COSINE' },
    };
    const again = await h.call({ url: '/register-model', body: asObjects });
    assert.equal(again.status, 200, again.body);
    assert.deepEqual(again.json, first.json);
  });

  test('register-model: a different body under an existing name is 409 naming the fields', async () => {
    const h = get();
    const b = bodies(unique());
    await h.call({ url: '/register-store', body: b.store });
    assert.equal((await h.call({ url: '/register-model', body: b.model })).status, 201);
    const changed = await h.call({
      url: '/register-model',
      body: { ...b.model, model_config: { distance_function: 'DOT', vector_dimension: 4 }, mq_id: 8 },
    });
    assertError(changed, 409, 'ALREADY_EXISTS', 'mq_id');
    assert.match(changed.error.message, /mq_id, model_config/);
  });

  test('register-model: validation errors name the field', async () => {
    const h = get();
    const b = bodies(unique());
    await h.call({ url: '/register-store', body: b.store });
    const { model_name: _dropped, ...withoutName } = b.model;
    const cases: Array<[unknown, string]> = [
      [withoutName, 'model_name'],
      [{ ...b.model, surprise: 1 }, 'surprise'],
      [
        { ...b.model, model_config: { distance_function: 'COSINE', vector_dimension: 70_000 } },
        'model_config.vector_dimension',
      ],
      [
        { ...b.model, model_config: { distance_function: 'MANHATTAN', vector_dimension: 4 } },
        'model_config.distance_function',
      ],
      [{ ...b.model, model_config: '{"distance_function": "COSINE",' }, 'model_config'],
      [{ ...b.model, model_config: '[1, 2]' }, 'model_config'],
      [{ ...b.model, model_config: 7 }, 'model_config'],
      [{ ...b.model, model_config: '{"distance_function":"COSINE"}' }, 'model_config.vector_dimension'],
      [
        { ...b.model, ingestion_column_mapping: { id_column: 'id', embedding_column: 'e' } },
        'ingestion_column_mapping.to_be_indexed_column',
      ],
      [{ ...b.model, embedding_store_enabled: 'yes' }, 'embedding_store_enabled'],
      [{ ...b.model, embedding_store_ttl: -1 }, 'embedding_store_ttl'],
      [{ ...b.model, model_name: 'x; DROP TABLE vss_models' }, 'model_name'],
      [{ ...b.model, model_name: 'a"b' }, 'model_name'],
      [{ ...b.model, training_data_path: '' }, 'training_data_path'],
    ];
    for (const [body, field] of cases) {
      assertError(await h.call({ url: '/register-model', body }), 400, 'INVALID_ARGUMENT', field);
    }
    const missingStore = await h.call({ url: '/register-model', body: { ...b.model, store_id: 888_888 } });
    assertError(missingStore, 404, 'NOT_FOUND', 'store_id');
  });

  test('register-variant: 201, the same body again 200, a different body 409, JSON fields as strings', async () => {
    const h = get();
    const b = await registerAllButVariant(h);
    const asStrings = {
      ...b.variant,
      vss_filter: JSON.stringify(b.variant.vss_filter),
      vectordb_config: JSON.stringify(b.variant.vectordb_config),
    };
    const first = await h.call({ url: '/register-variant', body: asStrings });
    assert.equal(first.status, 201, first.body);
    assert.deepEqual(first.json.vss_filter, b.variant.vss_filter);
    assert.deepEqual(first.json.vectordb_config, b.variant.vectordb_config);
    assert.equal(first.json.state, 'REGISTERED');
    assert.equal(first.json.read_version, null);
    assert.equal(first.json.fill_operation_id, undefined);
    const again = await h.call({ url: '/register-variant', body: b.variant });
    assert.equal(again.status, 200, again.body);
    assert.deepEqual(again.json, first.json);
    const changed = await h.call({
      url: '/register-variant',
      body: { ...b.variant, vss_filter: { criteria: [] }, job_frequency: 'FREQ_1H' },
    });
    assertError(changed, 409, 'ALREADY_EXISTS', 'vss_filter');
    assert.match(changed.error.message, /vss_filter, job_frequency/);
    const cacheChanged = await h.call({
      url: '/register-variant',
      body: { ...b.variant, cache: { memory_ttl: 5 } },
    });
    assertError(cacheChanged, 409, 'ALREADY_EXISTS', 'cache');
  });

  test('update-variant: ef_search changes live and shows on the variant; the registration stays as it was', async () => {
    const h = get();
    const b = await registerAll(h, unique());
    const key = { entity: b.entity, model_name: 'm1', variant: 'organic' };
    const registered = await h.call({ method: 'GET', url: `/models/${b.entity}/m1` });
    assert.equal(registered.status, 200, registered.body);
    const listed = (registered.json.variants as { variant: string; ef_search: number }[])[0]!;
    assert.equal(listed.ef_search, 96, 'the default width before any change');
    const wider = await h.call({ url: '/update-variant', body: { ...key, ef_search: 400 } });
    assert.equal(wider.status, 200, wider.body);
    assert.equal(wider.json.ef_search, 400);
    assert.deepEqual(wider.json.vectordb_config, b.variant.vectordb_config);
    const after = await h.call({ method: 'GET', url: `/models/${b.entity}/m1` });
    assert.equal((after.json.variants as { ef_search: number }[])[0]!.ef_search, 400);
    // The same registration body again is still a repeat, not a conflict.
    assert.equal((await h.call({ url: '/register-variant', body: b.variant })).status, 200);
    const back = await h.call({ url: '/update-variant', body: { ...key, ef_search: null } });
    assert.equal(back.status, 200, back.body);
    assert.equal(back.json.ef_search, 96);

    assertError(
      await h.call({ url: '/update-variant', body: { ...key, variant: 'nope', ef_search: 50 } }),
      404,
      'NOT_FOUND',
      'variant',
    );
    for (const ef_search of [0, 4097, 1.5, '64']) {
      assertError(
        await h.call({ url: '/update-variant', body: { ...key, ef_search } }),
        400,
        'INVALID_ARGUMENT',
        'ef_search',
      );
    }
    assertError(
      await h.call({ url: '/update-variant', body: { ...key, ef_search: 64, job_frequency: 'FREQ_1H' } }),
      400,
      'INVALID_ARGUMENT',
      'job_frequency',
    );
  });

  test('register-variant: names and filter columns that become SQL identifiers are validated', async () => {
    const h = get();
    const b = await registerAllButVariant(h);
    const criteria = (column: unknown) => ({ criteria: [{ column_name: column, filter_value: 'x' }] });
    const cases: Array<[unknown, string]> = [
      [{ ...b.variant, variant: 'x; DROP TABLE vss_models' }, 'variant'],
      [{ ...b.variant, variant: 'a"b' }, 'variant'],
      [{ ...b.variant, variant: 'Organic' }, 'variant'],
      [{ ...b.variant, vss_filter: criteria('a"b') }, 'vss_filter.criteria[0].column_name'],
      [
        { ...b.variant, vss_filter: criteria('x; DROP TABLE vss_models') },
        'vss_filter.criteria[0].column_name',
      ],
      [{ ...b.variant, vss_filter: JSON.stringify(criteria('id')) }, 'vss_filter.criteria[0].column_name'],
      [
        { ...b.variant, vss_filter: { criteria: [{ column_name: 'a', op: 'LIKE' }] } },
        'vss_filter.criteria[0].op',
      ],
      [
        { ...b.variant, vss_filter: { criteria: [{ column_name: 'a', op: 'BETWEEN', values: ['1'] }] } },
        'vss_filter.criteria',
      ],
      [{ ...b.variant, vss_filter: { rules: [] } }, 'vss_filter.rules'],
      [{ ...b.variant, vectordb_type: 'MILVUS' }, 'vectordb_type'],
      [{ ...b.variant, job_frequency: 'FREQ_2H' }, 'job_frequency'],
      [{ ...b.variant, vectordb_config: 'not json' }, 'vectordb_config'],
      [{ ...b.variant, cache: { ttl_jitter: 2 } }, 'cache.ttl_jitter'],
    ];
    for (const [body, field] of cases) {
      const answer = await h.call({ url: '/register-variant', body });
      assert.equal(answer.status, 400, answer.body);
      assert.ok(answer.error.field?.startsWith(field), `${field}: ${answer.body}`);
    }
    assertError(
      await h.call({ url: '/register-variant', body: { ...b.variant, model_name: 'nope' } }),
      404,
      'NOT_FOUND',
      'model_name',
    );
  });

  test('register-variant on a model with data starts a fill, once, and answers its operation id', async () => {
    const h = get();
    const b = await registerAllButVariant(h);
    h.lifecycle.modelsWithData.add(`${b.entity}/m1`);
    const first = await h.call({ url: '/register-variant', body: b.variant });
    assert.equal(first.status, 201, first.body);
    const fill = String(first.json.fill_operation_id);
    assert.ok(fill.length > 0);
    const operation = await h.call({ url: `/operations/${fill}` });
    assert.equal(operation.json.kind, 'FILL_VARIANT');
    assert.equal(operation.json.variant, 'organic');
    const again = await h.call({ url: '/register-variant', body: b.variant });
    assert.equal(again.status, 200);
    assert.equal(again.json.fill_operation_id, fill, 'a repeated registration returns the first fill');
    const calls = h.lifecycle.calls.filter(
      (c) => c.method === 'variantRegistered' && typeof c.key === 'object' && c.key.entity === b.entity,
    );
    assert.equal(calls.length, 2);
    assert.ok(calls[0]?.options?.idempotencyKey);
    assert.equal(calls[0]?.options?.idempotencyKey, calls[1]?.options?.idempotencyKey);
  });

  test('registering everything of a fresh entity works end to end', async () => {
    const b = await registerAll(get(), unique());
    assert.ok(b.entity);
  });
}

async function registerAllButVariant(h: Harness) {
  const b = bodies(unique());
  assert.equal((await h.call({ url: '/register-store', body: b.store })).status, 201);
  assert.equal((await h.call({ url: '/register-model', body: b.model })).status, 201);
  return b;
}
