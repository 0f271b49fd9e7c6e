import { describe } from 'node:test';
import { createQueue, type Queue } from '../../../../src/platform/queue/index.js';
import { postgresSchema } from '../../../support/postgres-schema.js';
import { realServer } from '../../../support/servers.js';
import { engineSuite } from './engine-suite.js';

const postgres = await realServer('postgres');
const nats = await realServer('nats');
const skip =
  postgres === undefined
    ? 'PostgreSQL is not reachable'
    : nats === undefined
      ? 'NATS is not reachable'
      : false;
describe('PostgreSQL schema and JetStream for the operations engine', { skip }, () => {
  const schema = postgresSchema(postgres, 'lattice_vss_admin_ops');

  engineSuite({
    name: 'PostgreSQL + JetStream',
    openSql: () => schema.open(8),
    openQueue: () => createQueue({ kind: 'jetstream', servers: [nats ?? ''] }),
    cleanup: async (queue: Queue, prefix: string) => {
      for (const topic of ['emb', 'rt', 'ops'].map((t) => `${prefix}-${t}`)) {
        await queue.deleteTopic(topic).catch(() => false);
        await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
      }
    },
  });
});
