import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import { createQueue, JetStreamQueue } from '../../../src/platform/queue/index.js';
import { realServer, uniqueName } from '../../support/servers.js';
import { queueContract } from './contract.js';

const url = await realServer('nats');

/** A loopback port nothing listens on: bound, then released. */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('JetStreamQueue options', () => {
  it('rejects settings without a server before connecting', async () => {
    await assert.rejects(createQueue({ kind: 'jetstream', servers: [] }), (err) => {
      assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'));
      assert.equal(err.field, 'servers');
      return true;
    });
  });
});

queueContract({
  name: 'jetstream',
  skip: !url,
  open: () => createQueue({ kind: 'jetstream', servers: [url ?? ''] }),
  openUnreachable: async () =>
    createQueue({
      kind: 'jetstream',
      servers: [`nats://127.0.0.1:${await unusedPort()}`],
      connectTimeoutMs: 2000,
    }),
});

describe('JetStreamQueue', { skip: !url }, () => {
  it("takes the message size ceiling from the server's max_payload", async () => {
    const queue = await JetStreamQueue.connect({ servers: [url ?? ''] });
    try {
      const topic = uniqueName('qj');
      const config = await queue.ensureTopic(topic, { deadLetterTopic: false });
      assert.equal(config.maxMessageBytes, queue.maxPayload);
      assert.ok(queue.maxPayload > 0);
      await queue.deleteTopic(topic);
    } finally {
      await queue.close();
    }
  });

  it('reads a topic created by another process from the stream alone', async () => {
    const writer = await JetStreamQueue.connect({ servers: [url ?? ''] });
    const reader = await JetStreamQueue.connect({ servers: [url ?? ''] });
    const topic = uniqueName('qj');
    try {
      const created = await writer.ensureTopic(topic, { partitions: 3, maxDeliver: 7, ackWaitMs: 4000 });
      assert.deepEqual(await reader.describeTopic(topic), created);
    } finally {
      await writer.deleteTopic(topic);
      await writer.deleteTopic(`${topic}-dlq`);
      await writer.close();
      await reader.close();
    }
  });
});
