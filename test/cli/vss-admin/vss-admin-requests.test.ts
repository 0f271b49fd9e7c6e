/**
 * `lattice vss register-* | reset | trigger | promote | models` as clients of the admin HTTP API:
 * the bodies they send (file, YAML, flags, flags over the file, @file JSON fields), the headers
 * (Authorization, Idempotency-Key), the API's errors and an unreachable API as exit 1 with the
 * message, and the usage (--help per subcommand, unknown options exit 2). Against the real admin API
 * in this process (vss-admin-stack.ts), with an API key: what a request sent shows in what the API
 * stored (read back from its SQL store) or in how it answered.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SUBCOMMAND_SPECS } from '../../../src/cli/vss-admin/subcommand-specs.js';
import {
  type Catalog,
  FILTERS,
  registerCatalog,
  waitForOperation,
  writeTrainingData,
} from '../../support/admin-engine-world.js';
import { closedPort } from '../../support/closed-port.js';
import { inProcessVssAdmin, type VssAdminStack } from '../../support/vss-admin-stack.js';
import { type RunOptions, runCli } from './cli-harness.js';

/** The API's key (settings take keys of 16 characters or more). */
const KEY = 'secret-key-0123456789';
let api: VssAdminStack;
let dir = '';

before(async () => {
  api = await inProcessVssAdmin({ apiKeys: [KEY] });
  dir = await mkdtemp(join(tmpdir(), 'lattice-vss-admin-'));
});

after(async () => {
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the subcommand with the API's URL and key in its settings, as a user's would have them. */
const cli = (subcommand: string, argv: string[], options: Partial<RunOptions> = {}) =>
  runCli(subcommand, argv, { url: api.url, apiKey: KEY, ...options });

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

let entities = 0;
/** A fresh entity with its table names and a store id no other test uses. */
function fresh() {
  entities += 1;
  const entity = `req${entities}`;
  return { entity, storeId: 700 + entities, embeddings: `emb_${entity}`, aggregator: `agg_${entity}` };
}

/** A fresh entity with its store registered (through the store: the test is about what follows). */
async function withStore() {
  const names = fresh();
  await api.store.stores.create({
    storeId: names.storeId,
    entity: names.entity,
    dbConfId: 'main',
    embeddingsTable: names.embeddings,
    aggregatorTable: names.aggregator,
  });
  return names;
}

/** A catalog (store, model `m`, `variants`) whose reset reads `rows` training rows (none: a missing path). */
async function catalog(rows: number, variants: (keyof typeof FILTERS)[] = ['all', 'live']): Promise<Catalog> {
  const data = join(api.trainingDir, `req-${++entities}`);
  if (rows > 0) writeTrainingData(data, rows);
  return registerCatalog(api.store, data, variants);
}

const modelArgs = (c: Catalog) => ['--entity', c.entity, '--model', c.modelName];

/** The newest operation of the catalog's model. */
async function lastOperationId(c: Catalog): Promise<string> {
  const [newest] = await api.store.operations.list({ entity: c.entity, modelName: c.modelName, limit: 1 });
  assert.ok(newest, `no operation of ${c.entity}/${c.modelName}`);
  return newest.operationId;
}

describe('request bodies', () => {
  test('register-store from flags: kebab-case flags to snake_case fields, integers as numbers', async () => {
    const { entity, storeId, embeddings, aggregator } = fresh();
    const result = await cli('register-store', [
      '--store-id',
      String(storeId),
      '--entity',
      entity,
      '--db-conf-id',
      'main',
      `--embeddings-table=${embeddings}`,
      '--aggregator-table',
      aggregator,
    ]);
    assert.equal(result.stderr, '');
    assert.equal(result.code, 0);
    const { createdAt: _, ...stored } = await api.store.stores.getByEntity(entity);
    assert.deepEqual(stored, {
      storeId,
      entity,
      dbConfId: 'main',
      embeddingsTable: embeddings,
      aggregatorTable: aggregator,
    });
    assert.match(
      result.stdout,
      new RegExp(
        `^Store ${storeId} registered for entity ${entity}: db_conf_id main, embeddings table ${embeddings}`,
      ),
    );
  });

  test('register-model from a JSON file, as written (JSON-holding fields as strings)', async () => {
    const { entity, storeId } = await withStore();
    const body = {
      entity,
      model_name: 'products',
      ingestion_column_mapping: '{"id_column":"id","embedding_column":"vec","to_be_indexed_column":"live"}',
      embedding_store_enabled: true,
      embedding_store_ttl: 0,
      mq_id: 1,
      model_config: '{"distance_function":"COSINE","vector_dimension":64}',
      store_id: storeId,
      training_data_path: join(api.trainingDir, entity),
    };
    const result = await cli('register-model', ['--file', await file('model.json', JSON.stringify(body))]);
    assert.equal(result.code, 0, result.stderr);
    const model = await api.store.models.get({ entity, modelName: 'products' });
    assert.deepEqual(model.ingestionColumnMapping, {
      idColumn: 'id',
      embeddingColumn: 'vec',
      toBeIndexedColumn: 'live',
    });
    assert.deepEqual(model.modelConfig, { distanceFunction: 'COSINE', vectorDimension: 64 });
    assert.equal(model.embeddingStoreEnabled, true);
    assert.equal(model.mqId, 1);
    assert.equal(model.storeId, storeId);
    assert.equal(model.trainingDataPath, body.training_data_path);
    assert.match(
      result.stdout,
      new RegExp(
        `Model ${entity}/products registered: state REGISTERED, cluster experiment, vectors 64-d COSINE`,
      ),
    );
  });

  test('register-model from a YAML file, with flags overriding its fields; unknown fields go as written', async () => {
    const { entity, storeId } = await withStore();
    const yaml = (extra: string[]) =>
      [
        `entity: ${entity}`,
        'model_name: products',
        'ingestion_column_mapping:',
        '  id_column: id',
        '  embedding_column: vec',
        '  to_be_indexed_column: live',
        'embedding_store_enabled: true',
        'embedding_store_ttl: 0',
        'mq_id: 1',
        'model_config:',
        '  distance_function: DOT',
        '  vector_dimension: 32',
        `store_id: ${storeId}`,
        `training_data_path: ${join(api.trainingDir, 'old')}`,
        ...extra,
      ].join('\n');
    const overrides = [
      '--training-data-path',
      join(api.trainingDir, 'new'),
      '--no-embedding-store-enabled',
      '--mq-id',
      '7',
      '--model-config',
      '{"distance_function":"COSINE","vector_dimension":64}',
    ];
    // A field the API does not know reaches it as written, and it says so.
    const extra = await cli('register-model', [
      '--file',
      await file('extra.yaml', yaml(['extra_field: kept as written'])),
      ...overrides,
    ]);
    assert.equal(extra.code, 1);
    assert.equal(
      extra.stderr,
      'lattice: extra_field is not a field of this request (got "extra_field") (INVALID_ARGUMENT, field extra_field)\n',
    );
    const result = await cli('register-model', ['--file', await file('model.yaml', yaml([])), ...overrides]);
    assert.equal(result.code, 0, result.stderr);
    const model = await api.store.models.get({ entity, modelName: 'products' });
    assert.equal(model.embeddingStoreEnabled, false);
    assert.equal(model.mqId, 7);
    assert.deepEqual(model.modelConfig, { distanceFunction: 'COSINE', vectorDimension: 64 });
    assert.equal(model.trainingDataPath, join(api.trainingDir, 'new'));
    assert.deepEqual(model.ingestionColumnMapping, {
      idColumn: 'id',
      embeddingColumn: 'vec',
      toBeIndexedColumn: 'live',
    });
  });

  test('register-variant with @file JSON fields (a JSON file and a YAML file)', async () => {
    const c = await catalog(0, []);
    const filter = { criteria: [{ column_name: 'kind', filter_value: 'organic', default_value: 'organic' }] };
    const result = await cli('register-variant', [
      ...modelArgs(c),
      '--variant',
      'organic',
      '--vss-filter',
      `@${await file('filter.json', JSON.stringify(filter))}`,
      '--vectordb-type',
      'EMBEDDED',
      '--vectordb-config',
      `@${await file('vectordb.yaml', 'hnsw:\n  m: 16\n')}`,
      '--job-frequency',
      'FREQ_1W',
    ]);
    assert.equal(result.code, 0, result.stderr);
    const variant = await api.store.variants.get({ ...c, variant: 'organic' });
    assert.deepEqual(variant.vssFilter, filter);
    assert.deepEqual(variant.vectorDbConfig, { hnsw: { m: 16 } });
    assert.equal(variant.vectorDbType, 'EMBEDDED');
    assert.equal(variant.jobFrequency, 'FREQ_1W');
    assert.match(
      result.stdout,
      new RegExp(`Variant ${c.entity}/m/organic registered: state REGISTERED, cluster experiment`),
    );
  });

  test("update-variant sets the variant's search width; a width past the limit is the API's 400", async () => {
    const c = await catalog(0, ['all']);
    const result = await cli('update-variant', [...modelArgs(c), '--variant', 'all', '--ef-search', '300']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await api.store.variants.get({ ...c, variant: 'all' })).efSearch, 300);
    assert.match(result.stdout, new RegExp(`Variant ${c.entity}/m/all updated: .*ef_search 300`));
    const refused = await cli('update-variant', [...modelArgs(c), '--variant', 'all', '--ef-search', '5000']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /ef_search/);
  });

  test('register-variant on a model with data names the fill operation; --wait follows it', async () => {
    const c = await catalog(200, ['all']);
    const reset = await cli('reset', modelArgs(c));
    assert.equal(reset.code, 0, reset.stderr);
    const args = [
      ...modelArgs(c),
      '--variant',
      'live',
      '--vss-filter',
      JSON.stringify(FILTERS.live),
      '--vectordb-type',
      'EMBEDDED',
      '--vectordb-config',
      '{}',
      '--job-frequency',
      'FREQ_1D',
    ];
    const plain = await cli('register-variant', args);
    assert.equal(plain.code, 0, plain.stderr);
    const fill = /Filling it from the embedding store: operation (\S+)/.exec(plain.stdout)?.[1];
    assert.ok(fill, plain.stdout);
    assert.ok(plain.stdout.includes(`lattice vss status ${fill} --wait`), plain.stdout);
    // Registering it again (a client's retry) follows the same fill.
    const waited = await cli('register-variant', [...args, '--wait']);
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stdout, new RegExp(`operation ${fill} \\(FILL_VARIANT\\) SUCCEEDED\n$`));
    const variant = await api.store.variants.get({ ...c, variant: 'live' });
    assert.equal(variant.state, 'READY');
    assert.equal(variant.readVersion, 1);
  });

  test('promote goes to promote-variant with --variant and to promote-model without', async () => {
    const c = await catalog(200);
    const reset = await cli('reset', modelArgs(c));
    assert.equal(reset.code, 0, reset.stderr);
    // Not waited for: a promotion gives consumers and serving 10 s to see each switch (the engine's
    // promoteSettleMs), and the promotion itself has tests of its own (test/vss/admin/operations).
    const variant = await cli('promote', [...modelArgs(c), '--variant', 'all', '--no-wait']);
    assert.equal(variant.code, 0, variant.stderr);
    const id = await lastOperationId(c);
    const promoting = await api.store.operations.get(id);
    assert.equal(promoting.kind, 'PROMOTE_VARIANT');
    assert.equal(promoting.variant, 'all');
    // The model's promotion is refused while the variant's runs, as promote-model says it.
    const model = await cli('promote', [...modelArgs(c), '--no-wait']);
    assert.equal(model.code, 1);
    assert.equal(
      model.stderr,
      `lattice: model ${c.entity}/m has PROMOTE_VARIANT operation ${id} unfinished: promote once it has finished (FAILED_PRECONDITION, field model_name)\n`,
    );
  });

  test('rollback flips the model back to its previous version; models shows the window and the rolled-back version', async () => {
    const c = await catalog(200, ['all']);
    for (let i = 0; i < 2; i++) assert.equal((await cli('reset', modelArgs(c))).code, 0);
    const before = await cli('models', modelArgs(c));
    assert.equal(before.code, 0, before.stderr);
    assert.match(
      before.stdout,
      /\s+m\s+all\s+READY\s+experiment\s+2\s+2\s+v1 until \d{4}-\d\d-\d\dT\S+Z\s+-\n/,
    );
    const result = await cli('rollback', modelArgs(c));
    assert.equal(result.stderr, '');
    assert.equal(result.code, 0);
    assert.equal(
      result.stdout,
      `Rolled back ${c.entity}/m: all 2 → 1; version 2 retired (kept for its grace period)\n`,
    );
    const after = await cli('models', modelArgs(c));
    assert.match(after.stdout, /\s+m\s+all\s+READY\s+experiment\s+1\s+1\s+-\s+-\n/);
    assert.match(after.stdout, /\n2\s+RETIRED\s+200\s+0\s+\d+\s+passed [0-9.]+\s+\d{4}-\S+Z\n/);
    const again = await cli('rollback', modelArgs(c));
    assert.equal(again.code, 1);
    assert.match(
      again.stderr,
      /no previous version to roll back to: .*\(FAILED_PRECONDITION, field model_name\)\n$/,
    );
  });

  test('trigger names the variant: the API refuses one that is not ingested, naming it', async () => {
    const c = await catalog(0);
    const result = await cli('trigger', [...modelArgs(c), '--variant', 'live']);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      `lattice: variant live of model ${c.entity}/m is REGISTERED with no write version: indexing starts once its version is ingested (FAILED_PRECONDITION, field variant)\n`,
    );
  });

  test('--json prints the API answer as it came', async () => {
    const { entity, storeId } = fresh();
    const result = await cli('register-store', [
      '--store-id',
      String(storeId),
      '--entity',
      entity,
      '--db-conf-id',
      'main',
      '--embeddings-table',
      `emb_${entity}`,
      '--aggregator-table',
      `agg_${entity}`,
      '--json',
    ]);
    assert.equal(result.code, 0, result.stderr);
    const answer = JSON.parse(result.stdout) as Record<string, unknown>;
    const stored = await api.store.stores.getByEntity(entity);
    assert.deepEqual(answer, {
      store_id: storeId,
      entity,
      db_conf_id: 'main',
      embeddings_table: `emb_${entity}`,
      aggregator_table: `agg_${entity}`,
      created_at: stored.createdAt.toISOString(),
    });
  });
});

describe('headers', () => {
  test('--idempotency-key is sent as Idempotency-Key: the same key with another body is refused', async () => {
    const store = (names: ReturnType<typeof fresh>, key?: string) =>
      cli('register-store', [
        '--store-id',
        String(names.storeId),
        '--entity',
        names.entity,
        '--db-conf-id',
        'main',
        '--embeddings-table',
        names.embeddings,
        '--aggregator-table',
        names.aggregator,
        ...(key === undefined ? [] : ['--idempotency-key', key]),
      ]);
    const [first, second] = [fresh(), fresh()];
    assert.equal((await store(first, 'nightly-2024-06-01')).code, 0);
    const reused = await store(second, 'nightly-2024-06-01');
    assert.equal(reused.code, 1);
    assert.equal(
      reused.stderr,
      'lattice: Idempotency-Key was already used with another body: use a new key for another request (ALREADY_EXISTS, field Idempotency-Key)\n',
    );
    assert.equal(await api.store.stores.findByEntity(second.entity), undefined);
    const withoutKey = await store(second);
    assert.equal(withoutKey.code, 0, withoutKey.stderr);
  });

  test('the API key is sent as Authorization: Bearer; a wrong or missing one is the API error 401', async () => {
    const fromSettings = await cli('models', []);
    assert.equal(fromSettings.code, 0, fromSettings.stderr);

    const wrong = await cli('models', ['--api-key', 'nope']);
    assert.equal(wrong.code, 1);
    assert.equal(wrong.stderr, 'lattice: the API key is not valid (UNAUTHENTICATED, field Authorization)\n');

    const missing = await runCli('models', [], { url: api.url });
    assert.equal(missing.code, 1);
    assert.equal(
      missing.stderr,
      'lattice: an API key is required: send Authorization: Bearer <key> (UNAUTHENTICATED, field Authorization)\n',
    );
  });
});

describe('errors', () => {
  test('an API validation error: exit 1 with its message, code and field', async () => {
    const { entity } = fresh();
    const body = {
      store_id: 'x',
      entity,
      db_conf_id: 'main',
      embeddings_table: `emb_${entity}`,
      aggregator_table: `agg_${entity}`,
    };
    const result = await cli('register-store', ['--file', await file('s.json', JSON.stringify(body))]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^lattice: store_id .* \(INVALID_ARGUMENT, field store_id\)\n$/);
    assert.equal(result.stdout, '');
    assert.equal(await api.store.stores.findByEntity(entity), undefined);
  });

  test('a conflict (409), a reset while one runs: exit 1 with the message', async () => {
    const c = await catalog(100);
    // Without consumers the first reset cannot finish: the second surely finds it running.
    await api.stopConsumers();
    let id = '';
    try {
      const first = await cli('reset', [...modelArgs(c), '--no-wait']);
      assert.equal(first.code, 0, first.stderr);
      id = await lastOperationId(c);
      const result = await cli('reset', modelArgs(c));
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        `lattice: RESET_MODEL on model ${c.entity}/m is already running (operation ${id}) (FAILED_PRECONDITION)\n`,
      );
    } finally {
      await api.startConsumers();
    }
    await waitForOperation(api.store, id);
  });

  test('not found (404) for an unknown operation and model', async () => {
    const status = await cli('status', ['op-unknown']);
    assert.equal(status.code, 1);
    assert.equal(status.stderr, 'lattice: operation op-unknown does not exist (NOT_FOUND, field id)\n');
    const model = await cli('models', ['--entity', 'catalog', '--model', 'nope']);
    assert.equal(model.code, 1);
    assert.equal(model.stderr, 'lattice: model catalog/nope does not exist (NOT_FOUND, field model)\n');
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
    const integer = await cli('register-store', ['--store-id', 'one']);
    assert.equal(integer.code, 2);
    assert.match(
      integer.stderr,
      /^lattice: option '--store-id <N>' argument 'one' is invalid\. It must be an integer\./,
    );
    const json = await cli('register-model', ['--model-config', '{vector_dimension: 64']);
    assert.equal(json.code, 2);
    assert.match(json.stderr, /^lattice: --model-config must be JSON text or @file/);
    const missing = await cli('register-model', ['--model-config', `@${join(dir, 'absent.json')}`]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^lattice: --model-config: cannot read .*absent\.json/);
    const notObject = await cli('register-store', ['--file', await file('list.json', '[1]')]);
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
      'rollback',
      'status',
      'trigger',
      'update-variant',
    ]);
    for (const subcommand of subcommands) {
      const result = await cli(subcommand, ['--help']);
      assert.equal(result.code, 0, subcommand);
      assert.match(result.stdout, new RegExp(`^Usage: lattice vss ${subcommand}\\b`), subcommand);
      assert.match(result.stdout, /--address <ADDRESS>/, subcommand);
      assert.doesNotMatch(result.stdout, /--url/, subcommand);
    }
    const model = await cli('register-model', ['-h']);
    for (const flag of [
      '--model-config <JSON|@FILE>',
      '--embedding-store-ttl <N>',
      '--embedding-store-enabled',
      '--no-embedding-store-enabled',
      '--file <FILE>',
    ]) {
      assert.ok(model.stdout.includes(flag), flag);
    }
    const reset = await cli('reset', ['--help']);
    assert.match(
      reset.stdout,
      /--wait +wait for the operation with a progress bar \(the default\)\n +--no-wait +return once/,
    );
  });

  test('an unknown flag: exit 2 naming it, with the usage, and nothing is sent', async () => {
    const c = await catalog(0);
    const result = await cli('reset', [...modelArgs(c), '--modle', 'm', '--no-wait']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^lattice: unknown option '--modle'\n\nUsage: lattice vss reset/);
    // The same call without the unknown flag would have started a reset.
    assert.deepEqual(await api.store.operations.list({ entity: c.entity, modelName: c.modelName }), []);
    const short = await cli('models', ['-x']);
    assert.equal(short.code, 2);
    assert.match(short.stderr, /^lattice: unknown option '-x'/);
  });

  test('positional arguments: status needs the operation id; extra ones are refused', async () => {
    const missing = await cli('status', []);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^lattice: missing required argument 'operation-id'/);
    const extra = await cli('reset', ['catalog']);
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /^lattice: too many arguments for 'reset'/);
    const half = await cli('models', ['--entity', 'catalog']);
    assert.equal(half.code, 2);
    assert.match(half.stderr, /--entity and --model go together/);
    const address = await cli('models', ['--address', 'localhost']);
    assert.equal(address.code, 2);
    assert.match(
      address.stderr,
      /^lattice: option '--address <ADDRESS>' argument 'localhost' is invalid\. It must be HOST:PORT or an http:\/\/ or https:\/\/ URL\./,
    );
  });
});

describe('models', () => {
  test('a table of every model’s variants, and one model with its versions and operations', async () => {
    const ready = await catalog(200);
    const failed = await catalog(0);
    assert.equal((await cli('reset', modelArgs(ready))).code, 0);
    assert.equal((await cli('reset', modelArgs(failed))).code, 1);
    const reason = (await api.store.variants.get({ ...failed, variant: 'all' })).failureReason;
    assert.ok(reason, 'the failed reset gave its variants a reason');

    const all = await cli('models', []);
    assert.equal(all.code, 0, all.stderr);
    const lines = all.stdout.trimEnd().split('\n');
    assert.match(
      lines[0]!,
      /^ENTITY\s+MODEL\s+VARIANT\s+STATE\s+CLUSTER\s+READ\s+WRITE\s+ROLLBACK TO\s+LAST ERROR$/,
    );
    const rows = (entity: string) => lines.filter((line) => line.startsWith(`${entity} `));
    assert.equal(rows(ready.entity).length, 2);
    assert.match(rows(ready.entity)[0]!, /^\S+\s+m\s+all\s+READY\s+experiment\s+1\s+1\s+-\s+-$/);
    assert.match(rows(ready.entity)[1]!, /^\S+\s+m\s+live\s+READY\s+experiment\s+1\s+1\s+-\s+-$/);
    assert.ok(rows(failed.entity)[0]!.includes(reason.slice(0, 20)), rows(failed.entity)[0]);
    assert.match(rows(failed.entity)[0]!, /^\S+\s+m\s+all\s+FAILED\s+experiment\s+-\s+1\s+-\s+\S/);

    const one = await cli('models', modelArgs(ready));
    assert.equal(one.code, 0, one.stderr);
    const id = await lastOperationId(ready);
    assert.match(
      one.stdout,
      new RegExp(
        `Versions of ${ready.entity}/m:\nVERSION\\s+STATUS\\s+INGESTED\\s+FAILED\\s+INDEXED\\s+RECALL\\s+ROLLED BACK\n1\\s+SERVING\\s+200\\s+0\\s+\\d+\\s+passed [0-9.]+\\s+-\n`,
      ),
    );
    assert.match(
      one.stdout,
      new RegExp(
        `Recent operations of ${ready.entity}/m:\n.*\n${id}\\s+RESET_MODEL\\s+-\\s+SUCCEEDED\\s+drop_previous\\s+100%`,
      ),
    );
    const json = await cli('models', ['--json']);
    const listed = (JSON.parse(json.stdout) as { models: { entity: string }[] }).models.map((m) => m.entity);
    assert.ok(listed.includes(ready.entity) && listed.includes(failed.entity), listed.join(' '));
  });
});
