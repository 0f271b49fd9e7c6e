/**
 * `lattice vss register-* | reset | trigger | promote | models` as clients of the admin HTTP API:
 * the bodies they send (file, YAML, flags, flags over the file, @file JSON fields), the headers
 * (Authorization, Idempotency-Key), the API's errors and an unreachable API as exit 1 with the
 * message, and the usage (--help per subcommand, unknown options exit 2). The API is the stand-in of
 * admin-api-stand-in.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SUBCOMMAND_SPECS } from '../../../src/cli/vss-admin/subcommand-specs.js';
import { closedPort } from '../../support/closed-port.js';
import { AdminApiStandIn } from './admin-api-stand-in.js';
import { runCli } from './cli-harness.js';

const api = new AdminApiStandIn();
let dir = '';

before(async () => {
  await api.start();
  dir = await mkdtemp(join(tmpdir(), 'lattice-vss-admin-'));
});

after(async () => {
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

const lastBody = (url: string): unknown => api.requestsTo(url).at(-1)?.body;

describe('request bodies', () => {
  test('register-store from flags: kebab-case flags to snake_case fields, integers as numbers', async () => {
    const result = await runCli(
      'register-store',
      [
        '--store-id',
        '1',
        '--entity',
        'catalog',
        '--db-conf-id',
        'main',
        '--embeddings-table=catalog_embeddings',
        '--aggregator-table',
        'catalog_attributes',
      ],
      { url: api.url },
    );
    assert.equal(result.stderr, '');
    assert.equal(result.code, 0);
    assert.deepEqual(lastBody('/register-store'), {
      store_id: 1,
      entity: 'catalog',
      db_conf_id: 'main',
      embeddings_table: 'catalog_embeddings',
      aggregator_table: 'catalog_attributes',
    });
    assert.match(
      result.stdout,
      /^Store 1 registered for entity catalog: db_conf_id main, embeddings table catalog_embeddings/,
    );
  });

  test('register-model from a JSON file, as written (JSON-holding fields as strings stay strings)', async () => {
    const body = {
      entity: 'catalog',
      model_name: 'products',
      ingestion_column_mapping: '{"id_column":"id","embedding_column":"vec","to_be_indexed_column":"live"}',
      embedding_store_enabled: true,
      embedding_store_ttl: 0,
      mq_id: 1,
      model_config: '{"distance_function":"COSINE","vector_dimension":64}',
      store_id: 1,
      training_data_path: '/data/catalog',
    };
    const result = await runCli(
      'register-model',
      ['--file', await file('model.json', JSON.stringify(body))],
      {
        url: api.url,
      },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(lastBody('/register-model'), body);
    assert.match(
      result.stdout,
      /Model catalog\/products registered: state REGISTERED, cluster experiment, vectors 64-d COSINE/,
    );
  });

  test('register-model from a YAML file, with flags overriding its fields', async () => {
    const yaml = [
      'entity: catalog',
      'model_name: products',
      'embedding_store_enabled: true',
      'mq_id: 1',
      'model_config:',
      '  distance_function: DOT',
      '  vector_dimension: 32',
      'training_data_path: /data/old',
      'extra_field: kept as written',
    ].join('\n');
    const result = await runCli(
      'register-model',
      [
        '--file',
        await file('model.yaml', yaml),
        '--training-data-path',
        '/data/new',
        '--no-embedding-store-enabled',
        '--mq-id',
        '7',
        '--model-config',
        '{"distance_function":"COSINE","vector_dimension":64}',
      ],
      { url: api.url },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(lastBody('/register-model'), {
      entity: 'catalog',
      model_name: 'products',
      embedding_store_enabled: false,
      mq_id: 7,
      model_config: { distance_function: 'COSINE', vector_dimension: 64 },
      training_data_path: '/data/new',
      extra_field: 'kept as written',
    });
  });

  test('register-variant with @file JSON fields (a JSON file and a YAML file)', async () => {
    const filter = { criteria: [{ column_name: 'kind', filter_value: 'organic', default_value: 'organic' }] };
    const result = await runCli(
      'register-variant',
      [
        '--entity',
        'catalog',
        '--model',
        'products',
        '--variant',
        'organic',
        '--vss-filter',
        `@${await file('filter.json', JSON.stringify(filter))}`,
        '--vectordb-type',
        'EMBEDDED',
        '--vectordb-config',
        `@${await file('vectordb.yaml', 'hnsw:\n  m: 16\n')}`,
        '--job-frequency',
        'FREQ_1D',
      ],
      { url: api.url },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(lastBody('/register-variant'), {
      entity: 'catalog',
      model_name: 'products',
      variant: 'organic',
      vss_filter: filter,
      vectordb_type: 'EMBEDDED',
      vectordb_config: { hnsw: { m: 16 } },
      job_frequency: 'FREQ_1D',
    });
    assert.match(result.stdout, /Variant catalog\/products\/organic registered: state REGISTERED/);
  });

  test('register-variant on a model with data names the fill operation; --wait follows it', async () => {
    const args = [
      '--entity',
      'catalog',
      '--model',
      'with-data',
      '--variant',
      'ads',
      '--vectordb-config',
      '{}',
    ];
    const plain = await runCli('register-variant', args, { url: api.url });
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /Filling it from the embedding store: operation op-\d+/);
    assert.match(plain.stdout, /lattice vss status op-\d+ --wait/);
    const waited = await runCli('register-variant', [...args, '--wait'], { url: api.url });
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stdout, /operation op-\d+ \(FILL_VARIANT\) SUCCEEDED/);
  });

  test('promote goes to promote-variant with --variant and to promote-model without', async () => {
    const variant = await runCli(
      'promote',
      ['--entity', 'catalog', '--model', 'products', '--variant', 'ads', '--no-wait'],
      {
        url: api.url,
      },
    );
    assert.equal(variant.code, 0, variant.stderr);
    assert.deepEqual(lastBody('/promote-variant'), {
      entity: 'catalog',
      model_name: 'products',
      variant: 'ads',
    });
    const model = await runCli('promote', ['--entity', 'catalog', '--model', 'products', '--no-wait'], {
      url: api.url,
    });
    assert.equal(model.code, 0, model.stderr);
    assert.deepEqual(lastBody('/promote-model'), { entity: 'catalog', model_name: 'products' });
  });

  test('--json prints the API answer as it came', async () => {
    const result = await runCli('register-store', ['--store-id', '3', '--entity', 'ads', '--json'], {
      url: api.url,
    });
    assert.equal(result.code, 0, result.stderr);
    const answer = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(answer.store_id, 3);
    assert.equal(typeof answer.created_at, 'string');
  });
});

describe('headers', () => {
  test('--idempotency-key is sent as Idempotency-Key', async () => {
    const result = await runCli(
      'reset',
      ['--entity', 'catalog', '--model', 'products', '--idempotency-key', 'nightly-2024-06-01', '--no-wait'],
      { url: api.url },
    );
    assert.equal(result.code, 0, result.stderr);
    const request = api.requestsTo('/reset-model').at(-1)!;
    assert.equal(request.headers['idempotency-key'], 'nightly-2024-06-01');
    assert.deepEqual(request.body, { entity: 'catalog', model_name: 'products' });
  });

  test('the API key is sent as Authorization: Bearer; a wrong one is the API error 401', async () => {
    // Settings take keys of 16 characters or more.
    const key = 'secret-key-0123456789';
    api.apiKey = key;
    try {
      const fromSettings = await runCli('models', [], { url: api.url, apiKey: key });
      assert.equal(fromSettings.code, 0, fromSettings.stderr);
      assert.equal(api.requestsTo('/models').at(-1)!.headers.authorization, `Bearer ${key}`);

      const wrong = await runCli('models', ['--api-key', 'nope'], { url: api.url, apiKey: key });
      assert.equal(wrong.code, 1);
      assert.equal(api.requestsTo('/models').at(-1)!.headers.authorization, 'Bearer nope');
      assert.equal(
        wrong.stderr,
        'lattice: a valid API key is required (Authorization: Bearer) (UNAUTHENTICATED)\n',
      );
    } finally {
      api.apiKey = undefined;
    }
  });
});

describe('errors', () => {
  test('an API validation error: exit 1 with its message, code and field', async () => {
    const result = await runCli(
      'register-store',
      ['--entity', 'catalog', '--file', await file('s.json', '{"store_id":"x"}')],
      {
        url: api.url,
      },
    );
    assert.equal(result.code, 1);
    assert.equal(result.stderr, 'lattice: store_id must be an integer (INVALID_ARGUMENT, field store_id)\n');
    assert.equal(result.stdout, '');
  });

  test('a conflict (409): exit 1 with the message', async () => {
    const result = await runCli('reset', ['--entity', 'catalog', '--model', 'busy'], { url: api.url });
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'lattice: a reset of catalog/busy is running (operation op-0) (FAILED_PRECONDITION)\n',
    );
  });

  test('not found (404) for an unknown operation and model', async () => {
    const status = await runCli('status', ['op-unknown'], { url: api.url });
    assert.equal(status.code, 1);
    assert.equal(
      status.stderr,
      'lattice: operation op-unknown does not exist (NOT_FOUND, field operation_id)\n',
    );
    const model = await runCli('models', ['--entity', 'catalog', '--model', 'nope'], { url: api.url });
    assert.equal(model.code, 1);
    assert.match(model.stderr, /^lattice: model catalog\/nope does not exist \(NOT_FOUND\)/);
  });

  test('an unreachable API: exit 1 naming the URL and how to start the API', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const result = await runCli('models', [], { url });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      new RegExp(`^lattice: the vss admin API is not reachable at ${url} \\(.*ECONNREFUSED`),
    );
    assert.match(result.stderr, /"lattice vss"/);
    assert.match(result.stderr, /"lattice up"/);
  });

  test('a flag value of the wrong type, bad JSON, a missing @file: exit 2 naming the flag', async () => {
    const integer = await runCli('register-store', ['--store-id', 'one'], { url: api.url });
    assert.equal(integer.code, 2);
    assert.match(
      integer.stderr,
      /^lattice: option '--store-id <N>' argument 'one' is invalid\. It must be an integer\./,
    );
    const json = await runCli('register-model', ['--model-config', '{vector_dimension: 64'], {
      url: api.url,
    });
    assert.equal(json.code, 2);
    assert.match(json.stderr, /^lattice: --model-config must be JSON text or @file/);
    const missing = await runCli('register-model', ['--model-config', `@${join(dir, 'absent.json')}`], {
      url: api.url,
    });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^lattice: --model-config: cannot read .*absent\.json/);
    const notObject = await runCli('register-store', ['--file', await file('list.json', '[1]')], {
      url: api.url,
    });
    assert.equal(notObject.code, 2);
    assert.match(notObject.stderr, /must hold one JSON or YAML object/);
  });
});

describe('usage', () => {
  test('--help prints each subcommand’s own usage and exits 0', async () => {
    const subcommands = SUBCOMMAND_SPECS.map((spec) => spec.name);
    assert.deepEqual([...subcommands].sort(), [
      'models',
      'promote',
      'register-model',
      'register-store',
      'register-variant',
      'reset',
      'retry',
      'status',
      'trigger',
    ]);
    for (const subcommand of subcommands) {
      const result = await runCli(subcommand, ['--help'], { url: api.url });
      assert.equal(result.code, 0, subcommand);
      assert.match(result.stdout, new RegExp(`^Usage: lattice vss ${subcommand}\\b`), subcommand);
      assert.match(result.stdout, /--address <ADDRESS>/, subcommand);
      assert.doesNotMatch(result.stdout, /--url/, subcommand);
    }
    const model = await runCli('register-model', ['-h'], { url: api.url });
    for (const flag of [
      '--model-config <JSON|@FILE>',
      '--embedding-store-ttl <N>',
      '--embedding-store-enabled',
      '--no-embedding-store-enabled',
      '--file <FILE>',
    ]) {
      assert.ok(model.stdout.includes(flag), flag);
    }
    const reset = await runCli('reset', ['--help'], { url: api.url });
    assert.match(
      reset.stdout,
      /--wait +wait for the operation with a progress bar \(the default\)\n +--no-wait +return once/,
    );
  });

  test('an unknown flag: exit 2 naming it, with the usage, and nothing is sent', async () => {
    const before = api.requests.length;
    const result = await runCli('reset', ['--entity', 'catalog', '--modle', 'products'], { url: api.url });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^lattice: unknown option '--modle'\n\nUsage: lattice vss reset/);
    const short = await runCli('models', ['-x'], { url: api.url });
    assert.equal(short.code, 2);
    assert.match(short.stderr, /^lattice: unknown option '-x'/);
    assert.equal(api.requests.length, before);
  });

  test('positional arguments: status needs the operation id; extra ones are refused', async () => {
    const missing = await runCli('status', [], { url: api.url });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^lattice: missing required argument 'operation-id'/);
    const extra = await runCli('reset', ['catalog'], { url: api.url });
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /^lattice: too many arguments for 'reset'/);
    const half = await runCli('models', ['--entity', 'catalog'], { url: api.url });
    assert.equal(half.code, 2);
    assert.match(half.stderr, /--entity and --model go together/);
    const address = await runCli('models', ['--address', 'localhost'], { url: api.url });
    assert.equal(address.code, 2);
    assert.match(
      address.stderr,
      /^lattice: option '--address <ADDRESS>' argument 'localhost' is invalid\. It must be HOST:PORT or an http:\/\/ or https:\/\/ URL\./,
    );
  });
});

describe('models', () => {
  test('a table of every model’s variants, and one model with its versions and operations', async () => {
    const all = await runCli('models', [], { url: api.url });
    assert.equal(all.code, 0, all.stderr);
    const lines = all.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ENTITY\s+MODEL\s+VARIANT\s+STATE\s+CLUSTER\s+READ\s+WRITE\s+LAST ERROR$/);
    assert.match(lines[1]!, /^catalog\s+products\s+organic\s+READY\s+experiment\s+2\s+2\s+-$/);
    assert.match(lines[2]!, /^catalog\s+products\s+ads\s+FAILED\s+production\s+1\s+2\s+indexing timed out$/);
    const one = await runCli('models', ['--entity', 'catalog', '--model', 'products'], { url: api.url });
    assert.equal(one.code, 0, one.stderr);
    assert.equal(api.requests.at(-1)!.url, '/models/catalog/products');
    assert.match(
      one.stdout,
      /Versions of catalog\/products:\nVERSION\s+STATUS\s+INGESTED\s+FAILED\s+INDEXED\n2\s+SERVING\s+4800\s+0\s+4790/,
    );
    assert.match(
      one.stdout,
      /Recent operations of catalog\/products:\n.*\nop-9\s+RESET_MODEL\s+-\s+SUCCEEDED\s+DONE\s+100%/,
    );
    const json = await runCli('models', ['--json'], { url: api.url });
    assert.equal((JSON.parse(json.stdout) as { models: unknown[] }).models.length, 1);
  });
});
