/**
 * The vss consumer runner on every Queue adapter, driving a small in-memory processor: batching and
 * per-key order, acknowledgement after apply, crashes, rejections, transient failures and their
 * dead letters, metrics.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Metrics } from '../../../src/platform/metrics/index.js';
import {
  type Consumer,
  DeadLetterHeaders,
  MemoryQueue,
  type Queue,
  type QueueMessage,
} from '../../../src/platform/queue/index.js';
import { eventually } from '../../support/servers.js';
import {
  dropTopic,
  encode,
  KeyValueProcessor,
  publishEvents,
  queuesUnderTest,
  startRunner,
  testTopic,
} from './runner-harness.js';

const read = (message: QueueMessage) => new TextDecoder().decode(message.payload);

async function lagOf(queue: Queue, topic: string): Promise<{ pending: number; unsettled: number }> {
  const positions = await queue.groupLag(topic, 'vss-test');
  return positions.reduce(
    (sum, p) => ({ pending: sum.pending + p.pending, unsettled: sum.unsettled + p.unsettled }),
    { pending: 0, unsettled: 0 },
  );
}

/** Asserts each id's events were applied once each, in publish order. */
function assertOncePerEventInOrder(processor: KeyValueProcessor, keys: number, count: number): void {
  assert.equal(processor.history.length, count, 'every event applied exactly once');
  assert.equal(new Set(processor.history.map((e) => e.n)).size, count);
  for (let k = 0; k < keys; k++) {
    const order = processor.appliedOrder(`k${k}`);
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
      `events of k${k} applied in publish order`,
    );
  }
}

for (const adapter of queuesUnderTest()) {
  describe(`vss consumer runner on ${adapter.name}`, { skip: adapter.skip }, () => {
    let queue: Queue;
    const topics: string[] = [];
    const readers: Consumer[] = [];

    before(async () => {
      queue = await adapter.open();
    });

    after(async () => {
      await Promise.all(readers.map((r) => r.close()));
      for (const topic of topics) await dropTopic(queue, topic);
      await queue.close();
      adapter.cleanup?.();
    });

    async function topicWith(partitions = 4): Promise<string> {
      const topic = await testTopic(queue, { partitions });
      topics.push(topic);
      return topic;
    }

    /** Everything that reaches the topic's dead-letter topic. */
    async function deadLetters(topic: string): Promise<QueueMessage[]> {
      const letters: QueueMessage[] = [];
      readers.push(
        await queue.subscribe(`${topic}-dlq`, 'test-operators', (message) => {
          letters.push(message);
        }),
      );
      return letters;
    }

    it('applies events in batches, in publish order per key across batches, and acknowledges them', async () => {
      const topic = await topicWith();
      const processor = new KeyValueProcessor();
      const metrics = new Metrics();
      const expected = await publishEvents(queue, topic, 300, 24);
      const runner = await startRunner(queue, topic, processor, { metrics });
      // More while it runs: the stream goes on across batches.
      for (const [id, value] of await publishEvents(queue, topic, 200, 24, 300)) expected.set(id, value);
      await eventually(() => processor.history.length >= 500, 20_000, 'every event applied');
      assertOncePerEventInOrder(processor, 24, 500);
      assert.deepEqual(processor.store, expected);
      assert.ok(
        processor.batchSizes.every((size) => size <= 16),
        `batches up to batchSize: ${processor.batchSizes}`,
      );
      assert.ok(
        processor.batchSizes.some((size) => size > 1),
        'events were batched',
      );
      await eventually(
        async () => {
          const lag = await lagOf(queue, topic);
          return lag.pending === 0 && lag.unsettled === 0;
        },
        10_000,
        'everything acknowledged',
      );
      await eventually(
        async () =>
          (await metrics.scrape()).body.includes(
            `vss_consumer_lag{topic="${topic}",group="vss-test",partition="3"} 0`,
          ),
        5000,
        'the lag gauge',
      );
      const { body } = await metrics.scrape();
      assert.match(
        body,
        new RegExp(`vss_consumer_events_total\\{topic="${topic}",kind="kv",outcome="applied"\\} 500`),
      );
      assert.match(body, new RegExp(`vss_consumer_batch_seconds_count\\{topic="${topic}",kind="kv"\\} \\d+`));
      await runner.close();
    });

    it('acknowledges nothing before apply resolved', async () => {
      const topic = await topicWith();
      const processor = new KeyValueProcessor();
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      processor.beforeApply = () => held;
      await publishEvents(queue, topic, 20, 8);
      const runner = await startRunner(queue, topic, processor);
      await eventually(async () => (await lagOf(queue, topic)).unsettled === 20, 10_000, 'all delivered');
      await eventually(() => processor.calls >= 1, 5000, 'an apply call');
      assert.deepEqual(await lagOf(queue, topic), { pending: 0, unsettled: 20 }, 'none acknowledged');
      release();
      await eventually(async () => (await lagOf(queue, topic)).unsettled === 0, 10_000, 'all acknowledged');
      assertOncePerEventInOrder(processor, 8, 20);
      await runner.close();
    });

    it('after a crash, redelivers what was not acknowledged, keeps per-key order, and applies each event once', async () => {
      const topic = await topicWith();
      const processor = new KeyValueProcessor();
      const stuck: Array<(err: Error) => void> = [];
      // The first runner applies some batches, then hangs inside apply: it "dies" there.
      processor.beforeApply = () =>
        processor.history.length < 24
          ? Promise.resolve()
          : new Promise<void>((_, reject) => stuck.push(reject));
      const expected = await publishEvents(queue, topic, 96, 8);
      const first = await startRunner(queue, topic, processor);
      await eventually(() => stuck.length > 0, 10_000, 'a batch hanging in apply');
      await first.abort();
      processor.beforeApply = undefined;
      // Newer events are there at once; the dead runner's messages come back only after the ack wait.
      for (const [id, value] of await publishEvents(queue, topic, 64, 8, 96)) expected.set(id, value);
      const second = await startRunner(queue, topic, processor);
      await eventually(() => processor.history.length >= 160, 20_000, 'every event applied');
      for (const reject of stuck) reject(new Error('the first runner died'));
      assertOncePerEventInOrder(processor, 8, 160);
      assert.deepEqual(processor.store, expected);
      await eventually(async () => (await lagOf(queue, topic)).unsettled === 0, 10_000, 'all acknowledged');
      await second.close();
    });

    it('hands held messages back on close, cutting a retry wait short, for the next runner', async () => {
      const topic = await topicWith(2);
      const processor = new KeyValueProcessor();
      processor.failNext = 1_000_000;
      const expected = await publishEvents(queue, topic, 40, 4);
      const first = await startRunner(queue, topic, processor, {
        retry: { attempts: 5, baseMs: 60_000, maxMs: 60_000 },
      });
      await eventually(() => processor.calls >= 2, 5000, 'both partitions failing');
      await first.close();
      processor.failNext = 0;
      const second = await startRunner(queue, topic, processor);
      await eventually(() => processor.history.length >= 40, 10_000, 'every event applied');
      assertOncePerEventInOrder(processor, 4, 40);
      assert.deepEqual(processor.store, expected);
      await second.close();
    });

    it('dead-letters rejected events with reason and field, without holding up the stream', async () => {
      const topic = await topicWith(1);
      const processor = new KeyValueProcessor();
      processor.unknown.add('ghost');
      const letters = await deadLetters(topic);
      const metrics = new Metrics();
      const runner = await startRunner(queue, topic, processor, { metrics });
      const publish = (payload: string, key: string) => queue.publish(topic, encode(payload), { key });
      await publish(JSON.stringify({ id: 'a', value: 1, n: 0 }), 'a');
      await publish('{not json', 'x');
      await publish(JSON.stringify({ value: 1 }), 'x');
      await publish(JSON.stringify({ id: 'b', value: 'high' }), 'b');
      await publish(JSON.stringify({ id: 'ghost', value: 3, n: 4 }), 'ghost');
      await publish(JSON.stringify({ id: 'a', value: 2, n: 5 }), 'a');
      await eventually(
        () => letters.length === 4 && processor.store.get('a') === 2,
        10_000,
        'the dead letters',
      );
      const byError = new Map(letters.map((l) => [l.headers[DeadLetterHeaders.lastError], l]));
      assert.deepEqual([...byError.keys()].sort(), [
        'id is required',
        'payload is not JSON',
        'unknown id ghost',
        'value must be a finite number',
      ]);
      assert.equal(byError.get('id is required')?.headers[DeadLetterHeaders.lastErrorField], 'id');
      assert.equal(
        byError.get('value must be a finite number')?.headers[DeadLetterHeaders.lastErrorField],
        'value',
      );
      const ghost = byError.get('unknown id ghost')!;
      assert.equal(ghost.headers[DeadLetterHeaders.originTopic], topic);
      assert.equal(ghost.headers[DeadLetterHeaders.originGroup], 'vss-test');
      assert.equal(ghost.key, 'ghost');
      assert.equal(read(ghost), JSON.stringify({ id: 'ghost', value: 3, n: 4 }));
      assert.deepEqual(processor.appliedOrder('a'), [0, 5]);
      const { body } = await metrics.scrape();
      assert.match(
        body,
        new RegExp(`vss_consumer_events_total\\{topic="${topic}",kind="kv",outcome="rejected"\\} 4`),
      );
      assert.match(
        body,
        new RegExp(`vss_consumer_dead_letters_total\\{topic="${topic}",kind="kv",reason="rejected"\\} 4`),
      );
      await runner.close();
    });

    it('retries a batch after transient failures with backoff, then applies it', async () => {
      const topic = await topicWith();
      const processor = new KeyValueProcessor();
      processor.failNext = 2;
      const metrics = new Metrics();
      const expected = await publishEvents(queue, topic, 30, 6);
      const runner = await startRunner(queue, topic, processor, { metrics });
      await eventually(() => processor.history.length >= 30, 10_000, 'every event applied');
      assertOncePerEventInOrder(processor, 6, 30);
      assert.deepEqual(processor.store, expected);
      const { body } = await metrics.scrape();
      assert.match(body, new RegExp(`vss_consumer_retries_total\\{topic="${topic}",kind="kv"\\} 2`));
      assert.match(
        body,
        new RegExp(`vss_consumer_events_total\\{topic="${topic}",kind="kv",outcome="retried"\\} \\d+`),
      );
      await runner.close();
    });

    it('dead-letters events still failing after the last attempt, with later events of their key, and goes on', async () => {
      const topic = await topicWith(1);
      const processor = new KeyValueProcessor();
      processor.failing.add('bad');
      const letters = await deadLetters(topic);
      const metrics = new Metrics();
      const events = [
        { id: 'a1', key: 'A' },
        { id: 'bad', key: 'B' },
        { id: 'b2', key: 'B' },
        { id: 'a2', key: 'A' },
      ];
      for (const [n, e] of events.entries()) {
        await queue.publish(topic, encode({ id: e.id, value: n, n }), { key: e.key });
      }
      // One batch of the four, however slowly they arrive: the divert is within a batch.
      const runner = await startRunner(queue, topic, processor, { metrics, batchSize: 4, lingerMs: 60_000 });
      await eventually(() => letters.length === 2, 10_000, 'two dead letters');
      assert.deepEqual([...processor.store.keys()].sort(), ['a1', 'a2'], 'the rest of the batch was applied');
      const [bad, behind] = [...letters].sort((x, y) => x.sequence - y.sequence);
      assert.equal(JSON.parse(read(bad!)).id, 'bad');
      assert.match(
        bad!.headers[DeadLetterHeaders.lastError] ?? '',
        /transient failure persisted after 3 attempts: .*store unavailable for bad/,
      );
      assert.equal(JSON.parse(read(behind!)).id, 'b2');
      assert.match(behind!.headers[DeadLetterHeaders.lastError] ?? '', /earlier event of key "B"/);
      // The partition is free again: the next batch (four more events) is applied.
      for (let n = 4; n < 8; n++) await queue.publish(topic, encode({ id: 'c', value: n, n }), { key: 'C' });
      await eventually(() => processor.store.get('c') === 7, 10_000, 'later events');
      const { body } = await metrics.scrape();
      assert.match(
        body,
        new RegExp(`vss_consumer_dead_letters_total\\{topic="${topic}",kind="kv",reason="exhausted"\\} 2`),
      );
      assert.match(body, new RegExp(`vss_consumer_retries_total\\{topic="${topic}",kind="kv"\\} 2`));
      await runner.close();
    });
  });
}

describe('vss consumer runner on a journaled memory queue that restarts', () => {
  it('applies what was unacknowledged when the process died, before anything newer', async (t) => {
    const journalDir = mkdtempSync(join(tmpdir(), 'lattice-runner-restart-'));
    t.after(() => rmSync(journalDir, { recursive: true, force: true }));
    const processor = new KeyValueProcessor();
    const stuck: Array<(err: Error) => void> = [];
    processor.beforeApply = () =>
      processor.history.length < 16
        ? Promise.resolve()
        : new Promise<void>((_, reject) => stuck.push(reject));
    let queue = await MemoryQueue.open({ journalDir });
    const topic = await testTopic(queue, { ackWaitMs: 60_000 });
    const expected = await publishEvents(queue, topic, 64, 8);
    const first = await startRunner(queue, topic, processor);
    await eventually(() => stuck.length > 0, 10_000, 'a batch hanging in apply');
    await first.abort();
    await queue.close();
    processor.beforeApply = undefined;

    queue = await MemoryQueue.open({ journalDir });
    for (const [id, value] of await publishEvents(queue, topic, 32, 8, 64)) expected.set(id, value);
    const second = await startRunner(queue, topic, processor);
    await eventually(() => processor.history.length >= 96, 20_000, 'every event applied');
    for (const reject of stuck) reject(new Error('the first process died'));
    assertOncePerEventInOrder(processor, 8, 96);
    assert.deepEqual(processor.store, expected);
    await second.close();
    await queue.close();
  });
});
