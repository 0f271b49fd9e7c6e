import { createSqlClient } from '../../../src/platform/sql/index.js';
import { vssStoreSuite } from './store-suite.js';

vssStoreSuite({ name: 'PGlite (in memory)', open: () => createSqlClient({ kind: 'pglite' }) });
