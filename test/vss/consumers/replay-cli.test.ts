/**
 * `lattice vss replay` as an operator runs it: its own process, the queue from settings (a journaled
 * embedded queue, then JetStream), the vss topics by default or one by --topic, --limit and --id.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  createQueue,
  MemoryQueue,
  type Queue,
  type QueueMessage,
} from '../../../src/platform/queue/index.js';
import { REPLAY_GROUP } from '../../../src/vss/consumers/replay.js';
import { runCaptured } from '../../support/cli-capture.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';
import { encode } from './runner-harness.js';

const bin = fileURLToPath(new URL('../../../bin/lattice.js', import.meta.url));
const natsUrl = await realServer('nats');

function lattice(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, [bin, ...args], {
    env: { ...process.env, LATTICE_LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Dead-letters `count` events of `topic` (by term, as the runner does for rejected ones). */
async function deadLetter(queue: Queue, topic: string, count: number): Promise<void> {
  await queue.ensureTopic(topic, { partitions: 2 });
  for (let i = 0; i < count; i++) {
    await queue.publish(topic, encode({ id: `e${i}`, value: i }), { key: `e${i}`, messageId: `event-${i}` });
  }
  let done = 0;
  const consumer = await queue.subscribe(topic, 'vss-consumers', async (message) => {
    await message.term('unknown model');
    done++;
  });
  await eventually(() => done === count, 10_000, `${count} dead letters`);
  await consumer.close();
}

/** What a fresh group reads from the origin topic. */
async function originMessages(queue: Queue, topic: string, count: number): Promise<QueueMessage[]> {
  const seen: QueueMessage[] = [];
  const consumer = await queue.subscribe(topic, uniqueName('reader'), (message) => void seen.push(message));
  await eventually(() => seen.length >= count, 10_000, `${count} messages on ${topic}`);
  await consumer.close();
  return seen;
}

const remaining = async (queue: Queue, topic: string) =>
  (await queue.groupLag(`${topic}-dlq`, REPLAY_GROUP)).reduce((n, p) => n + p.pending + p.unsettled, 0);

describe('lattice vss replay', () => {
  it('replays the dead letters of the embedded queue journal, --limit first, then the rest', async (t) => {
    const journalDir = mkdtempSync(join(tmpdir(), 'lattice-replay-cli-'));
    t.after(() => rmSync(journalDir, { recursive: true, force: true }));
    const env = { LATTICE_QUEUE: 'memory', LATTICE_QUEUE_JOURNAL_DIR: journalDir };
    let queue = await MemoryQueue.open({ journalDir });
    await deadLetter(queue, 'vss-embeddings', 3);
    await queue.close();

    const limited = lattice(['vss', 'replay', '--limit', '2'], env);
    assert.equal(limited.status, 0, limited.stderr);
    assert.match(
      limited.stdout,
      /vss-embeddings: replayed 2 dead letter\(s\) from vss-embeddings-dlq; 1 remain/,
    );
    assert.doesNotMatch(limited.stdout, /vss-realtime/, 'the limit was reached on the first topic');
    const rest = lattice(['vss', 'replay'], env);
    assert.equal(rest.status, 0, rest.stderr);
    assert.match(
      rest.stdout,
      /vss-embeddings: replayed 1 dead letter\(s\) from vss-embeddings-dlq; 0 remain/,
    );
    assert.match(rest.stdout, /vss-realtime: no such topic, nothing to replay/);

    queue = await MemoryQueue.open({ journalDir });
    try {
      // The originals left the embedded queue once their one group settled them: only replays remain.
      const back = await originMessages(queue, 'vss-embeddings', 3);
      const replays = back.filter((m) => m.messageId?.startsWith('replay:'));
      assert.equal(replays.length, 3);
      assert.deepEqual(replays.map((m) => m.key).sort(), ['e0', 'e1', 'e2']);
      assert.equal(await remaining(queue, 'vss-embeddings'), 0);
    } finally {
      await queue.close();
    }
  });

  it('replays one dead letter by id on JetStream, and says so when no dead letter has the id', {
    skip: !natsUrl,
  }, async () => {
    const queue = await createQueue({ kind: 'jetstream', servers: [natsUrl ?? ''] });
    const topic = uniqueName('vrc');
    const env = { LATTICE_QUEUE: 'jetstream', LATTICE_NATS_SERVERS: natsUrl ?? '' };
    try {
      await deadLetter(queue, topic, 3);
      const one = lattice(['vss', 'replay', '--topic', topic, '--id', 'event-1'], env);
      assert.equal(one.status, 0, one.stderr);
      assert.match(
        one.stdout,
        new RegExp(`${topic}: replayed 1 dead letter\\(s\\) from ${topic}-dlq; 2 remain`),
      );
      const back = await originMessages(queue, topic, 4);
      const replay = back.find((m) => m.messageId?.startsWith('replay:'));
      assert.equal(replay?.key, 'e1');
      const missing = lattice(['vss', 'replay', '--topic', topic, '--id', 'no-such-event'], env);
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /no dead letter with id "no-such-event"/);
      assert.equal(await remaining(queue, topic), 2);
    } finally {
      await queue.deleteTopic(topic);
      await queue.deleteTopic(`${topic}-dlq`);
      await queue.close();
    }
  });

  it('rejects bad arguments: exit 2 with the usage', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['replay', '--limit', '0'], /'--limit <N>' argument '0' is invalid. It must be a positive integer/],
      [
        ['replay', '--limit', 'ten'],
        /'--limit <N>' argument 'ten' is invalid. It must be a positive integer/,
      ],
      [
        ['replay', '--limit', '2', '--id', 'x'],
        /option '--id <ID>' cannot be used with option '--limit <N>'/,
      ],
      [['replay', '--port', '1'], /unknown option '--port'/],
      [['serving', '--topic', 'x'], /unknown option '--topic'/],
      [['replay', '--bogus'], /unknown option '--bogus'/],
    ];
    for (const [argv, message] of cases) {
      const result = await runCaptured(['vss', ...argv]);
      assert.equal(result.exitCode, 2, argv.join(' '));
      assert.match(result.err, message);
    }
  });
});
