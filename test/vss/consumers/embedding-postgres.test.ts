import { describe } from 'node:test';
import { postgresSchema } from '../../support/postgres-schema.js';
import { realServer } from '../../support/servers.js';
import { embeddingSuite } from './embedding-suite.js';

const url = await realServer('postgres');
const skip = url === undefined ? 'PostgreSQL is not reachable' : false;

describe('PostgreSQL schema for the embedding processor', { skip }, () => {
  const schema = postgresSchema(url, 'lattice_vss_embedding');
  embeddingSuite({ name: 'PostgreSQL', open: () => schema.open(4) });
});
