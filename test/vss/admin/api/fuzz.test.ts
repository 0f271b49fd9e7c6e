/**
 * Bad input, seeded (VSS_ADMIN_FUZZ_SEED, VSS_ADMIN_FUZZ_COUNT): 10,000 corrupted bodies across the
 * POST routes through `app.inject`. Every answer is a 4xx (never a 5xx) whose body is the documented
 * error body naming the field where one mutation decides it; random path segments are 4xx too; and
 * the app still answers /healthz and a valid registration afterwards. Runs on PGlite.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seededRandom } from '../../../../src/platform/random.js';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { bodies, type Harness, openHarness, registerAll } from './api-harness.js';
import { Fuzzer, type RouteShape } from './body-mutations.js';

const seed = Number(process.env.VSS_ADMIN_FUZZ_SEED ?? 20_251_115);
const count = Number(process.env.VSS_ADMIN_FUZZ_COUNT ?? 10_000);

let sql: SqlClient | undefined;
let harness: Harness | undefined;
before(async () => {
  sql = await createSqlClient({ kind: 'pglite' });
  harness = await openHarness(sql);
});
after(async () => {
  await harness?.close();
  await sql?.close();
});

function shapes(b: ReturnType<typeof bodies>): RouteShape[] {
  const model = { entity: b.entity, model_name: 'm1' };
  const variant = { ...model, variant: 'organic' };
  const names = { entity: 'name', model_name: 'name' } as const;
  return [
    {
      url: '/register-store',
      valid: b.store,
      kinds: {
        store_id: 'int1',
        entity: 'name',
        db_conf_id: 'text',
        embeddings_table: 'table',
        aggregator_table: 'table',
      },
      required: Object.keys(b.store),
    },
    {
      url: '/register-model',
      valid: b.model,
      kinds: {
        ...names,
        ingestion_column_mapping: 'json',
        embedding_store_enabled: 'bool',
        embedding_store_ttl: 'int0',
        mq_id: 'int0',
        model_config: 'json',
        store_id: 'int1',
        training_data_path: 'text',
      },
      required: Object.keys(b.model),
    },
    {
      url: '/register-variant',
      valid: { ...b.variant, cache: { memory_ttl: 60 } },
      kinds: {
        ...names,
        variant: 'variant',
        vss_filter: 'filter',
        vectordb_type: 'enum',
        vectordb_config: 'openJson',
        job_frequency: 'enum',
      },
      required: Object.keys(b.variant),
    },
    {
      url: '/reset-model',
      valid: { ...model, frequency: 'FREQ_1D' },
      kinds: { ...names, frequency: 'enum' },
      required: ['entity', 'model_name'],
    },
    {
      url: '/trigger-model-machine',
      valid: variant,
      kinds: { ...names, variant: 'variant' },
      required: Object.keys(variant),
    },
    { url: '/promote-model', valid: model, kinds: names, required: Object.keys(model) },
    {
      url: '/promote-variant',
      valid: variant,
      kinds: { ...names, variant: 'variant' },
      required: Object.keys(variant),
    },
  ];
}

test(`${count} corrupted bodies (seed ${seed}) are all 4xx naming the field, and the app stays up`, async () => {
  const h = harness!;
  const b = await registerAll(h, 1);
  const routes = shapes(b);
  const fuzzer = new Fuzzer(seededRandom(seed));
  const statuses = new Map<number, number>();
  const started = Date.now();
  for (let i = 0; i < count; i++) {
    const shape = fuzzer.pick(routes);
    const mutated = fuzzer.mutate(shape, fuzzer.int(10) < 7 ? 1 : 2 + fuzzer.int(2));
    const headers: Record<string, string> = {};
    if (mutated.contentType !== undefined) headers['content-type'] = mutated.contentType;
    const answer = await h.app.inject({ method: 'POST', url: shape.url, headers, payload: mutated.payload });
    const context = `#${i} ${shape.url} (${mutated.what}): ${answer.statusCode} ${answer.body.slice(0, 300)}`;
    statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
    assert.ok(answer.statusCode >= 400 && answer.statusCode < 500, context);
    // The documented error body for this route and status (the checker compiles the document's schema).
    const contentType = answer.headers['content-type'];
    h.checker.check(
      'POST',
      shape.url,
      answer.statusCode,
      typeof contentType === 'string' ? contentType : undefined,
      answer.body,
    );
    const error = JSON.parse(answer.body).error as { field?: string };
    if (answer.statusCode === 400) assert.ok(error.field, `a 400 names a field: ${context}`);
    if (mutated.field !== undefined && answer.statusCode === 400) {
      const expected = mutated.field.length > 64 ? mutated.field.slice(0, 64) : mutated.field;
      assert.ok(error.field?.startsWith(expected), `expected field ${mutated.field}: ${context}`);
    }
  }
  const elapsed = Date.now() - started;
  console.log(`# ${count} bodies in ${elapsed} ms: ${JSON.stringify(Object.fromEntries(statuses))}`);

  // Path parameters: random segments are refused or not found, never a fault.
  for (let i = 0; i < 500; i++) {
    const segment = encodeURIComponent(fuzzer.unicode(1 + fuzzer.int(80)));
    const url = fuzzer.pick([
      `/operations/${segment}`,
      `/operations/${segment}/retry`,
      `/models/${segment}/m1`,
      `/models/${b.entity}/${segment}`,
    ]);
    const method = url.endsWith('/retry') ? 'POST' : 'GET';
    const answer = await h.app.inject({ method, url });
    assert.ok(
      answer.statusCode >= 400 && answer.statusCode < 500,
      `${method} ${url}: ${answer.statusCode} ${answer.body}`,
    );
  }

  assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  assert.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  const fresh = bodies(2);
  const store = await h.app.inject({ method: 'POST', url: '/register-store', payload: fresh.store });
  assert.equal(store.statusCode, 201, store.body);
  assert.ok(
    !h.logs.some((line) => line.includes('"level":50')),
    `no request failed in the service: ${h.logs.join('\n')}`,
  );
});
