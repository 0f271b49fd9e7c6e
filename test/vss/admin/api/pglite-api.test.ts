import { createSqlClient } from '../../../../src/platform/sql/index.js';
import { adminRouteSuite } from './route-suite.js';

adminRouteSuite({ name: 'PGlite (in memory)', open: () => createSqlClient({ kind: 'pglite' }) });
