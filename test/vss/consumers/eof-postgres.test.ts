import { describe } from 'node:test';
import { postgresSchema } from '../../support/postgres-schema.js';
import { realServer } from '../../support/servers.js';
import { eofSuite } from './eof-suite.js';

const url = await realServer('postgres');
const skip = url === undefined ? 'PostgreSQL is not reachable' : false;

describe('PostgreSQL schema for the EOF processor', { skip }, () => {
  const schema = postgresSchema(url, 'lattice_vss_eof');
  // A pool of 8, so the consumers delivering the last markers at once really run concurrently.
  eofSuite({ name: 'PostgreSQL', open: () => schema.open(8) });
});
