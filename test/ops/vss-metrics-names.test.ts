/**
 * The names the alert rules read are the names vss exports. The real components run in this
 * process on one Platform (embedded defaults: PGlite, the in-process queue, the embedded vector DB)
 * with StatsD pointed at a UDP socket of the test: vss serving, the vss consumers, the admin
 * operations engine and the admin HTTP API. A little traffic goes through them — registration over
 * the API (`app.inject`), a reset-model of a small JSON Lines training set to READY, a reset that
 * fails, searches (one for an unknown variant), an event the consumers dead-letter — then:
 *
 * - every metric selector of every rule expression (parsed from ops/prometheus, so the check cannot
 *   drift from the rules) names a metric with samples on the admin API's /metrics, with the label
 *   names it matches and groups on;
 * - every input series of the promtool unit tests has a metric name and label-name set exactly as
 *   exported (plus the `instance`/`job` Prometheus adds);
 * - the same metrics arrive on StatsD, with their labels as tags;
 * - the metrics of vss.md ("Metrics per model and variant") are exported.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '../../src/platform/logging/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { buildAdminApi } from '../../src/vss/admin/api/index.js';
import { FileJobRunner } from '../../src/vss/admin/jobs/index.js';
import { type AdminEngine, startAdminEngine } from '../../src/vss/admin/operations/index.js';
import { startVssConsumers, type VssConsumers } from '../../src/vss/consumers/index.js';
import { startVssServing, type VssServing } from '../../src/vss/serving/index.js';
import { openVssStore } from '../../src/vss/store/index.js';
import { vectorOf, writeTrainingData } from '../support/admin-engine-world.js';
import { eventually } from '../support/servers.js';
import { Client } from '../vss/serving/harness.js';
import { exportedSeries, labelNamesOf, ruleTestSeries, ruleUses, TARGET_LABELS } from './alert-rules.js';

const ENTITY = 'shop';
const MODEL = 'items';
const DIMENSION = 16;
const ROWS = 300;

/**
 * The metrics of vss.md "Metrics per model and variant", by what they measure. Latencies are
 * histograms (`_count` is the QPS), rates come from counters, hit percentage from the cache counter
 * or the ratio gauge.
 */
const DESIGN_METRICS: Record<string, string[]> = {
  avg_similar_candidates: ['vss_avg_similar_candidates'],
  avg_recall: ['vss_avg_recall'],
  'service latency': ['vss_serving_request_seconds_count'],
  '5xx count': ['vss_serving_errors_total'],
  'vector DB latency and QPS': ['vss_serving_vectordb_seconds_count'],
  'store latency': ['vss_serving_store_seconds_count'],
  'cache latency': ['vss_serving_cache_seconds_count'],
  'cache hit percentage': ['vss_serving_cache_total', 'vss_serving_cache_hit_ratio'],
  'indexed-vector ratio': ['vss_indexed_vector_ratio'],
  'retry and dead-letter rates': ['vss_consumer_retries_total', 'vss_consumer_dead_letters_total'],
  'operation progress and failures': ['vss_admin_operation_progress', 'vss_admin_operations_failed_total'],
};

/** Metrics declared but recorded by no call site yet (none now: a name here must not stay). */
const AWAITING_CALL_SITES = new Set<string>();

interface Stack {
  app: FastifyInstance;
  client: Client;
  statsd: string[];
  close(): Promise<void>;
}

async function startStack(): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-ops-metrics-'));
  const packets: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (message) => packets.push(...message.toString('utf8').split('\n')));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const settings = loadSettings({
    env: { LATTICE_DATA_DIR: dataDir },
    overrides: {
      queue: { journalDir: '' },
      metrics: { statsdHost: '127.0.0.1', statsdPort: socket.address().port, statsdTags: 'datadog' },
      vss: {
        consumers: { partitions: 2, lingerMs: 5, retryBaseMs: 50, retryMaxMs: 500 },
        admin: { pollIntervalMs: 50 },
      },
    },
  });
  const logger = createLogger('ops-metrics', { level: 'silent' });
  const platform = new Platform(settings, { logger });
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => {});
    await platform.close();
    socket.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const vectorDb = await platform.vectorDb();
    const [sql, queue] = await Promise.all([platform.sqlClient(), platform.queue()]);
    const { metrics } = platform;
    const serving: VssServing = await startVssServing({
      sql,
      vectorDb,
      host: '127.0.0.1',
      port: 0,
      metrics,
      logger,
      refreshIntervalMs: 100,
      recallSampleRate: 1,
    });
    closers.push(() => serving.stop());
    const consumers: VssConsumers = await startVssConsumers({
      sql,
      vectorDb,
      vectorDbType: 'EMBEDDED',
      queue,
      settings: settings.vss.consumers,
      metrics,
      logger,
    });
    closers.push(() => consumers.stop());
    const jobRunner = new FileJobRunner({ queue, batchRows: 100, checkpointEveryMs: 100, logger });
    closers.push(() => jobRunner.close());
    const store = await openVssStore(sql);
    const engine: AdminEngine = await startAdminEngine({
      store,
      queue,
      vectorDb,
      vectorDbType: 'EMBEDDED',
      jobRunner,
      embeddingsTopic: settings.vss.consumers.embeddingsTopic,
      partitions: settings.vss.consumers.partitions,
      operationsTopic: settings.vss.admin.operationsTopic,
      group: settings.vss.admin.group,
      pollIntervalMs: settings.vss.admin.pollIntervalMs,
      scheduleIntervalMs: 0,
      // A rollback window, so the traffic can roll back (vss_rollbacks_total).
      rollbackGraceMs: 600_000,
      metrics,
      logger,
    });
    closers.push(() => engine.stop());
    const app = await buildAdminApi({ store, lifecycle: engine.lifecycle, sql, metrics, logger });
    closers.push(() => app.close());
    await app.ready();
    const client = new Client(`127.0.0.1:${serving.port}`);
    closers.push(async () => client.close());
    // The traffic: a dead letter (an embedding event that is not JSON) on the consumers' topic.
    await queue.publish(settings.vss.consumers.embeddingsTopic, Buffer.from('not an event'), { key: 'x' });
    await onboard(app, client, join(dataDir, 'training'));
    return { app, client, statsd: packets, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function post(app: FastifyInstance, url: string, body: unknown): Promise<Record<string, unknown>> {
  const answer = await app.inject({ method: 'POST', url, payload: body as Record<string, unknown> });
  assert.ok(answer.statusCode < 300, `${url}: ${answer.statusCode} ${answer.body}`);
  return answer.json();
}

async function operationStatus(app: FastifyInstance, id: string): Promise<string> {
  const answer = await app.inject({ method: 'GET', url: `/operations/${id}` });
  return String(answer.json().status);
}

/** Registers a model with one variant on `trainingDir`, resets it to READY, and one that fails. */
async function onboard(app: FastifyInstance, client: Client, trainingDir: string): Promise<void> {
  writeTrainingData(trainingDir, ROWS, { files: 2 });
  await post(app, '/register-store', {
    store_id: 1,
    entity: ENTITY,
    db_conf_id: 'default',
    embeddings_table: 'emb_shop',
    aggregator_table: 'agg_shop',
  });
  const model = (name: string, path: string) => ({
    entity: ENTITY,
    model_name: name,
    ingestion_column_mapping: { id_column: 'id', embedding_column: 'emb', to_be_indexed_column: 'flag' },
    embedding_store_enabled: true,
    embedding_store_ttl: 0,
    mq_id: 1,
    model_config: { distance_function: 'COSINE', vector_dimension: DIMENSION },
    store_id: 1,
    training_data_path: path,
  });
  const variant = (name: string) => ({
    entity: ENTITY,
    model_name: name,
    variant: 'all',
    vss_filter: {},
    vectordb_type: 'EMBEDDED',
    vectordb_config: { m: 12, ef_construction: 64 },
    job_frequency: 'FREQ_1D',
  });
  await post(app, '/register-model', model(MODEL, trainingDir));
  await post(app, '/register-variant', variant(MODEL));
  await post(app, '/register-model', model('missing', join(trainingDir, 'no-such-dir')));
  await post(app, '/register-variant', variant('missing'));
  const reset = String((await post(app, '/reset-model', { entity: ENTITY, model_name: MODEL })).operation_id);
  const failing = String(
    (await post(app, '/reset-model', { entity: ENTITY, model_name: 'missing' })).operation_id,
  );
  await eventually(
    async () => (await operationStatus(app, reset)) === 'SUCCEEDED',
    60_000,
    'reset to succeed',
  );
  await eventually(
    async () => (await operationStatus(app, failing)) === 'FAILED',
    60_000,
    'bad reset to fail',
  );
  // Serving sees the flip by LISTEN/NOTIFY (or its 100 ms poll): search until it answers.
  const query = {
    entity: ENTITY,
    modelName: MODEL,
    variant: 'all',
    queries: [{ embedding: { values: vectorOf(7) }, filters: [], pageToken: '' }],
    pageSize: 5,
  };
  await eventually(
    async () => {
      try {
        return (await client.search(query)).results[0]!.candidates.length > 0;
      } catch {
        return false;
      }
    },
    20_000,
    'serving to answer the READY variant',
  );
  await client.search(query);
  // By candidate id and GetEmbeddings: the embedding-store reads (store latency).
  const firstId = (await client.search(query)).results[0]!.candidates[0]!.id;
  await client.search({ ...query, queries: [{ candidateId: firstId, filters: [], pageToken: '' }] });
  await client.getEmbeddings({ entity: ENTITY, modelName: MODEL, candidateIds: [firstId] });
  await assert.rejects(client.search({ ...query, variant: 'no_such_variant' }));
  // A second version, then back to the first: the rollback counter.
  const second = String(
    (await post(app, '/reset-model', { entity: ENTITY, model_name: MODEL })).operation_id,
  );
  await eventually(
    async () => (await operationStatus(app, second)) === 'SUCCEEDED',
    60_000,
    'second reset to succeed',
  );
  await post(app, '/rollback-model', { entity: ENTITY, model_name: MODEL });
}

describe('the alert rules read what vss exports', () => {
  let stack: Stack;
  let text: string;
  let exported: Map<string, Set<string>>;

  before(async () => {
    stack = await startStack();
    const scrape = async () => {
      const answer = await stack.app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(answer.statusCode, 200);
      text = answer.body;
      exported = exportedSeries(text);
    };
    // Asynchronous figures (the recall sample, the dead letter) land shortly after the calls.
    await eventually(
      async () => {
        await scrape();
        return (
          exported.has('vss_avg_recall') &&
          // Read every 5 s by serving (served-index-health.ts), once the variant is READY.
          exported.has('vss_serving_index_degraded') &&
          /vss_consumer_dead_letters_total\{[^}]*reason="rejected"[^}]*\} [1-9]/.test(text)
        );
      },
      20_000,
      'the recall sample, the served index health and the dead letter on /metrics',
    );
  });
  after(async () => {
    await stack?.close();
  });

  test('every metric and label of the rule expressions is on /metrics', () => {
    const uses = ruleUses();
    assert.ok(uses.length > 0);
    for (const use of uses) {
      assert.ok(use.selectors.length > 0, `${use.alert}: no metric found in ${use.expr}`);
      const labelsOfRule = new Set<string>();
      for (const selector of use.selectors) {
        assert.ok(exported.has(selector.metric), `${use.alert}: ${selector.metric} is not on /metrics`);
        const names = labelNamesOf(exported, selector.metric);
        for (const name of names) labelsOfRule.add(name);
        for (const label of selector.labels) {
          assert.ok(names.has(label), `${use.alert}: ${selector.metric} has no label ${label}`);
        }
      }
      for (const label of use.grouping) {
        assert.ok(labelsOfRule.has(label), `${use.alert}: groups by ${label}, which its metrics lack`);
      }
    }
  });

  test('every promtool test series is named and labelled exactly as exported', () => {
    const series = ruleTestSeries();
    assert.ok(series.length > 0);
    for (const s of series) {
      const own = s.labels.filter((l) => !TARGET_LABELS.has(l)).sort();
      const sets = exported.get(s.metric);
      assert.ok(sets, `${s.file}: ${s.metric} is not on /metrics`);
      assert.ok(
        sets.has(own.join(',')),
        `${s.file}: ${s.series} has labels {${own}}; /metrics has ${[...sets].map((x) => `{${x}}`).join(' ')}`,
      );
    }
  });

  test('the metrics of the rules also go to StatsD, with their labels as tags', async () => {
    const metrics = new Set(ruleUses().flatMap((u) => u.selectors.map((s) => s.metric)));
    // The client flushes its buffer every 200 ms.
    await eventually(
      () => [...metrics].every((m) => stack.statsd.some((p) => p.startsWith(`lattice.${m}:`))),
      5_000,
      'every rule metric on StatsD',
    );
    for (const metric of metrics) {
      const tags = new Set(
        stack.statsd
          .filter((p) => p.startsWith(`lattice.${metric}:`))
          .flatMap((p) => (/\|#(.*)$/.exec(p)?.[1] ?? '').split(','))
          .map((tag) => tag.split(':')[0]!),
      );
      for (const label of labelNamesOf(exported, metric)) {
        assert.ok(tags.has(label), `StatsD ${metric} lacks the tag ${label}: ${[...tags]}`);
      }
    }
  });

  test('the metrics of vss.md are exported, per model and variant where they are about one', () => {
    const declared = new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
    for (const [what, names] of Object.entries(DESIGN_METRICS)) {
      for (const name of names) {
        if (AWAITING_CALL_SITES.has(name)) {
          const family = name.replace(/_count$/, '');
          assert.ok(declared.has(family), `${what}: ${family} is not declared`);
          continue;
        }
        assert.ok(exported.has(name), `${what}: ${name} has no samples on /metrics`);
      }
    }
    for (const name of [
      'vss_avg_similar_candidates',
      'vss_avg_recall',
      'vss_serving_request_seconds_count',
      'vss_serving_errors_total',
      'vss_serving_vectordb_seconds_count',
      'vss_serving_cache_hit_ratio',
      'vss_indexed_vector_ratio',
    ]) {
      const labels = labelNamesOf(exported, name);
      for (const label of ['entity', 'model', 'variant']) {
        assert.ok(labels.has(label), `${name} has no ${label} label`);
      }
    }
    assert.match(
      text,
      new RegExp(`vss_indexed_vector_ratio\\{entity="${ENTITY}",model="${MODEL}",variant="all"\\} 1\\b`),
    );
  });
});
