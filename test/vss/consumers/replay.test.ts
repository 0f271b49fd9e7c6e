/**
 * `replayDeadLetters` on every Queue adapter: dead letters made by the consumer runner go back to
 * their origin (all, the oldest N, or one by id), keep key, partition and headers, are not swallowed
 * by the origin's de-duplication, and leave the dead-letter topic only once re-published.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import {
  type Consumer,
  DeadLetterHeaders,
  deadLetterId,
  type Queue,
  type QueueMessage,
  TopicNotFoundError,
} from '../../../src/platform/queue/index.js';
import type { ConsumerRunner } from '../../../src/vss/consumers/consumer-runner.js';
import { REPLAY_GROUP, ReplayHeaders, replayDeadLetters } from '../../../src/vss/consumers/replay.js';
import { eventually, uniqueName } from '../../support/servers.js';
import {
  dropTopic,
  encode,
  KeyValueProcessor,
  type KvEvent,
  queuesUnderTest,
  startRunner,
  testTopic,
} from './runner-harness.js';

/** The id of a message's event; undefined for the malformed one. */
function idOf(message: QueueMessage): string | undefined {
  try {
    return (JSON.parse(new TextDecoder().decode(message.payload)) as KvEvent).id;
  } catch {
    return undefined;
  }
}

for (const adapter of queuesUnderTest()) {
  describe(`vss dead-letter replay on ${adapter.name}`, { skip: adapter.skip }, () => {
    let queue: Queue;
    const topics: string[] = [];
    const runners: ConsumerRunner<KvEvent>[] = [];
    const readers: Consumer[] = [];

    before(async () => {
      queue = await adapter.open();
    });

    after(async () => {
      await Promise.all([...runners.map((r) => r.close()), ...readers.map((r) => r.close())]);
      for (const topic of topics) await dropTopic(queue, topic);
      await queue.close();
      adapter.cleanup?.();
    });

    /** A topic with a running consumer whose processor rejects `ghost*` ids until told otherwise. */
    async function setUp(
      partitions = 4,
    ): Promise<{ topic: string; processor: KeyValueProcessor; seen: QueueMessage[] }> {
      const topic = await testTopic(queue, { partitions });
      topics.push(topic);
      const processor = new KeyValueProcessor();
      for (let i = 0; i < 10; i++) processor.unknown.add(`ghost${i}`);
      runners.push(await startRunner(queue, topic, processor));
      // A second group sees what reaches the origin topic, replays included.
      const seen: QueueMessage[] = [];
      readers.push(await queue.subscribe(topic, 'spy', (message) => void seen.push(message)));
      return { topic, processor, seen };
    }

    const waitingOn = async (topic: string) =>
      (await queue.groupLag(`${topic}-dlq`, REPLAY_GROUP)).reduce((n, p) => n + p.pending + p.unsettled, 0);

    async function deadLettered(topic: string, count: number): Promise<void> {
      await eventually(async () => (await waitingOn(topic)) === count, 10_000, `${count} dead letters`);
    }

    it('replays every dead letter to its origin, with its key, partition and headers, past the dedup window', async () => {
      const { topic, processor, seen } = await setUp();
      await queue.publish(topic, encode({ id: 'ghost0', value: 1, n: 0 }), {
        key: 'ghost0',
        messageId: 'first-ghost',
        headers: { 'x-trace': 't0' },
      });
      // Keyless, aimed at a partition (as EOF markers are).
      await queue.publish(topic, encode({ id: 'ghost1', value: 2, n: 1 }), { partition: 3 });
      await queue.publish(topic, encode('{broken'), { key: 'x' });
      await deadLettered(topic, 3);

      processor.unknown.clear(); // the cause is fixed
      const report = await replayDeadLetters({ queue, topic, idleMs: 500 });
      // `remaining` may already count the broken event, rejected again (below).
      assert.deepEqual(
        { ...report, remaining: undefined },
        {
          topic,
          deadLetterTopic: `${topic}-dlq`,
          replayed: 3,
          unreplayable: 0,
          remaining: undefined,
        },
      );
      await eventually(
        () => processor.store.get('ghost0') === 1 && processor.store.get('ghost1') === 2,
        10_000,
        'replayed events applied',
      );
      await eventually(
        () => seen.filter((m) => m.headers[ReplayHeaders.replayedFrom]).length === 3,
        5000,
        'replays on the origin',
      );
      const ghost0 = seen.find((m) => m.headers[ReplayHeaders.replayedFrom] && idOf(m) === 'ghost0')!;
      assert.equal(ghost0.key, 'ghost0');
      assert.equal(ghost0.headers['x-trace'], 't0');
      assert.equal(ghost0.headers[ReplayHeaders.originalMessageId], 'first-ghost');
      assert.notEqual(ghost0.messageId, 'first-ghost', 'a new id, not swallowed by de-duplication');
      assert.equal(ghost0.headers[DeadLetterHeaders.lastError], undefined, 'dead-letter headers dropped');
      const ghost1 = seen.find((m) => m.headers[ReplayHeaders.replayedFrom] && idOf(m) === 'ghost1')!;
      assert.equal(ghost1.partition, 3, 'back on its partition');
      // The broken one is rejected again: a new dead letter, for the next replay.
      await deadLettered(topic, 1);
    });

    it('replays only the oldest N with a limit', async () => {
      // One partition: dead letters of several partitions are written in whatever order their batches end.
      const { topic, processor } = await setUp(1);
      for (let i = 0; i < 5; i++) {
        await queue.publish(topic, encode({ id: `ghost${i}`, value: i, n: i }), { key: `ghost${i}` });
      }
      await deadLettered(topic, 5);
      processor.unknown.clear();
      const first = await replayDeadLetters({ queue, topic, limit: 2, idleMs: 500 });
      assert.equal(first.replayed, 2);
      assert.equal(first.remaining, 3);
      await eventually(() => processor.store.size === 2, 10_000, 'two applied');
      assert.deepEqual([...processor.store.keys()].sort(), ['ghost0', 'ghost1']);
      const rest = await replayDeadLetters({ queue, topic, idleMs: 500 });
      assert.equal(rest.replayed, 3);
      assert.equal(rest.remaining, 0);
      await eventually(() => processor.store.size === 5, 10_000, 'all applied');
    });

    it('replays one dead letter by its id or by the original message id, leaving the others', async () => {
      const { topic, processor } = await setUp();
      const sequences: number[] = [];
      for (let i = 0; i < 4; i++) {
        const published = await queue.publish(topic, encode({ id: `ghost${i}`, value: i, n: i }), {
          key: `ghost${i}`,
          messageId: `event-${i}`,
        });
        sequences.push(published.sequence);
      }
      await deadLettered(topic, 4);
      processor.unknown.clear();
      const byLetterId = await replayDeadLetters({
        queue,
        topic,
        id: deadLetterId(topic, 'vss-test', sequences[2]!),
        idleMs: 500,
      });
      assert.equal(byLetterId.replayed, 1);
      assert.equal(byLetterId.remaining, 3);
      await eventually(() => processor.store.has('ghost2'), 10_000, 'ghost2 applied');
      const byOriginalId = await replayDeadLetters({ queue, topic, id: 'event-0', idleMs: 500 });
      assert.equal(byOriginalId.replayed, 1);
      assert.equal(byOriginalId.remaining, 2);
      await eventually(() => processor.store.has('ghost0'), 10_000, 'ghost0 applied');
      const unknown = await replayDeadLetters({ queue, topic, id: 'no-such-id', idleMs: 500 });
      assert.equal(unknown.replayed, 0);
      assert.equal(unknown.remaining, 2);
      assert.deepEqual([...processor.store.keys()].sort(), ['ghost0', 'ghost2']);
    });

    it('refuses a missing topic and a bad limit; an empty dead-letter topic replays nothing', async () => {
      await assert.rejects(replayDeadLetters({ queue, topic: uniqueName('missing') }), TopicNotFoundError);
      const { topic } = await setUp();
      await assert.rejects(replayDeadLetters({ queue, topic, limit: 0 }), (err) =>
        isLatticeError(err, 'INVALID_ARGUMENT'),
      );
      const report = await replayDeadLetters({ queue, topic, idleMs: 200 });
      assert.equal(report.replayed, 0);
      assert.equal(report.remaining, 0);
    });
  });
}
