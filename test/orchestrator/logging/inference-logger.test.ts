import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, type TestContext, test } from 'node:test';
import { OrchestratorLog } from '../../../src/gen/orchestrator/v1/log.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import {
  buildLogRecords,
  DEFAULT_LOG_TOPIC,
  DEFAULT_LOG_TOPIC_RETENTION,
  decodeLogRecord,
  FileLogSink,
  InferenceLogger,
  type InferenceLoggerOptions,
  type LogOutcome,
  parseLogRecord,
  QueueLogSink,
  readLogFile,
} from '../../../src/orchestrator/logging/index.js';
import { requestBytes } from '../../../src/orchestrator/logging/inference-logger.js';
import { LatticeError } from '../../../src/platform/errors.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import {
  createQueue,
  type PublishOptions,
  type PublishResult,
  type Queue,
  type QueueMessage,
} from '../../../src/platform/queue/index.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';
import { loggedModel, servePoint, serveSlates } from './support.js';

async function metricValue(
  metrics: Metrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((sum, v) => sum + v.value, 0);
}

/** A logger whose log lines can be read back. */
function captureLogger() {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return { logger: createLogger('test', { level: 'warn', destination: stream }), lines };
}

function newLogger(sink: InferenceLoggerOptions['sink'], extra: Partial<InferenceLoggerOptions> = {}) {
  const metrics = new Metrics();
  const { logger, lines } = captureLogger();
  return { metrics, lines, inferenceLogger: new InferenceLogger({ sink, metrics, logger, ...extra }) };
}

async function collect(queue: Queue, topic: string) {
  const messages: QueueMessage[] = [];
  const consumer = await queue.subscribe(topic, 'test-reader', (message) => {
    messages.push(message);
  });
  return { messages, consumer };
}

/** A memory queue closed when the test ends, whatever its outcome. */
async function memoryQueue(t: TestContext): Promise<Queue> {
  const queue = await createQueue({ kind: 'memory' });
  t.after(() => queue.close());
  return queue;
}

/** A queue that delegates to `inner` but publishes through `publish`. */
function queueWith(inner: Queue, publish: Queue['publish']): Queue {
  return {
    kind: inner.kind,
    ensureTopic: (topic, options) => inner.ensureTopic(topic, options),
    describeTopic: (topic) => inner.describeTopic(topic),
    topicStats: (topic) => inner.topicStats(topic),
    groupLag: (topic, group) => inner.groupLag(topic, group),
    deleteTopic: (topic) => inner.deleteTopic(topic),
    publish,
    subscribe: (topic, group, handler, options) => inner.subscribe(topic, group, handler, options),
    close: () => inner.close(),
  };
}

describe('InferenceLogger on the memory queue', () => {
  test('publishes every record with key = tracking id and message id = tracking id : record index', async (t) => {
    const queue = await memoryQueue(t);
    const sink = new QueueLogSink(queue);
    assert.equal(sink.topic, DEFAULT_LOG_TOPIC);
    const { metrics, inferenceLogger } = newLogger(sink, { now: () => 1_700_000_000_000 });
    await sink.ensureTopic();
    const { messages } = await collect(queue, DEFAULT_LOG_TOPIC);

    const snapshot = loggedModel({ log_batch_size: 3, format: 'arrow', compression: 'zstd' });
    const contexts = [
      await servePoint(snapshot, 7, 'req-a'),
      await servePoint(snapshot, 2, 'req-b'),
      await serveSlates(snapshot, 2, [[0, 1], [1]]),
    ];
    for (const context of contexts) assert.equal(inferenceLogger.log(context), 'queued');
    // log() returned before any record was built or published: all three still wait in the buffer.
    assert.equal(inferenceLogger.buffered, 3);
    assert.equal(messages.length, 0);

    await eventually(() => messages.length === 3 + 1 + 2, 10_000, 'six records');
    const byId = new Map(messages.map((m) => [m.messageId, m]));
    assert.deepEqual([...byId.keys()].sort(), [
      'req-a:0',
      'req-a:1',
      'req-a:2',
      'req-b:0',
      'track-slate:0',
      'track-slate:1',
    ]);
    for (const message of messages) {
      const record = parseLogRecord(message.payload);
      assert.equal(message.key, record.trackingId);
      assert.equal(record.createdAtMs, 1_700_000_000_000n);
      const decoded = await decodeLogRecord(record);
      assert.equal(decoded.rows.length, record.entityIds.length);
    }
    const slateRecord = parseLogRecord(byId.get('track-slate:1')!.payload);
    assert.equal(slateRecord.metadata['rows'], 'slates');
    assert.deepEqual(slateRecord.entityIds, ['0', '1']);

    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_requests_total'), 3);
    assert.equal(
      await metricValue(metrics, 'orchestrator_inference_log_records_total', { model: 'logged' }),
      6,
    );
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_dropped_total'), 0);
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_buffer_depth'), 0);
    assert.deepEqual(await inferenceLogger.close(), { dropped: 0 });
  });

  test('unsampled requests are not logged, and a request without tracking id still is', async (t) => {
    const queue = await memoryQueue(t);
    const topic = uniqueName('logs');
    const sink = new QueueLogSink(queue, topic);
    const draws = [0.9, 0.1];
    const { inferenceLogger } = newLogger(sink, { random: () => draws.shift() ?? 0.5 });
    const snapshot = loggedModel({ logging_perc: 50 });
    const context = await servePoint(snapshot, 2, '');
    assert.equal(inferenceLogger.log(context), 'not_sampled');
    assert.equal(inferenceLogger.log(context), 'queued');
    assert.equal(inferenceLogger.log(await servePoint(loggedModel({ logging_perc: 0 }), 1)), 'not_sampled');
    await inferenceLogger.close();
    const { messages } = await collect(queue, topic);
    await eventually(() => messages.length === 1, 5000, 'one record');
    const record = parseLogRecord(messages[0]!.payload);
    assert.match(record.trackingId, /^[0-9a-f-]{36}$/);
    assert.equal(messages[0]!.key, record.trackingId);
  });

  test('a full buffer drops and counts without blocking when publishing hangs; close gives up in time', async (t) => {
    const inner = await memoryQueue(t);
    let publishes = 0;
    const hanging = queueWith(inner, () => {
      publishes++;
      return new Promise<PublishResult>(() => {});
    });
    const { metrics, inferenceLogger, lines } = newLogger(new QueueLogSink(hanging, uniqueName('logs')), {
      maxBuffered: 5,
      concurrency: 1,
      writeTimeoutMs: 60_000,
    });
    const context = await servePoint(loggedModel(), 3);
    const outcomes: LogOutcome[] = [];
    for (let i = 0; i < 20; i++) outcomes.push(inferenceLogger.log(context));
    // Every call returned before the worker even started its (hanging) publish.
    assert.equal(publishes, 0);
    assert.equal(outcomes.filter((o) => o === 'queued').length, 5);
    assert.equal(outcomes.filter((o) => o === 'dropped').length, 15);
    assert.equal(
      await metricValue(metrics, 'orchestrator_inference_log_dropped_total', { reason: 'buffer_full' }),
      15,
    );
    await eventually(() => publishes === 1, 5000, 'the worker to be stuck in a publish');
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_buffer_depth'), 4);
    // Still non-blocking while stuck: the freed slot takes one more, then drops again.
    assert.equal(inferenceLogger.log(context), 'queued');
    assert.equal(inferenceLogger.log(context), 'dropped');

    // close() waits for the stuck publish until its timeout, then gives up: on a clock the test moves.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let closed = false;
    const closing = inferenceLogger.close(60_000).then((outcome) => {
      closed = true;
      return outcome;
    });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    await turn();
    assert.equal(closed, false, 'close() waits while the publish hangs');
    t.mock.timers.tick(59_999);
    await turn();
    assert.equal(closed, false, 'not before its timeout');
    t.mock.timers.tick(1);
    assert.deepEqual(await closing, { dropped: 5 });
    assert.equal(
      await metricValue(metrics, 'orchestrator_inference_log_dropped_total', { reason: 'shutdown' }),
      5,
    );
    assert.ok(lines.some((l) => l.includes('5 requests unwritten')));
    assert.equal(inferenceLogger.log(context), 'closed');
  });

  test('the buffer is bounded by bytes too: past maxBufferedBytes requests are dropped and counted', async (t) => {
    const inner = await memoryQueue(t);
    let publishes = 0;
    const hanging = queueWith(inner, () => {
      publishes++;
      return new Promise<PublishResult>(() => {});
    });
    const context = await servePoint(loggedModel(), 20);
    const size = requestBytes(context);
    assert.ok(size > 20 * 8, `a 20-row request holds ${size} bytes`);
    const { metrics, inferenceLogger } = newLogger(new QueueLogSink(hanging, uniqueName('logs')), {
      maxBuffered: 1000,
      maxBufferedBytes: 3 * size + 1,
      concurrency: 1,
      writeTimeoutMs: 60_000,
    });
    const outcomes: LogOutcome[] = [];
    for (let i = 0; i < 10; i++) outcomes.push(inferenceLogger.log(context));
    assert.deepEqual(outcomes.slice(0, 4), ['queued', 'queued', 'queued', 'dropped']);
    assert.equal(outcomes.filter((o) => o === 'dropped').length, 7, 'far below maxBuffered entries');
    assert.equal(inferenceLogger.bufferedBytes, 3 * size);
    assert.equal(
      await metricValue(metrics, 'orchestrator_inference_log_dropped_total', { reason: 'buffer_full' }),
      7,
    );
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_buffer_bytes'), 3 * size);
    // A request the worker took no longer counts: one more fits, then the buffer is full again.
    await eventually(() => publishes === 1, 5000, 'the worker to be stuck in a publish');
    assert.equal(inferenceLogger.bufferedBytes, 2 * size);
    assert.equal(inferenceLogger.log(context), 'queued');
    assert.equal(inferenceLogger.log(context), 'dropped');
    assert.deepEqual(await inferenceLogger.close(100), { dropped: 3 });
    assert.equal(inferenceLogger.bufferedBytes, 0);

    // A request larger than the whole bound never fits, even in an empty buffer.
    const huge = await servePoint(loggedModel(), 100);
    assert.ok(requestBytes(huge) > 3 * size + 1);
    const fresh = newLogger(new QueueLogSink(hanging, uniqueName('logs')), {
      maxBufferedBytes: 3 * size + 1,
      writeTimeoutMs: 60_000,
    });
    assert.equal(fresh.inferenceLogger.log(huge), 'dropped');
    assert.equal(fresh.inferenceLogger.log(context), 'queued');
    await fresh.inferenceLogger.close(100);
  });

  test('the log topic is bounded by age and bytes, and an existing topic is brought to that retention', async (t) => {
    const queue = await memoryQueue(t);
    const topic = uniqueName('logs');
    // Created earlier with the queue's defaults (7 days, unbounded), as before retention was set.
    const old = await queue.ensureTopic(topic);
    assert.equal(old.maxBytes, undefined);
    const sink = new QueueLogSink(queue, topic);
    await sink.ensureTopic();
    const config = await queue.describeTopic(topic);
    assert.equal(config.retentionMs, DEFAULT_LOG_TOPIC_RETENTION.retentionMs);
    assert.equal(config.maxBytes, DEFAULT_LOG_TOPIC_RETENTION.maxBytes);
    assert.equal(DEFAULT_LOG_TOPIC_RETENTION.retentionMs, 3_600_000);
    assert.equal(DEFAULT_LOG_TOPIC_RETENTION.maxBytes, 64 * 1024 * 1024);

    const short = uniqueName('logs');
    await new QueueLogSink(queue, short, { retentionMs: 60_000, maxBytes: 1024 * 1024 }).ensureTopic();
    const shortConfig = await queue.describeTopic(short);
    assert.equal(shortConfig.retentionMs, 60_000);
    assert.equal(shortConfig.maxBytes, 1024 * 1024);
    assert.equal(shortConfig.dedupWindowMs, 60_000, 'the dedup window never outlasts retention');
  });

  test('failed publishes are retried a bounded number of times, then counted, logged and dropped', async (t) => {
    const inner = await memoryQueue(t);
    let attempts = 0;
    const failing = queueWith(inner, async () => {
      attempts++;
      throw new LatticeError('UNAVAILABLE', 'queue is down');
    });
    const { metrics, inferenceLogger, lines } = newLogger(new QueueLogSink(failing, uniqueName('logs')), {
      maxAttempts: 3,
      retryBackoffMs: [1, 2],
    });
    assert.equal(
      inferenceLogger.log(await servePoint(loggedModel({ log_batch_size: 2 }), 3, 'req-f')),
      'queued',
    );
    await eventually(() => lines.length >= 2, 5000, 'two dropped-record log lines');
    assert.equal(attempts, 6);
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_publish_errors_total'), 6);
    assert.equal(
      await metricValue(metrics, 'orchestrator_inference_log_dropped_total', { reason: 'publish_failed' }),
      2,
    );
    const line = JSON.parse(lines[0]!) as { msg: string; messageId: string; err: string };
    assert.match(line.msg, /dropped a record after 3 attempts/);
    assert.equal(line.messageId, 'req-f:0');
    assert.match(line.err, /queue is down/);
    await inferenceLogger.close();
  });

  test('a retried publish whose first attempt was stored is de-duplicated by its message id', async (t) => {
    const queue = await memoryQueue(t);
    const topic = uniqueName('logs');
    let first = true;
    // The first publish is stored, but its answer is lost: the logger cannot know and retries.
    const lossy = queueWith(queue, async (t: string, payload: Uint8Array, options?: PublishOptions) => {
      const result = await queue.publish(t, payload, options);
      if (first) {
        first = false;
        throw new LatticeError('DEADLINE_EXCEEDED', 'no answer');
      }
      return result;
    });
    const { metrics, inferenceLogger } = newLogger(new QueueLogSink(lossy, topic), { retryBackoffMs: [1] });
    inferenceLogger.log(await servePoint(loggedModel(), 2, 'req-d'));
    await inferenceLogger.close();
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_records_total'), 1);
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_publish_errors_total'), 1);
    const { messages } = await collect(queue, topic);
    await eventually(() => messages.length >= 1, 5000, 'the record');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(messages.length, 1);
    assert.equal(messages[0]!.messageId, 'req-d:0');
  });

  test('a record larger than the topic allows is split in halves until it fits', async (t) => {
    const queue = await memoryQueue(t);
    const topic = uniqueName('logs');
    const context = await servePoint(loggedModel({ log_batch_size: 500 }), 8, 'req-big');
    const [whole] = await buildLogRecords(context);
    const size = OrchestratorLog.encode(whole!).finish().length;
    // Room for about a third of the record (plus the key and id headers).
    const sink = new QueueLogSink(queue, topic, {
      maxMessageBytes: Math.ceil(size / 3) + 100,
      deadLetterTopic: false,
    });
    const { metrics, inferenceLogger } = newLogger(sink);
    inferenceLogger.log(context);
    await inferenceLogger.close();
    const { messages } = await collect(queue, topic);
    await eventually(
      async () =>
        messages.length === (await metricValue(metrics, 'orchestrator_inference_log_records_total')),
      5000,
      'every part',
    );
    assert.ok(messages.length >= 3, `${messages.length} parts`);
    const records = messages.map((m) => parseLogRecord(m.payload));
    assert.deepEqual(
      records.flatMap((r) => r.entityIds),
      Array.from({ length: 8 }, (_, i) => `item-${i}`),
    );
    for (const [i, message] of messages.entries()) {
      assert.match(message.messageId!, /^req-big:0(\.[01])+$/);
      assert.equal(`req-big:0.${records[i]!.metadata['part']}`, message.messageId);
    }
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_dropped_total'), 0);
  });

  test('log() never throws, even on a context it cannot read', async (t) => {
    const queue = await memoryQueue(t);
    const { inferenceLogger } = newLogger(new QueueLogSink(queue, uniqueName('logs')));
    const broken = { trackingId: 'x' } as unknown as ExecutionContext;
    assert.equal(inferenceLogger.log(broken), 'dropped');
    await inferenceLogger.close();
  });

  test('close() flushes what is buffered', async (t) => {
    const inner = await memoryQueue(t);
    const topic = uniqueName('logs');
    // A slow queue: each publish takes a few milliseconds (the scenario, not a wait for a condition).
    const slow = queueWith(inner, async (t, payload, options) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return inner.publish(t, payload, options);
    });
    const { metrics, inferenceLogger } = newLogger(new QueueLogSink(slow, topic), { concurrency: 2 });
    const snapshot = loggedModel({ format: 'parquet', compression: 'gzip' });
    for (let i = 0; i < 12; i++) inferenceLogger.log(await servePoint(snapshot, 2, `flush-${i}`));
    assert.deepEqual(await inferenceLogger.close(10_000), { dropped: 0 });
    assert.equal(await metricValue(metrics, 'orchestrator_inference_log_records_total'), 12);
  });
});

describe('InferenceLogger to a log file', () => {
  test('the file sink writes length-delimited records that read back', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'lattice-logfile-')), 'inference.logs');
    const { inferenceLogger } = newLogger(new FileLogSink(path), { concurrency: 3 });
    const snapshot = loggedModel({ log_batch_size: 2, format: 'proto', compression: 'gzip' });
    for (let i = 0; i < 5; i++) inferenceLogger.log(await servePoint(snapshot, 3, `file-${i}`));
    await inferenceLogger.close();
    const records = await readLogFile(path);
    assert.equal(records.length, 10);
    assert.deepEqual(
      new Set(records.map((r) => r.trackingId)),
      new Set(['file-0', 'file-1', 'file-2', 'file-3', 'file-4']),
    );
    for (const record of records) await decodeLogRecord(record);
  });
});

const natsUrl = await realServer('nats');

describe('InferenceLogger on JetStream', { skip: !natsUrl }, () => {
  test('publishes records that a consumer group reads back', async () => {
    const queue = await createQueue({ kind: 'jetstream', servers: [natsUrl ?? ''] });
    const topic = uniqueName('inference_logs');
    try {
      const { metrics, inferenceLogger } = newLogger(
        new QueueLogSink(queue, topic, { deadLetterTopic: false }),
      );
      const snapshot = loggedModel({ log_batch_size: 2, format: 'parquet', compression: 'zstd' });
      const context = await servePoint(snapshot, 5, 'js-req');
      inferenceLogger.log(context);
      await inferenceLogger.close(10_000);
      assert.equal(await metricValue(metrics, 'orchestrator_inference_log_records_total'), 3);
      const { messages, consumer } = await collect(queue, topic);
      await eventually(() => messages.length === 3, 10_000, 'three records');
      await consumer.close();
      assert.deepEqual(
        messages.map((m) => [m.key, m.messageId]),
        [
          ['js-req', 'js-req:0'],
          ['js-req', 'js-req:1'],
          ['js-req', 'js-req:2'],
        ],
      );
      const decoded = await Promise.all(messages.map((m) => decodeLogRecord(parseLogRecord(m.payload))));
      assert.deepEqual(
        decoded.flatMap((d) => d.rows.map((r) => r.entityId)),
        ['item-0', 'item-1', 'item-2', 'item-3', 'item-4'],
      );
    } finally {
      await queue.deleteTopic(topic).catch(() => false);
      await queue.close();
    }
  });
});
