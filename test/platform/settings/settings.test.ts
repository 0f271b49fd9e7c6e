import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import { loadSettings, settingsEnv } from '../../../src/platform/settings/index.js';

const dir = mkdtempSync(join(tmpdir(), 'lattice-settings-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), `expected INVALID_ARGUMENT, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected an error');
}

describe('settings', () => {
  test('defaults need no environment: embedded adapters under .lattice', () => {
    const s = loadSettings({ env: {} });
    assert.equal(s.configStore.kind, 'file');
    assert.equal(s.queue.kind, 'memory');
    assert.equal(s.sql.kind, 'pglite');
    assert.equal(s.cache.kind, 'memory');
    assert.equal(s.host, '127.0.0.1');
    assert.ok(s.configStore.dir.endsWith(join('.lattice', 'config')));
    assert.ok(s.sql.dataDir.endsWith(join('.lattice', 'sql')));
    assert.ok(s.queue.journalDir?.endsWith(join('.lattice', 'queue')));
    assert.deepEqual(s.auth.callerTokens, {});
  });

  test('environment selects the distributed adapters', () => {
    const s = loadSettings({
      env: {
        LATTICE_CONFIG_STORE: 'etcd',
        LATTICE_ETCD_ENDPOINTS: 'http://10.0.0.1:2379, http://10.0.0.2:2379',
        LATTICE_QUEUE: 'jetstream',
        LATTICE_NATS_SERVERS: 'nats://q:4222',
        LATTICE_SQL: 'postgres',
        LATTICE_POSTGRES_URL: 'postgres://u@db/x',
        LATTICE_CACHE: 'redis',
        LATTICE_REDIS_URL: 'redis://cache:6379',
        LATTICE_CALLER_TOKENS: 'ranker:abc,search:def',
        LATTICE_METRICS_PORT: '9100',
      },
    });
    assert.deepEqual(s.configStore.endpoints, ['http://10.0.0.1:2379', 'http://10.0.0.2:2379']);
    assert.equal(s.queue.kind, 'jetstream');
    assert.deepEqual(s.queue.servers, ['nats://q:4222']);
    assert.equal(s.sql.url, 'postgres://u@db/x');
    assert.equal(s.cache.url, 'redis://cache:6379');
    assert.deepEqual(s.auth.callerTokens, { ranker: 'abc', search: 'def' });
    assert.equal(s.metrics.port, 9100);
  });

  test('a YAML or JSON file is read, and the environment wins over it', () => {
    const yaml = file(
      's.yaml',
      'queue:\n  kind: jetstream\nmetrics:\n  port: 9000\n  statsdHost: 127.0.0.1\n',
    );
    const s = loadSettings({ env: { LATTICE_METRICS_PORT: '9001' }, file: yaml });
    assert.equal(s.queue.kind, 'jetstream');
    assert.equal(s.metrics.port, 9001);
    assert.equal(s.metrics.statsdHost, '127.0.0.1');
    const json = file('s.json', JSON.stringify({ cache: { kind: 'redis' } }));
    assert.equal(loadSettings({ env: { LATTICE_SETTINGS_FILE: json } }).cache.kind, 'redis');
  });

  test('an invalid value names the setting and the variable it came from', () => {
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_QUEUE: 'kafka' } })),
      /queue\.kind \(from env LATTICE_QUEUE\)/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_GRPC_PORT: 'x' } })),
      /LATTICE_GRPC_PORT="x" is not a number/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_GRPC_PORT: '70000' } })),
      /grpc\.port.*<=65535/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_CALLER_TOKENS: 'nocolon' } })),
      /LATTICE_CALLER_TOKENS/,
    );
  });

  test('a bad file names the file and the path inside it', () => {
    const typo = file('typo.yaml', 'queue:\n  knd: memory\n');
    assert.match(
      errorOf(() => loadSettings({ env: {}, file: typo })),
      /queue\.knd \(in .*typo\.yaml\)/,
    );
    const wrongType = file('wrong.json', JSON.stringify({ sql: { poolSize: 'ten' } }));
    assert.match(
      errorOf(() => loadSettings({ env: {}, file: wrongType })),
      /sql\.poolSize \(in .*wrong\.json\)/,
    );
    const broken = file('broken.json', '{ "queue": ');
    assert.match(
      errorOf(() => loadSettings({ env: {}, file: broken })),
      /broken\.json is not valid JSON/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: {}, file: join(dir, 'missing.yaml') })),
      /cannot be read/,
    );
  });

  test('vss knobs: defaults, the variables that set them, and their validation', () => {
    const defaults = loadSettings({ env: {} });
    assert.equal(defaults.vss.vectorDb.kind, 'embedded');
    assert.ok(defaults.vss.vectorDb.dir.endsWith(join('.lattice', 'vectordb')));
    assert.equal(defaults.vss.vectorDb.timeoutMs, 5000);
    assert.equal(defaults.vss.pageTokenSecret, undefined);
    assert.equal(defaults.vss.recallSampleRate, 0.01);
    assert.equal(defaults.orchestrator.featureStoreTarget, undefined);

    const s = loadSettings({
      env: {
        LATTICE_VSS_VECTOR_DB: 'qdrant',
        LATTICE_QDRANT_URL: 'http://qdrant:6333',
        LATTICE_QDRANT_API_KEY: 'k',
        LATTICE_QDRANT_TIMEOUT_MS: '750',
        LATTICE_VSS_VECTOR_DB_DIR: join(dir, 'vectors'),
        LATTICE_VSS_PAGE_TOKEN_SECRET: 'a-secret-of-16-chars',
        LATTICE_VSS_RECALL_SAMPLE_RATE: '0.25',
      },
    });
    assert.deepEqual(s.vss.vectorDb, {
      kind: 'qdrant',
      url: 'http://qdrant:6333',
      apiKey: 'k',
      timeoutMs: 750,
      dir: join(dir, 'vectors'),
    });
    assert.equal(s.vss.pageTokenSecret, 'a-secret-of-16-chars');
    assert.equal(s.vss.recallSampleRate, 0.25);

    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_VSS_VECTOR_DB: 'qdrant' } })),
      /vss\.vectorDb\.url: is required when the vector database is qdrant/,
    );
    assert.equal(
      loadSettings({ env: { LATTICE_VSS_VECTOR_DB_BUILD_THREADS: '2' } }).vss.vectorDb.buildThreads,
      2,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_VSS_VECTOR_DB_BUILD_THREADS: '0' } })),
      /vss\.vectorDb\.buildThreads \(from env LATTICE_VSS_VECTOR_DB_BUILD_THREADS\)/,
    );
    assert.equal(
      loadSettings({ env: { LATTICE_VSS_VECTOR_DB_SEARCH_THREADS: '0' } }).vss.vectorDb.searchThreads,
      0,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_VSS_VECTOR_DB_SEARCH_THREADS: '-1' } })),
      /vss\.vectorDb\.searchThreads \(from env LATTICE_VSS_VECTOR_DB_SEARCH_THREADS\)/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_VSS_RECALL_SAMPLE_RATE: '1.5' } })),
      /vss\.recallSampleRate \(from env LATTICE_VSS_RECALL_SAMPLE_RATE\)/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_VSS_RECALL_SAMPLE_RATE: 'often' } })),
      /LATTICE_VSS_RECALL_SAMPLE_RATE="often" is not a number/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_VSS_PAGE_TOKEN_SECRET: 'short' } })),
      /vss\.pageTokenSecret \(from env LATTICE_VSS_PAGE_TOKEN_SECRET\): must be at least 16 characters/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_QDRANT_TIMEOUT_MS: '0' } })),
      /vss\.vectorDb\.timeoutMs \(from env LATTICE_QDRANT_TIMEOUT_MS\)/,
    );
  });

  test('resource bounds: defaults, the variables that set them, and their validation', () => {
    const defaults = loadSettings({ env: {} });
    assert.equal(defaults.orchestrator.logTopicRetentionMs, 3_600_000);
    assert.equal(defaults.orchestrator.logTopicMaxBytes, 64 * 1024 * 1024);
    assert.equal(defaults.orchestrator.logBufferMaxBytes, 32 * 1024 * 1024);
    assert.equal(defaults.sql.statementTimeoutMs, 30_000);
    assert.equal(defaults.metrics.readyTimeoutMs, 2000);
    const set = loadSettings({
      env: {
        LATTICE_LOG_TOPIC_RETENTION_MS: '600000',
        LATTICE_LOG_TOPIC_MAX_BYTES: '16777216',
        LATTICE_LOG_BUFFER_MAX_BYTES: '1048576',
        LATTICE_SQL_STATEMENT_TIMEOUT_MS: '5000',
        LATTICE_READY_TIMEOUT_MS: '500',
      },
    });
    assert.equal(set.orchestrator.logTopicRetentionMs, 600_000);
    assert.equal(set.orchestrator.logTopicMaxBytes, 16 * 1024 * 1024);
    assert.equal(set.orchestrator.logBufferMaxBytes, 1024 * 1024);
    assert.equal(set.sql.statementTimeoutMs, 5000);
    assert.equal(set.metrics.readyTimeoutMs, 500);
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_LOG_TOPIC_MAX_BYTES: '1000' } })),
      /orchestrator\.logTopicMaxBytes \(from env LATTICE_LOG_TOPIC_MAX_BYTES\)/,
    );
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_SQL_STATEMENT_TIMEOUT_MS: '0' } })),
      /sql\.statementTimeoutMs \(from env LATTICE_SQL_STATEMENT_TIMEOUT_MS\)/,
    );
  });

  test('call limits: defaults, the variables that set them, and their validation', () => {
    const defaults = loadSettings({ env: {} });
    assert.equal(defaults.grpc.defaultDeadlineMs, 30_000);
    assert.equal(defaults.grpc.maxInFlightCalls, 1024);
    assert.equal(defaults.orchestrator.maxInFlightMatrixBytes, 1024 * 1024 * 1024);
    const set = loadSettings({
      env: {
        LATTICE_GRPC_DEFAULT_DEADLINE_MS: '5000',
        LATTICE_GRPC_MAX_INFLIGHT_CALLS: '64',
        LATTICE_ORCHESTRATOR_MAX_INFLIGHT_MATRIX_BYTES: '268435456',
      },
    });
    assert.equal(set.grpc.defaultDeadlineMs, 5000);
    assert.equal(set.grpc.maxInFlightCalls, 64);
    assert.equal(set.orchestrator.maxInFlightMatrixBytes, 256 * 1024 * 1024);
    assert.match(
      errorOf(() => loadSettings({ env: { LATTICE_GRPC_MAX_INFLIGHT_CALLS: '0' } })),
      /grpc\.maxInFlightCalls \(from env LATTICE_GRPC_MAX_INFLIGHT_CALLS\)/,
    );
  });

  test('every variable is documented in the settings table of docs/configuration.md, one per setting', () => {
    const page = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    const table = page.slice(page.indexOf('| Variable |'), page.indexOf('The settings file takes'));
    const paths = settingsEnv.map(({ path }) => path);
    assert.equal(new Set(paths).size, paths.length, 'one variable per setting');
    for (const { env, path } of settingsEnv) {
      const row = table.split('\n').find((line) => line.startsWith(`| \`${env}\``));
      assert.ok(row, `the settings table has no row for ${env}`);
      assert.ok(row.includes(`\`${path}\``), `the row for ${env} names ${path}: ${row}`);
    }
  });

  test('validated settings cannot be changed afterwards', () => {
    const s = loadSettings({ env: { LATTICE_ETCD_ENDPOINTS: 'http://a:2379' } });
    assert.ok(Object.isFrozen(s) && Object.isFrozen(s.orchestrator) && Object.isFrozen(s.vss.vectorDb));
    assert.throws(() => {
      (s.orchestrator as { featureStoreTarget?: string }).featureStoreTarget = 'elsewhere:1';
    }, TypeError);
    assert.throws(() => (s.configStore.endpoints as string[]).push('http://b:2379'), TypeError);
    assert.equal(s.orchestrator.featureStoreTarget, undefined);
  });
});
