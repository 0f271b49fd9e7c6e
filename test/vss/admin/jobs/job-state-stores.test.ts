/**
 * The JobStateStore contract against every adapter: in memory, a directory of JSON files (shared by
 * two store instances, as by two processes, and exclusive), and the vss SQL schema on PostgreSQL
 * (two clients, as two admin replicas).
 */
import { rmSync } from 'node:fs';
import {
  FileJobStateStore,
  MemoryJobStateStore,
  SqlJobStateStore,
} from '../../../../src/vss/admin/jobs/index.js';
import { migrateVssStore } from '../../../../src/vss/store/index.js';
import { postgresSchema } from '../../../support/postgres-schema.js';
import { realServer } from '../../../support/servers.js';
import { jobStateStoreContract } from './job-state-store-contract.js';
import { tempDir } from './training-data.js';

jobStateStoreContract({
  name: 'in memory',
  exclusive: false,
  ownClock: false,
  open: async () => {
    const store = new MemoryJobStateStore();
    return { store, peer: store, close: async () => {} };
  },
});

jobStateStoreContract({
  name: 'files, shared by two stores',
  exclusive: false,
  ownClock: false,
  open: async () => {
    const dir = tempDir();
    return {
      store: new FileJobStateStore(dir),
      peer: new FileJobStateStore(dir),
      close: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
});

jobStateStoreContract({
  name: 'files, exclusive',
  exclusive: true,
  ownClock: false,
  open: async () => {
    const dir = tempDir();
    const store = new FileJobStateStore(dir, { exclusive: true });
    return {
      store,
      peer: store,
      close: async () => {
        store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});

const url = await realServer('postgres');
const schema = postgresSchema(url, 'lattice_job_records');

jobStateStoreContract({
  name: 'SQL on PostgreSQL, two clients',
  exclusive: false,
  ownClock: true,
  skip: url === undefined && 'PostgreSQL is not reachable',
  open: async () => {
    const [one, two] = [await schema.open(4), await schema.open(4)];
    await migrateVssStore(one);
    return {
      store: new SqlJobStateStore(one),
      peer: new SqlJobStateStore(two),
      close: async () => {
        await one.close();
        await two.close();
      },
    };
  },
});
