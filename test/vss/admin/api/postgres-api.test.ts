import { postgresSchema } from '../../../support/postgres-schema.js';
import { realServer } from '../../../support/servers.js';
import { adminRouteSuite } from './route-suite.js';

const url = await realServer('postgres');
const schema = postgresSchema(url, 'lattice_vss_admin_api');

adminRouteSuite({
  name: 'PostgreSQL',
  skip: url === undefined ? 'PostgreSQL is not reachable' : false,
  open: () => schema.open(8),
});
