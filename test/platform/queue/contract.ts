/**
 * The Queue contract: one suite that every adapter runs (memory, memory with a journal, JetStream),
 * so the adapters cannot drift apart. Each test uses its own topic and deletes it at the end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import {
  type Consumer,
  DeadLetterHeaders,
  MessageTooLargeError,
  partitionForKey,
  type Queue,
  type QueueMessage,
  type SubscribeOptions,
  TopicConflictError,
  TopicNotFoundError,
  type TopicOptions,
} from '../../../src/platform/queue/index.js';
import { eventually, uniqueName } from '../../support/servers.js';

export interface QueueAdapterUnderTest {
  name: string;
  /** Set when the adapter's server is missing on this machine: the suite is skipped. */
  skip?: boolean;
  open(): Promise<Queue>;
  /** Opens the adapter against something that does not answer; must fail within a timeout. */
  openUnreachable?: () => Promise<Queue>;
  /** Runs after the queue closed (temporary directories). */
  cleanup?: () => Promise<void>;
}

const text = (value: string) => new TextEncoder().encode(value);
const read = (message: QueueMessage) => new TextDecoder().decode(message.payload);
const FAST_RETRY = { retryBackoffMs: [20] } satisfies SubscribeOptions;

export function queueContract(adapter: QueueAdapterUnderTest): void {
  describe(`Queue contract: ${adapter.name}`, { skip: adapter.skip }, () => {
    let queue: Queue;
    const topics: string[] = [];
    const consumers: Consumer[] = [];

    before(async () => {
      queue = await adapter.open();
    });

    after(async () => {
      await Promise.all(consumers.map((c) => c.close()));
      for (const topic of topics) await queue.deleteTopic(topic).catch(() => false);
      await queue.close();
      await adapter.cleanup?.();
    });

    async function topicWith(options: TopicOptions = {}): Promise<string> {
      const topic = uniqueName('qc');
      topics.push(topic, `${topic}-dlq`);
      await queue.ensureTopic(topic, options);
      return topic;
    }

    /** Subscribes and records every delivery; `handle` decides what to do (default: return → auto-ack). */
    async function record(
      topic: string,
      group: string,
      handle: (message: QueueMessage) => void | Promise<void> = () => {},
      options: SubscribeOptions = {},
    ): Promise<{ seen: QueueMessage[]; consumer: Consumer }> {
      const seen: QueueMessage[] = [];
      const consumer = await queue.subscribe(
        topic,
        group,
        async (message) => {
          seen.push(message);
          await handle(message);
        },
        options,
      );
      consumers.push(consumer);
      return { seen, consumer };
    }

    it('publishes and delivers a message with its key, id, headers and position, then acks it', async () => {
      const topic = await topicWith({ partitions: 3 });
      const published = await queue.publish(topic, text('hello'), {
        key: 'user-1',
        messageId: 'msg-1',
        headers: { 'Content-Type': 'text/plain', 'x-trace': 'abc' },
      });
      assert.equal(published.duplicate, false);
      assert.equal(published.partition, partitionForKey('user-1', 3));
      const second = await queue.publish(topic, text('second'), { key: 'user-1' });
      assert.ok(second.sequence > published.sequence, 'sequences increase in publish order');

      const { seen } = await record(topic, 'readers');
      await eventually(() => seen.length === 2, 5000, 'two deliveries');
      const [first] = seen;
      assert.ok(first);
      assert.equal(read(first), 'hello');
      assert.equal(first.topic, topic);
      assert.equal(first.key, 'user-1');
      assert.equal(first.messageId, 'msg-1');
      assert.deepEqual({ ...first.headers }, { 'Content-Type': 'text/plain', 'x-trace': 'abc' });
      assert.equal(first.partition, published.partition);
      assert.equal(first.sequence, published.sequence);
      assert.equal(first.deliveryCount, 1);
      assert.ok(Math.abs(first.publishedAt.getTime() - Date.now()) < 60_000);
      assert.equal(first.settled, true, 'auto-acked after the handler returned');
      assert.equal(seen[1]?.messageId, undefined);
    });

    it('rejects unknown topics, bad names, reserved headers and partition changes with typed errors', async () => {
      const topic = await topicWith({ partitions: 2 });
      const missing = uniqueName('missing');
      await assert.rejects(queue.publish(missing, text('x')), TopicNotFoundError);
      await assert.rejects(
        queue.subscribe(missing, 'g', () => {}),
        TopicNotFoundError,
      );
      await assert.rejects(queue.describeTopic(missing), TopicNotFoundError);
      await assert.rejects(queue.ensureTopic('bad.name'), (err) => isLatticeError(err, 'INVALID_ARGUMENT'));
      await assert.rejects(
        queue.subscribe(topic, 'bad group', () => {}),
        (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
      );
      await assert.rejects(
        queue.publish(topic, text('x'), { headers: { 'Nats-Expected-Stream': 'x' } }),
        (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
      );
      await assert.rejects(
        queue.subscribe(topic, 'g', () => {}, { partitions: [2] }),
        (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
      );
      await assert.rejects(queue.ensureTopic(topic, { partitions: 3 }), (err) => {
        assert.ok(err instanceof TopicConflictError);
        assert.equal(err.code, 'FAILED_PRECONDITION');
        assert.match(err.message, /2 partitions/);
        return true;
      });
    });

    it('ensures topics idempotently, with a dead-letter topic, and deletes them', async () => {
      const topic = await topicWith({ partitions: 2, maxDeliver: 4, ackWaitMs: 1500 });
      const again = await queue.ensureTopic(topic, { partitions: 2, maxDeliver: 4, ackWaitMs: 1500 });
      assert.deepEqual(await queue.describeTopic(topic), again);
      assert.equal(again.partitions, 2);
      assert.equal(again.maxDeliver, 4);
      assert.equal(again.ackWaitMs, 1500);
      assert.equal(again.deadLetterTopic, `${topic}-dlq`);
      assert.equal((await queue.describeTopic(`${topic}-dlq`)).deadLetterTopic, false);
      const updated = await queue.ensureTopic(topic, { partitions: 2, maxDeliver: 6 });
      assert.equal(updated.maxDeliver, 6);
      assert.equal(await queue.deleteTopic(topic), true);
      assert.equal(await queue.deleteTopic(topic), false);
      await assert.rejects(queue.publish(topic, text('x')), TopicNotFoundError);
    });

    it('redelivers a nak(delay) message no sooner than the delay', async () => {
      const topic = await topicWith();
      let nakAt = 0;
      const { seen } = await record(topic, 'g', async (message) => {
        if (message.deliveryCount === 1) {
          nakAt = Date.now();
          await message.nak(400);
        }
      });
      await queue.publish(topic, text('later'));
      await eventually(() => seen.length === 2, 5000, 'the redelivery');
      const redelivered = seen[1]!;
      assert.equal(redelivered.deliveryCount, 2);
      assert.equal(redelivered.sequence, seen[0]!.sequence);
      // A lower bound: it holds however busy the machine is.
      const waited = Date.now() - nakAt;
      assert.ok(waited >= 400, `redelivered after ${waited} ms`);
    });

    it('redelivers a handler failure with backoff, keeping later messages of the partition waiting', async () => {
      const topic = await topicWith();
      const order: string[] = [];
      await record(
        topic,
        'g',
        (message) => {
          order.push(`${read(message)}#${message.deliveryCount}`);
          if (read(message) === 'first' && message.deliveryCount === 1) throw new Error('transient');
        },
        { retryBackoffMs: [150] },
      );
      await queue.publish(topic, text('first'), { key: 'k' });
      await queue.publish(topic, text('second'), { key: 'k' });
      await eventually(() => order.length === 3, 5000, 'three deliveries');
      assert.deepEqual(order, ['first#1', 'first#2', 'second#1']);
    });

    it('redelivers unacked messages after ackWait when their consumer closes', async () => {
      const topic = await topicWith({ ackWaitMs: 1000 });
      const a = await record(topic, 'g', () => {}, { autoAck: false });
      await queue.publish(topic, text('unacked'));
      await eventually(() => a.seen.length === 1, 5000, 'the first delivery');
      const firstAt = Date.now();
      await a.consumer.close();
      await a.consumer.closed;
      const b = await record(topic, 'g');
      await eventually(() => b.seen.length === 1, 5000, 'the redelivery to the next member');
      const waited = Date.now() - firstAt;
      assert.equal(read(b.seen[0]!), 'unacked');
      assert.equal(b.seen[0]!.deliveryCount, 2);
      assert.ok(waited >= 900, `redelivered after ${waited} ms, before ackWait`);
    });

    it('keeps a message with a slow handler that reports progress (inProgress)', async () => {
      // 4 × 300 ms of work outlasts the 1000 ms ackWait; each progress report restarts it.
      const topic = await topicWith({ ackWaitMs: 1000 });
      const { seen } = await record(topic, 'g', async (message) => {
        if (read(message) !== 'slow') return;
        for (let i = 0; i < 4; i++) {
          // The slow work itself (the scenario), not a wait for a condition.
          await new Promise((resolve) => setTimeout(resolve, 300));
          await message.inProgress();
        }
      });
      await queue.publish(topic, text('slow'), { key: 'k' });
      await queue.publish(topic, text('next'), { key: 'k' });
      await eventually(() => seen.length >= 2, 5000, 'both messages');
      assert.deepEqual(
        seen.map((m) => `${read(m)}#${m.deliveryCount}`),
        ['slow#1', 'next#1'],
      );
    });

    it('dead-letters a message after maxDeliver attempts, with its origin in the headers', async () => {
      const topic = await topicWith({ maxDeliver: 3, partitions: 2 });
      let attempts = 0;
      const handled: string[] = [];
      await record(
        topic,
        'workers',
        (message) => {
          if (read(message) === 'poison') {
            attempts++;
            throw new Error(`boom ${attempts}`);
          }
          handled.push(read(message));
        },
        FAST_RETRY,
      );
      const dead = await record(`${topic}-dlq`, 'operators');
      const published = await queue.publish(topic, text('poison'), {
        key: 'k',
        messageId: 'poison-1',
        headers: { 'x-origin': 'test' },
      });
      await eventually(() => dead.seen.length === 1, 8000, 'the dead letter');
      const letter = dead.seen[0]!;
      assert.equal(read(letter), 'poison');
      assert.equal(letter.key, 'k');
      assert.equal(letter.headers['x-origin'], 'test');
      assert.equal(letter.headers[DeadLetterHeaders.originTopic], topic);
      assert.equal(letter.headers[DeadLetterHeaders.originPartition], String(published.partition));
      assert.equal(letter.headers[DeadLetterHeaders.originSequence], String(published.sequence));
      assert.equal(letter.headers[DeadLetterHeaders.originGroup], 'workers');
      assert.equal(letter.headers[DeadLetterHeaders.originMessageId], 'poison-1');
      assert.equal(letter.headers[DeadLetterHeaders.attempts], '3');
      assert.match(letter.headers[DeadLetterHeaders.lastError] ?? '', /boom 3/);
      assert.equal(attempts, 3);
      // The origin settled it: the next message of the same partition gets through, and no 4th attempt.
      await queue.publish(topic, text('healthy'), { key: 'k' });
      await eventually(() => handled.includes('healthy'), 5000, 'the next message');
      assert.equal(attempts, 3);
    });

    it('dead-letters at once on term(reason)', async () => {
      const topic = await topicWith();
      await record(topic, 'g', (message) => message.term('payload is not JSON'));
      const dead = await record(`${topic}-dlq`, 'operators');
      await queue.publish(topic, text('{oops'));
      await eventually(() => dead.seen.length === 1, 5000, 'the dead letter');
      assert.equal(dead.seen[0]!.headers[DeadLetterHeaders.attempts], '1');
      assert.equal(dead.seen[0]!.headers[DeadLetterHeaders.lastError], 'payload is not JSON');
    });

    it('stores a message once per messageId within the dedup window', async () => {
      const topic = await topicWith({ partitions: 2 });
      const first = await queue.publish(topic, text('a'), { key: 'k', messageId: 'id-a' });
      const again = await queue.publish(topic, text('a'), { key: 'k', messageId: 'id-a' });
      assert.equal(first.duplicate, false);
      assert.deepEqual(again, { partition: first.partition, sequence: first.sequence, duplicate: true });
      const other = await queue.publish(topic, text('b'), { key: 'k', messageId: 'id-b' });
      assert.equal(other.duplicate, false);
      // Without a key, a retried publish still reports where the original is.
      const keyless = await queue.publish(topic, text('c'), { messageId: 'id-c' });
      const keylessAgain = await queue.publish(topic, text('c'), { messageId: 'id-c' });
      assert.deepEqual(keylessAgain, { ...keyless, duplicate: true });
      const { seen } = await record(topic, 'g');
      // Same key, same partition, in order: once 'b' is in, a stored duplicate would have come before it.
      await eventually(() => seen.some((m) => read(m) === 'b'), 5000, 'message b');
      await eventually(() => seen.some((m) => read(m) === 'c'), 5000, 'message c');
      assert.deepEqual(
        seen.filter((m) => m.key === 'k').map((m) => m.messageId),
        ['id-a', 'id-b'],
      );
    });

    it('routes a key to one partition and delivers its messages in publish order', async () => {
      const topic = await topicWith({ partitions: 4 });
      const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
      for (let i = 0; i < 10; i++) {
        for (const key of keys) {
          const result = await queue.publish(topic, text(`${key}:${i}`), { key });
          assert.equal(result.partition, partitionForKey(key, 4));
        }
      }
      const keyless = new Set<number>();
      for (let i = 0; i < 4; i++) keyless.add((await queue.publish(topic, text(`none:${i}`))).partition);
      assert.equal(keyless.size, 4, 'keyless messages go round-robin');

      const { seen } = await record(topic, 'g', () => {}, { concurrency: 4 });
      await eventually(() => seen.length === 54, 8000, 'every message');
      for (const key of keys) {
        const mine = seen.filter((m) => m.key === key);
        assert.deepEqual(
          mine.map((m) => read(m)),
          Array.from({ length: 10 }, (_, i) => `${key}:${i}`),
        );
        assert.equal(new Set(mine.map((m) => m.partition)).size, 1);
      }
    });

    it('gives every consumer group every message', async () => {
      const topic = await topicWith({ partitions: 2 });
      const one = await record(topic, 'indexer');
      const two = await record(topic, 'auditor');
      for (let i = 0; i < 10; i++) await queue.publish(topic, text(`m${i}`), { messageId: `m${i}` });
      await eventually(() => one.seen.length === 10 && two.seen.length === 10, 5000, 'both groups');
      const ids = (seen: QueueMessage[]) => seen.map((m) => m.messageId).sort();
      assert.deepEqual(ids(one.seen), ids(two.seen));
      assert.equal(new Set(ids(one.seen)).size, 10);
    });

    it('splits a group between members by partition', async () => {
      const topic = await topicWith({ partitions: 2 });
      const left = await record(topic, 'g', () => {}, { partitions: [0] });
      const right = await record(topic, 'g', () => {}, { partitions: [1] });
      for (let i = 0; i < 10; i++) await queue.publish(topic, text(`m${i}`));
      await eventually(() => left.seen.length + right.seen.length === 10, 5000, 'every message');
      assert.ok(left.seen.every((m) => m.partition === 0));
      assert.ok(right.seen.every((m) => m.partition === 1));
      assert.equal(left.seen.length, 5);
    });

    it('drain waits for running handlers to settle', async () => {
      const topic = await topicWith({ ackWaitMs: 30_000 });
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const a = await record(topic, 'g', () => gate);
      await queue.publish(topic, text('slow'), { key: 'k' });
      await eventually(() => a.seen.length === 1, 5000, 'the delivery');
      let drained = false;
      const draining = a.consumer.drain().then(() => {
        drained = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(drained, false, 'drain returned with a handler running');
      release();
      await draining;
      // Acked: a new member sees only the next message, not a redelivery (same key, so it would come first).
      const b = await record(topic, 'g');
      await queue.publish(topic, text('next'), { key: 'k' });
      await eventually(() => b.seen.length >= 1, 5000, 'the next message');
      assert.deepEqual(
        b.seen.map((m) => read(m)),
        ['next'],
      );
    });

    it('rejects an oversized message with a clear error', async () => {
      const topic = await topicWith({ maxMessageBytes: 1024 });
      await assert.rejects(queue.publish(topic, new Uint8Array(2000)), (err) => {
        assert.ok(err instanceof MessageTooLargeError);
        assert.equal(err.code, 'RESOURCE_EXHAUSTED');
        assert.equal(err.limit, 1024);
        assert.ok(err.message.includes(topic), err.message);
        assert.match(err.message, /2000/);
        assert.match(err.message, /1024-byte limit/);
        return true;
      });
      await queue.publish(topic, new Uint8Array(900));
      const ceiling = (await queue.describeTopic(await topicWith())).maxMessageBytes;
      assert.ok(ceiling >= 1024 * 1024, `default limit ${ceiling}`);
      const big = await topicWith();
      await assert.rejects(queue.publish(big, new Uint8Array(ceiling + 1)), MessageTooLargeError);
      await assert.rejects(queue.ensureTopic(uniqueName('qc'), { maxMessageBytes: ceiling + 1 }), (err) =>
        isLatticeError(err, 'INVALID_ARGUMENT'),
      );
    });

    /** Subscribes a new group and waits until it received every message the topic retains. */
    async function readRetained(topic: string, group: string): Promise<QueueMessage[]> {
      const { messages } = await queue.topicStats(topic);
      const { seen } = await record(topic, group);
      await eventually(() => seen.length >= messages, 10_000, `${messages} retained messages`);
      return [...seen].sort((a, b) => a.sequence - b.sequence);
    }

    it('retains at most maxBytes, discarding the oldest messages across partitions, settled or not', async () => {
      const maxBytes = 10_000;
      const topic = await topicWith({ partitions: 2, maxBytes });
      assert.equal((await queue.describeTopic(topic)).maxBytes, maxBytes);
      // A group that never settles what it was given: retention discards those messages anyway.
      const stuck = await record(topic, 'stuck', () => new Promise<void>(() => {}));
      const sequences: number[] = [];
      for (let i = 0; i < 30; i++) {
        const payload = new Uint8Array(1000).fill(i);
        sequences.push((await queue.publish(topic, payload, { key: `k${i}` })).sequence);
      }
      const stats = await queue.topicStats(topic);
      assert.ok(stats.bytes <= maxBytes, `${stats.bytes} bytes retained`);
      // 1000-byte payloads: 10 fit by payload alone; JetStream's stored size adds its framing.
      assert.ok(stats.messages >= 5 && stats.messages <= 10, `${stats.messages} messages retained`);
      await stuck.consumer.close();

      const late = await readRetained(topic, 'late');
      assert.deepEqual(
        late.map((m) => m.sequence),
        sequences.slice(-stats.messages),
        'exactly the newest messages',
      );
      assert.deepEqual(
        late.map((m) => m.payload[0]),
        Array.from({ length: stats.messages }, (_, i) => 30 - stats.messages + i),
      );
      await assert.rejects(queue.topicStats(uniqueName('missing')), TopicNotFoundError);
    });

    it('discards messages past retentionMs, and a later group receives only newer ones', async () => {
      const topic = await topicWith({ retentionMs: 1000, dedupWindowMs: 1000 });
      await queue.publish(topic, text('old-1'));
      await queue.publish(topic, text('old-2'));
      await eventually(async () => (await queue.topicStats(topic)).messages === 0, 15_000, 'expiry');
      await queue.publish(topic, text('new'));
      const late = await readRetained(topic, 'late');
      assert.deepEqual(
        late.map((m) => read(m)),
        ['new'],
      );
    });

    it('applies a tighter retention to an existing topic and its held messages', async () => {
      const topic = await topicWith();
      assert.equal((await queue.describeTopic(topic)).maxBytes, undefined);
      for (let i = 0; i < 20; i++) await queue.publish(topic, new Uint8Array(1000).fill(i));
      assert.equal((await queue.topicStats(topic)).messages, 20);
      const updated = await queue.ensureTopic(topic, { maxBytes: 5000, retentionMs: 3_600_000 });
      assert.equal(updated.maxBytes, 5000);
      assert.equal(updated.retentionMs, 3_600_000);
      assert.equal(updated.maxMessageBytes, 5000, 'a message never exceeds the topic');
      const described = await queue.describeTopic(topic);
      assert.equal(described.maxBytes, 5000);
      assert.equal(described.retentionMs, 3_600_000);
      const dlq = await queue.describeTopic(`${topic}-dlq`);
      assert.equal(dlq.maxBytes, 5000, 'the dead-letter topic is bounded alike');
      await eventually(async () => (await queue.topicStats(topic)).bytes <= 5000, 5000, 'trimmed');
      const stats = await queue.topicStats(topic);
      assert.ok(stats.messages >= 2 && stats.messages <= 5, `${stats.messages} messages retained`);
      await assert.rejects(
        queue.ensureTopic(uniqueName('qc'), { maxBytes: 5000, maxMessageBytes: 6000 }),
        (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'maxMessageBytes',
      );
    });

    it('publishes to an explicit partition whatever the key, and refuses one the topic lacks', async () => {
      const topic = await topicWith({ partitions: 4 });
      for (let partition = 0; partition < 4; partition++) {
        const result = await queue.publish(topic, text(`eof-${partition}`), { partition });
        assert.equal(result.partition, partition);
      }
      const keyed = await queue.publish(topic, text('keyed'), { key: 'alpha', partition: 3 });
      assert.equal(keyed.partition, 3, 'the partition wins over the key');
      for (const partition of [4, 99]) {
        await assert.rejects(queue.publish(topic, text('x'), { partition }), (err) => {
          assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
          assert.equal(err.field, 'partition');
          assert.match(err.message, /partitions 0-3/);
          return true;
        });
      }
      for (const partition of [-1, 1.5, Number.NaN]) {
        await assert.rejects(
          queue.publish(topic, text('x'), { partition }),
          (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'partition',
        );
      }
      const { seen } = await record(topic, 'g');
      await eventually(() => seen.length === 5, 5000, 'every message');
      for (let partition = 0; partition < 4; partition++) {
        assert.equal(seen.find((m) => read(m) === `eof-${partition}`)?.partition, partition);
      }
      const keyedSeen = seen.find((m) => read(m) === 'keyed');
      assert.equal(keyedSeen?.partition, 3);
      assert.equal(keyedSeen?.key, 'alpha');
    });

    it("reports a group's lag per partition: pending, unsettled, delivered and the ack floor", async () => {
      const topic = await topicWith({ partitions: 2 });
      const sequences: number[] = [];
      for (let i = 0; i < 5; i++)
        sequences.push((await queue.publish(topic, text(`m${i}`), { partition: 0 })).sequence);
      await queue.publish(topic, text('other'), { partition: 1 });
      assert.deepEqual(await queue.groupLag(topic, 'fresh'), [
        { partition: 0, pending: 5, unsettled: 0, delivered: 0, ackFloor: 0 },
        { partition: 1, pending: 1, unsettled: 0, delivered: 0, ackFloor: 0 },
      ]);
      const { seen } = await record(topic, 'g', () => {}, {
        autoAck: false,
        inFlightPerPartition: 3,
        partitions: [0],
      });
      await eventually(() => seen.length === 3, 5000, 'three deliveries');
      const lagOf = async () => (await queue.groupLag(topic, 'g'))[0]!;
      await eventually(async () => (await lagOf()).unsettled === 3, 5000, 'three unsettled');
      const { ackFloor, ...position } = await lagOf();
      assert.deepEqual(position, { partition: 0, pending: 2, unsettled: 3, delivered: sequences[2] });
      assert.ok(ackFloor < sequences[0]!, `ack floor ${ackFloor} below the first message`);
      // Settling out of order: the floor moves only past a contiguous settled prefix.
      await seen[1]!.ack();
      await eventually(async () => (await lagOf()).unsettled === 3, 5000, 'the fourth delivered');
      assert.ok((await lagOf()).ackFloor < sequences[0]!, 'the floor waits for the first');
      await seen[0]!.ack();
      await eventually(
        async () => (await lagOf()).ackFloor >= sequences[1]!,
        5000,
        'the floor past the second',
      );
      await eventually(() => seen.length === 5, 5000, 'all five delivered');
      for (const message of seen.slice(2)) await message.ack();
      await eventually(
        async () => {
          const lag = await lagOf();
          return lag.pending === 0 && lag.unsettled === 0 && lag.ackFloor >= sequences[4]!;
        },
        5000,
        'nothing left',
      );
      assert.ok((await lagOf()).delivered >= sequences[4]!, 'delivered covers the last message');
      assert.equal((await queue.groupLag(topic, 'g'))[1]!.pending, 1, 'partition 1 has no member yet');
      await assert.rejects(queue.groupLag(uniqueName('missing'), 'g'), TopicNotFoundError);
      await assert.rejects(queue.groupLag(topic, 'bad group'), (err) =>
        isLatticeError(err, 'INVALID_ARGUMENT'),
      );
    });

    it("hands a partition's messages out in order, up to inFlightPerPartition unsettled at once", async () => {
      const topic = await topicWith({ partitions: 1 });
      for (let i = 0; i < 10; i++) await queue.publish(topic, text(`m${i}`), { key: `k${i % 3}` });
      const { seen } = await record(topic, 'g', () => {}, { autoAck: false, inFlightPerPartition: 4 });
      await eventually(() => seen.length === 4, 5000, 'a window of four');
      assert.deepEqual(
        seen.map((m) => read(m)),
        ['m0', 'm1', 'm2', 'm3'],
      );
      await Promise.all(seen.slice(0, 4).map((m) => m.ack()));
      await eventually(() => seen.length === 8, 5000, 'the next window');
      await Promise.all(seen.slice(4).map((m) => m.ack()));
      await eventually(() => seen.length === 10, 5000, 'the rest');
      assert.deepEqual(
        seen.map((m) => read(m)),
        Array.from({ length: 10 }, (_, i) => `m${i}`),
      );
    });

    it('dead-letters with the field a handler names in term()', async () => {
      const topic = await topicWith();
      await record(topic, 'g', (message) =>
        message.term('embedding has 3 values, the model wants 4', { field: 'index_space.embedding' }),
      );
      const dead = await record(`${topic}-dlq`, 'operators');
      await queue.publish(topic, text('{}'));
      await eventually(() => dead.seen.length === 1, 5000, 'the dead letter');
      const headers = dead.seen[0]!.headers;
      assert.equal(headers[DeadLetterHeaders.lastError], 'embedding has 3 values, the model wants 4');
      assert.equal(headers[DeadLetterHeaders.lastErrorField], 'index_space.embedding');
    });

    if (adapter.openUnreachable) {
      const openUnreachable = adapter.openUnreachable;
      // The test's timeout only turns a hang (no connect timeout) into a failure.
      it('fails with UNAVAILABLE within a timeout when the server is unreachable', {
        timeout: 60_000,
      }, async () => {
        await assert.rejects(openUnreachable(), (err) => {
          assert.ok(isLatticeError(err, 'UNAVAILABLE'), String(err));
          return true;
        });
      });
    }
  });
}
