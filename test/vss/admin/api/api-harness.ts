/**
 * The admin API on a real store (PGlite or PostgreSQL) with the test lifecycle, driven through
 * `app.inject` (no ports). Every answer that `call` returns has been checked against the OpenAPI
 * document the app serves at /docs.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '../../../../src/platform/logging/index.js';
import { Metrics } from '../../../../src/platform/metrics/index.js';
import type { SqlClient } from '../../../../src/platform/sql/index.js';
import { type AdminApiOptions, buildAdminApi } from '../../../../src/vss/admin/api/index.js';
import { openVssStore, type VssStore } from '../../../../src/vss/store/index.js';
import { FakeLifecycle } from './fake-lifecycle.js';
import { OpenApiChecker, type OpenApiDocument } from './openapi-checker.js';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  /** The parsed JSON body (undefined when not JSON). */
  json: Record<string, unknown>;
  /** `json.error` of an error answer. */
  error: { code: string; message: string; field?: string };
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Harness {
  app: FastifyInstance;
  store: VssStore;
  sql: SqlClient;
  lifecycle: FakeLifecycle;
  metrics: Metrics;
  checker: OpenApiChecker;
  /** JSON log lines the app wrote (5xx causes). */
  logs: string[];
  call(options: CallOptions): Promise<Answer>;
  close(): Promise<void>;
}

export async function openHarness(
  sql: SqlClient,
  overrides: Partial<AdminApiOptions> = {},
  existingStore?: VssStore,
  /** Record into another harness's checker (its route coverage). */
  sharedChecker?: OpenApiChecker,
): Promise<Harness> {
  const store = existingStore ?? (await openVssStore(sql));
  const lifecycle = new FakeLifecycle(store);
  const metrics = new Metrics();
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = await buildAdminApi({
    store,
    lifecycle,
    sql,
    metrics,
    logger: createLogger('vss-admin-test', { destination }),
    ...overrides,
  });
  await app.ready();
  const checker = sharedChecker ?? new OpenApiChecker(app.swagger() as unknown as OpenApiDocument);
  const call = async (options: CallOptions): Promise<Answer> => {
    const method = options.method ?? (options.body === undefined ? 'GET' : 'POST');
    const headers: Record<string, string> = { ...options.headers };
    let payload: string | Buffer | undefined;
    if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) payload = options.body;
    else if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await app.inject({
      method,
      url: options.url,
      headers,
      ...(payload === undefined ? {} : { payload }),
    });
    const contentType = response.headers['content-type'];
    checker.check(
      method,
      options.url,
      response.statusCode,
      typeof contentType === 'string' ? contentType : undefined,
      response.body,
    );
    let json: Record<string, unknown> = {};
    if (typeof contentType === 'string' && contentType.startsWith('application/json'))
      json = JSON.parse(response.body);
    return {
      status: response.statusCode,
      headers: response.headers,
      body: response.body,
      json,
      error: (json.error ?? {}) as Answer['error'],
    };
  };
  return {
    app,
    store,
    sql,
    lifecycle,
    metrics,
    checker,
    logs,
    call,
    close: async () => {
      await app.close();
      await metrics.close();
    },
  };
}

/** Asserts an error answer: status, code and (when given) field. */
export function assertError(answer: Answer, status: number, code: string, field?: string): void {
  assert.equal(answer.status, status, answer.body);
  assert.equal(answer.error.code, code, answer.body);
  if (field !== undefined) assert.equal(answer.error.field, field, answer.body);
}

let sequence = 0;
/** A number unique in this process, for fresh entity, table and model names. */
export function unique(): number {
  sequence += 1;
  return sequence;
}

/** Valid bodies for a fresh entity `n`: its store, a 4-d COSINE model `m1` and a variant `organic`. */
export function bodies(n: number) {
  const entity = `entity${n}`;
  return {
    entity,
    store: {
      store_id: 1000 + n,
      entity,
      db_conf_id: 'default',
      embeddings_table: `emb_${n}`,
      aggregator_table: `agg_${n}`,
    },
    model: {
      entity,
      model_name: 'm1',
      ingestion_column_mapping: { id_column: 'id', embedding_column: 'emb', to_be_indexed_column: 'flag' },
      embedding_store_enabled: true,
      embedding_store_ttl: 604800,
      mq_id: 7,
      model_config: { distance_function: 'COSINE', vector_dimension: 4 },
      store_id: 1000 + n,
      training_data_path: `file:///data/${entity}/m1`,
    },
    variant: {
      entity,
      model_name: 'm1',
      variant: 'organic',
      vss_filter: { criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }] },
      vectordb_type: 'EMBEDDED',
      vectordb_config: { m: 16, ef_construction: 100 },
      job_frequency: 'FREQ_1D',
    },
  };
}

/** Registers the store, model and variant of `bodies(n)` through the API. */
export async function registerAll(harness: Harness, n: number): Promise<ReturnType<typeof bodies>> {
  const b = bodies(n);
  for (const [url, body] of [
    ['/register-store', b.store],
    ['/register-model', b.model],
    ['/register-variant', b.variant],
  ] as const) {
    const answer = await harness.call({ url, body });
    assert.equal(answer.status, 201, `${url}: ${answer.body}`);
  }
  return b;
}
