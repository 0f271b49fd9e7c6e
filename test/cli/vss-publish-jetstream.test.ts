/**
 * `lattice vss publish` and `lattice vss dead-letters` in distributed mode: straight to and from
 * NATS JetStream (no running process needed). Each event lands on its topic keyed as producers
 * should key it (embedding events by candidate_id, real-time events by their first id), on the
 * partition its key hashes to, in file order per key; a dead letter is listed with its reason and
 * field, and stays for replay.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  createQueue,
  partitionForKey,
  type Queue,
  type QueueMessage,
} from '../../src/platform/queue/index.js';
import { runLattice } from '../support/lattice-vss-process.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';

const natsUrl = await realServer('nats');

describe('lattice vss publish and dead-letters on JetStream', { skip: natsUrl === undefined }, () => {
  const name = uniqueName('vpub');
  const topics = { embeddings: `${name}-emb`, realtime: `${name}-rt` };
  let dir: string;
  let settingsFile: string;
  let queue: Queue;
  const env = () => ({ LATTICE_DATA_DIR: dir });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lattice-vss-publish-js-'));
    settingsFile = join(dir, 'settings.json');
    writeFileSync(
      settingsFile,
      JSON.stringify({
        queue: { kind: 'jetstream', servers: [natsUrl] },
        vss: { consumers: { embeddingsTopic: topics.embeddings, realtimeTopic: topics.realtime } },
      }),
    );
    queue = await createQueue({ kind: 'jetstream', servers: [natsUrl!] });
  });
  after(async () => {
    for (const topic of Object.values(topics)) {
      await queue.deleteTopic(topic).catch(() => false);
      await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
    }
    await queue.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every message of the topic, read as a fresh group, acknowledged or (with `settle`) settled so. */
  async function readAll(
    topic: string,
    count: number,
    settle: (m: QueueMessage) => Promise<void> = (m) => m.ack(),
  ): Promise<QueueMessage[]> {
    const seen: QueueMessage[] = [];
    const consumer = await queue.subscribe(
      topic,
      uniqueName('reader'),
      async (message) => {
        seen.push(message);
        await settle(message);
      },
      { autoAck: false },
    );
    try {
      await eventually(() => seen.length >= count, 30_000, `${count} messages on ${topic}`);
    } finally {
      await consumer.close();
    }
    return seen;
  }

  test('publishes each event keyed and partitioned as producers should, creating the topics', async () => {
    const event = (id: string, operation: string, value: number) => ({
      entity: 'catalog',
      model_name: 'products',
      candidate_id: id,
      version: 1,
      index_space: {
        variants_version_map: '{"all":1}',
        embedding: operation === 'A' ? [value, 0.5] : [],
        operation,
      },
    });
    const lines = [event('a', 'A', 1), event('b', 'A', 2), event('a', 'D', 0)].map((e) => JSON.stringify(e));
    const file = join(dir, 'embeddings.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const published = await runLattice(['vss', 'publish', 'embeddings', file], env(), settingsFile);
    assert.equal(published.code, 0, published.stderr);
    assert.equal(published.stdout, `Published 3 embedding events from ${file} to ${topics.embeddings}.\n`);

    const { partitions } = await queue.describeTopic(topics.embeddings);
    assert.equal(partitions, 8, 'created with the consumers’ settings');
    const messages = await readAll(topics.embeddings, 3);
    const byKey = (key: string) =>
      messages
        .filter((m) => m.key === key)
        .sort((x, y) => x.sequence - y.sequence)
        .map((m) => Buffer.from(m.payload).toString('utf8'));
    assert.deepEqual(byKey('a'), [lines[0], lines[2]], 'in file order per key');
    assert.deepEqual(byKey('b'), [lines[1]]);
    for (const m of messages) assert.equal(m.partition, partitionForKey(m.key!, partitions), m.key);

    const realtime = join(dir, 'realtime.jsonl');
    writeFileSync(
      realtime,
      `${JSON.stringify({ timestamp: 5, entity_label: 'catalog', data: [{ id: 'c9', label: 'price', value: '3' }] })}\n`,
    );
    const rt = await runLattice(['vss', 'publish', 'realtime', realtime], env(), settingsFile);
    assert.equal(rt.code, 0, rt.stderr);
    const [landed] = await readAll(topics.realtime, 1);
    assert.equal(landed!.key, 'c9');
  });

  test('refuses a file with a bad line, naming it, and publishes nothing', async () => {
    const file = join(dir, 'bad.jsonl');
    writeFileSync(
      file,
      [
        JSON.stringify({
          timestamp: 1,
          entity_label: 'catalog',
          data: [{ id: 'ok', label: 'price', value: '1' }],
        }),
        JSON.stringify({
          eof: true,
          entity: 'catalog',
          model_name: 'products',
          version: 1,
          job_id: 'j',
          partition: 0,
        }),
        JSON.stringify({
          entity: 'catalog',
          model_name: 'products',
          candidate_id: 'x',
          version: 1,
          index_space: {},
        }),
      ].join('\n'),
    );
    const before = (await queue.topicStats(topics.embeddings)).messages;
    const refused = await runLattice(['vss', 'publish', 'embeddings', file], env(), settingsFile);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /3 of 3 lines are not valid embedding events; nothing was published/);
    assert.match(refused.stderr, /line 1: embedding event: /);
    assert.match(refused.stderr, /line 2: an EOF marker/);
    assert.match(refused.stderr, /line 3: embedding event: index_space\.variants_version_map is required/);
    assert.equal((await queue.topicStats(topics.embeddings)).messages, before);
  });

  test('lists a dead letter with its reason and field, and leaves it for replay', async () => {
    await queue.publish(topics.realtime, Buffer.from('{"poison":true}'), {
      key: 'p1',
      messageId: uniqueName('m'),
    });
    // A consumer rejecting it for good, as the vss consumers do.
    await readAll(topics.realtime, 1, (m) =>
      m.key === 'p1' ? m.term('poison for the test', { field: 'data[0].value' }) : m.ack(),
    );
    for (let i = 0; i < 2; i++) {
      const listed = await runLattice(
        ['vss', 'dead-letters', '--topic', topics.realtime],
        env(),
        settingsFile,
      );
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(
        listed.stdout,
        new RegExp(`^${topics.realtime}: 1 dead letter\\(s\\) on ${topics.realtime}-dlq$`, 'm'),
      );
      assert.match(
        listed.stdout,
        new RegExp(`^ {2}${topics.realtime}:\\S+:\\d+ {2}partition \\d+, key p1, 1 attempt\\(s\\), `, 'm'),
      );
      assert.match(listed.stdout, /^ {4}reason: poison for the test \(field data\[0\]\.value\)$/m);
      assert.match(listed.stdout, /^ {4}payload: \{"poison":true\}$/m);
    }
    const unknown = await runLattice(['vss', 'dead-letters', '--topic', `${name}-none`], env(), settingsFile);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /queue topic ".*-none" does not exist/);
  });
});
