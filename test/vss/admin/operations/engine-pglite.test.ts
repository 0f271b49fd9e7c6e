import { createQueue } from '../../../../src/platform/queue/index.js';
import { createSqlClient } from '../../../../src/platform/sql/index.js';
import { engineSuite } from './engine-suite.js';

engineSuite({
  name: 'PGlite + memory queue',
  openSql: () => createSqlClient({ kind: 'pglite' }),
  openQueue: () => createQueue({ kind: 'memory' }),
});
