import { after, before, describe } from 'node:test';
import { createQueue, type Queue } from '../../../../src/platform/queue/index.js';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { realServer, uniqueName } from '../../../support/servers.js';
import { engineSuite } from './engine-suite.js';

const postgres = await realServer('postgres');
const nats = await realServer('nats');
const skip =
  postgres === undefined
    ? 'PostgreSQL is not reachable'
    : nats === undefined
      ? 'NATS is not reachable'
      : false;
// The run works in a schema of its own (the connection's search_path), dropped at the end.
const schema = uniqueName('lattice_vss_admin_ops').toLowerCase();

describe('PostgreSQL schema and JetStream for the operations engine', { skip }, () => {
  let admin: SqlClient;
  before(async () => {
    admin = await createSqlClient({ kind: 'postgres', url: postgres ?? '', poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
  });
  after(async () => {
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.close();
  });

  engineSuite({
    name: 'PostgreSQL + JetStream',
    openSql: () =>
      createSqlClient({ kind: 'postgres', url: postgres ?? '', searchPath: schema, poolSize: 8 }),
    openQueue: () => createQueue({ kind: 'jetstream', servers: [nats ?? ''] }),
    cleanup: async (queue: Queue, prefix: string) => {
      for (const topic of ['emb', 'rt', 'ops'].map((t) => `${prefix}-${t}`)) {
        await queue.deleteTopic(topic).catch(() => false);
        await queue.deleteTopic(`${topic}-dlq`).catch(() => false);
      }
    },
  });
});
