import { createSqlClient } from '../../../src/platform/sql/index.js';
import { realtimeSuite } from './realtime-suite.js';

realtimeSuite({ name: 'PGlite (in memory)', open: () => createSqlClient({ kind: 'pglite' }) });
