import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { isLatticeError } from '../../../src/platform/errors.js';
import { createQueue, MemoryQueue, type QueueMessage } from '../../../src/platform/queue/index.js';
import { eventually } from '../../support/servers.js';
import { queueContract } from './contract.js';

queueContract({ name: 'memory', open: () => createQueue({ kind: 'memory' }) });

let journalDir = '';
queueContract({
  name: 'memory with journal',
  open: () => {
    journalDir = mkdtempSync(join(tmpdir(), 'lattice-queue-contract-'));
    return createQueue({ kind: 'memory', journalDir });
  },
  cleanup: async () => rmSync(journalDir, { recursive: true, force: true }),
});

const text = (value: string) => new TextEncoder().encode(value);
const read = (message: QueueMessage) => new TextDecoder().decode(message.payload);

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-queue-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Subscribes, collects deliveries, and lets the test choose how to settle each. */
async function collect(
  queue: MemoryQueue,
  topic: string,
  handle: (message: QueueMessage) => void | Promise<void> = () => {},
  autoAck = true,
) {
  const seen: QueueMessage[] = [];
  const consumer = await queue.subscribe(
    topic,
    'g',
    async (message) => {
      seen.push(message);
      await handle(message);
    },
    { autoAck },
  );
  return { seen, consumer };
}

describe('MemoryQueue journal', () => {
  it('restores unacknowledged messages, delivery counts, sequences and dedup after a reopen', async (t) => {
    const journalDir = tempDir(t);
    const first = await MemoryQueue.open({ journalDir });
    await first.ensureTopic('orders', { partitions: 2 });
    for (let i = 0; i < 6; i++)
      await first.publish('orders', text(`m${i}`), { key: 'k', messageId: `id-${i}` });
    // Ack m0..m2, leave m3 delivered but unsettled, m4 and m5 never delivered.
    const { seen, consumer } = await collect(first, 'orders', () => {}, false);
    await eventually(() => seen.length === 1, 5000, 'first delivery');
    for (let i = 0; i < 3; i++) {
      await seen[i]!.ack();
      await eventually(() => seen.length === i + 2, 5000, `delivery ${i + 2}`);
    }
    assert.equal(read(seen[3]!), 'm3');
    await consumer.close();
    await first.close();

    const second = await MemoryQueue.open({ journalDir });
    assert.equal((await second.describeTopic('orders')).partitions, 2);
    const again = await collect(second, 'orders');
    await eventually(() => again.seen.length === 3, 5000, 'the unacknowledged messages');
    assert.deepEqual(
      again.seen.map((m) => `${read(m)}#${m.deliveryCount}`),
      ['m3#2', 'm4#1', 'm5#1'],
    );
    const dup = await second.publish('orders', text('m1'), { key: 'k', messageId: 'id-1' });
    assert.equal(dup.duplicate, true);
    const next = await second.publish('orders', text('m6'), { key: 'k' });
    assert.equal(next.sequence, 7, 'sequences continue after the restart');
    await second.close();
  });

  it('compacts segments whose messages every group acknowledged', async (t) => {
    const journalDir = tempDir(t);
    const queue = await MemoryQueue.open({ journalDir, segmentBytes: 4096, fsync: 'never' });
    await queue.ensureTopic('events', { partitions: 2, dedupWindowMs: 1 });
    const { seen, consumer } = await collect(queue, 'events');
    for (let i = 0; i < 400; i++) await queue.publish('events', new Uint8Array(100), { key: `k${i % 7}` });
    await eventually(() => seen.length === 400, 5000, 'every message');
    await consumer.close();
    // The next publishes roll segments; compaction then drops every older, fully acknowledged one.
    await queue.publish('events', new Uint8Array(5000));
    await queue.publish('events', new Uint8Array(10));
    await eventually(() => queue.journalSegments() <= 2, 5000, 'compaction');
    assert.ok(readdirSync(journalDir).filter((f) => f.endsWith('.log')).length <= 2);
    await queue.close();

    const reopened = await MemoryQueue.open({ journalDir });
    const rest = await collect(reopened, 'events');
    await eventually(() => rest.seen.length === 2, 5000, 'the unacknowledged tail');
    assert.deepEqual(
      rest.seen.map((m) => [m.sequence, m.payload.length]),
      [
        [401, 5000],
        [402, 10],
      ],
    );
    await reopened.close();
  });

  it('cuts a torn record at the end of the journal and keeps what came before', async (t) => {
    const journalDir = tempDir(t);
    const queue = await MemoryQueue.open({ journalDir });
    await queue.ensureTopic('t');
    await queue.publish('t', text('kept'));
    await queue.close();
    const [segment] = readdirSync(journalDir).filter((f) => f.endsWith('.log'));
    appendFileSync(join(journalDir, segment!), Buffer.from([200, 0, 0, 0, 1, 2, 3]));

    const reopened = await MemoryQueue.open({ journalDir });
    const { seen } = await collect(reopened, 't');
    await eventually(() => seen.length === 1, 5000, 'the kept message');
    assert.equal(read(seen[0]!), 'kept');
    await reopened.publish('t', text('after'));
    await eventually(() => seen.length === 2, 5000, 'a message after the repair');
    await reopened.close();
  });

  it('refuses a journal another live queue holds', async (t) => {
    const journalDir = tempDir(t);
    const queue = await MemoryQueue.open({ journalDir });
    await assert.rejects(MemoryQueue.open({ journalDir }), (err) => {
      assert.ok(isLatticeError(err, 'FAILED_PRECONDITION'));
      assert.match(err.message, /in use by process/);
      // …and says what to do instead.
      assert.match(err.message, /stop that process .*LATTICE_QUEUE=jetstream/);
      return true;
    });
    await queue.close();
    const again = await MemoryQueue.open({ journalDir });
    await again.close();
  });

  it('rejects invalid settings', async () => {
    await assert.rejects(
      createQueue({ kind: 'memory', fsync: 'sometimes' as 'always' }),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'fsync',
    );
  });

  it('keeps nothing without a journal', async () => {
    const queue = await MemoryQueue.open();
    await queue.ensureTopic('volatile');
    await queue.publish('volatile', text('gone'));
    await queue.close();
    const fresh = await MemoryQueue.open();
    await assert.rejects(fresh.describeTopic('volatile'), (err) => isLatticeError(err, 'NOT_FOUND'));
    await fresh.close();
  });

  it('bounds a topic nobody consumes by bytes and age, releasing journal segments and reporting each discard', async (t) => {
    const journalDir = tempDir(t);
    const reported: string[] = [];
    const queue = await MemoryQueue.open({
      journalDir,
      segmentBytes: 4096,
      fsync: 'never',
      onDiscard: (topic, reason) => reported.push(`${topic}:${reason}`),
    });
    await queue.ensureTopic('logs', { maxBytes: 4096, deadLetterTopic: false });
    for (let i = 0; i < 200; i++) await queue.publish('logs', new Uint8Array(500).fill(i % 256));
    const stats = await queue.topicStats('logs');
    assert.equal(stats.messages, 8, '8 × 500 bytes fit in 4096');
    assert.equal(stats.bytes, 4000);
    assert.deepEqual(queue.discarded('logs'), { age: 0, bytes: 192 });
    assert.equal(reported.length, 192);
    assert.deepEqual(new Set(reported), new Set(['logs:bytes']));
    // Segments holding only discarded messages are released, not kept on disk.
    await eventually(() => queue.journalSegments() <= 3, 5000, 'compaction');
    await queue.close();

    const reopened = await MemoryQueue.open({
      journalDir,
      onDiscard: (topic, reason) => reported.push(`reopened ${topic}:${reason}`),
    });
    assert.deepEqual(await reopened.topicStats('logs'), { messages: 8, bytes: 4000 });
    assert.deepEqual(reopened.discarded('logs'), { age: 0, bytes: 0 }, 'replay does not report again');
    const { seen } = await collect(reopened, 'logs');
    await eventually(() => seen.length === 8, 5000, 'the retained messages');
    assert.deepEqual(
      seen.map((m) => m.payload[0]),
      [192, 193, 194, 195, 196, 197, 198, 199],
    );

    await reopened.ensureTopic('aging', { retentionMs: 1000, dedupWindowMs: 1000, deadLetterTopic: false });
    await reopened.publish('aging', text('a'));
    await reopened.publish('aging', text('b'));
    await eventually(() => reopened.discarded('aging').age === 2, 10_000, 'age discards');
    assert.deepEqual(await reopened.topicStats('aging'), { messages: 0, bytes: 0 });
    assert.deepEqual(reported.slice(192), ['reopened aging:age', 'reopened aging:age']);
    await reopened.close();
  });

  it('keeps messages until a first group takes them, then only until every group acked them', async () => {
    const queue = await MemoryQueue.open();
    await queue.ensureTopic('early', { partitions: 1 });
    await queue.publish('early', text('before anyone listened'));
    const first = await collect(queue, 'early');
    await eventually(() => first.seen.length === 1, 5000, 'the early message');
    await eventually(() => first.seen[0]!.settled, 5000, 'the ack');
    // Acknowledged by the only group: gone, so a group that arrives later starts after it.
    const late = await queue.subscribe('early', 'late', () => {});
    const lateSeen: string[] = [];
    await late.close();
    const again = await queue.subscribe('early', 'late', (m) => {
      lateSeen.push(read(m));
    });
    await queue.publish('early', text('after both'));
    await eventually(() => lateSeen.length === 1 && first.seen.length === 2, 5000, 'the next message');
    assert.deepEqual(lateSeen, ['after both']);
    await again.close();
    await queue.close();
  });
});

/** The type codes of the records in a journal directory's segments, in order. */
function recordTypes(journalDir: string): number[] {
  const types: number[] = [];
  for (const name of readdirSync(journalDir)
    .filter((f) => f.endsWith('.log'))
    .sort()) {
    const data = readFileSync(join(journalDir, name));
    for (let offset = 0; offset < data.length; offset += 8 + data.readUInt32LE(offset)) {
      types.push(data.readUInt8(offset + 8));
    }
  }
  return types;
}

/** A journal frame as written before deliveries and acknowledgements were recorded in runs. */
function legacyFrame(code: number, meta: object): Buffer {
  const json = Buffer.from(JSON.stringify(meta));
  const body = Buffer.alloc(5 + json.length);
  body.writeUInt8(code, 0);
  body.writeUInt32LE(json.length, 1);
  json.copy(body, 5);
  const header = Buffer.alloc(8);
  header.writeUInt32LE(body.length, 0);
  header.writeUInt32LE(crc32(body), 4);
  return Buffer.concat([header, body]);
}

describe('MemoryQueue journal runs', () => {
  it('records the deliveries and acknowledgements of a moment as one record per partition, and replays them', async (t) => {
    const journalDir = tempDir(t);
    const first = await MemoryQueue.open({ journalDir, fsync: 'never' });
    await first.ensureTopic('runs', { partitions: 2 });
    for (let i = 0; i < 40; i++) await first.publish('runs', text(`m${i}`), { partition: i % 2 });
    t.after(() => first.close());
    const seen: QueueMessage[] = [];
    const consumer = await first.subscribe('runs', 'g', async (m) => void seen.push(m), {
      autoAck: false,
      inFlightPerPartition: 20,
      concurrency: 40,
    });
    await eventually(() => seen.length === 40, 5000, 'every delivery');
    // Acknowledge all but the last message of each partition, in one moment.
    const kept = new Set(['m38', 'm39']);
    await Promise.all(seen.filter((m) => !kept.has(read(m))).map((m) => m.ack()));
    await consumer.close();
    await first.close();

    const types = recordTypes(journalDir);
    assert.equal(types.filter((code) => code === 4).length, 40, 'a record per publish');
    assert.equal(types.filter((code) => code === 5 || code === 6).length, 0, 'no record per delivery or ack');
    const runs = types.filter((code) => code === 7 || code === 8).length;
    assert.ok(runs >= 4 && runs <= 12, `a few runs, not one per message (${runs})`);

    const second = await MemoryQueue.open({ journalDir });
    const again = await collect(second, 'runs');
    await eventually(() => again.seen.length === 2, 5000, 'the unacknowledged messages');
    assert.deepEqual(again.seen.map((m) => `${read(m)}#${m.deliveryCount}`).sort(), ['m38#2', 'm39#2']);
    await second.close();
  });

  it('replays journals written with a record per delivery and per acknowledgement', async (t) => {
    const journalDir = tempDir(t);
    const first = await MemoryQueue.open({ journalDir });
    await first.ensureTopic('old', { partitions: 1 });
    await first.subscribe('old', 'g', async () => {}, { autoAck: false }).then((c) => c.close());
    for (let i = 0; i < 3; i++) await first.publish('old', text(`m${i}`));
    await first.close();
    // What an older version wrote: m0 (sequence 1) delivered and acked, m1 delivered once.
    const [segment] = readdirSync(journalDir).filter((f) => f.endsWith('.log'));
    const at = { topic: 'old', group: 'g', partition: 0 };
    appendFileSync(
      join(journalDir, segment!),
      Buffer.concat([
        legacyFrame(5, { type: 'deliver', ...at, sequence: 1, count: 1 }),
        legacyFrame(5, { type: 'deliver', ...at, sequence: 2, count: 1 }),
        legacyFrame(6, { type: 'ack', ...at, sequence: 1 }),
      ]),
    );

    const reopened = await MemoryQueue.open({ journalDir });
    const { seen } = await collect(reopened, 'old');
    await eventually(() => seen.length === 2, 5000, 'the messages not acknowledged');
    assert.deepEqual(
      seen.map((m) => `${read(m)}#${m.deliveryCount}`),
      ['m1#2', 'm2#1'],
    );
    await reopened.close();
  });
});
