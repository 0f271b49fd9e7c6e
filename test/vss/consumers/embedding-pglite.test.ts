import { createSqlClient } from '../../../src/platform/sql/index.js';
import { embeddingSuite } from './embedding-suite.js';

embeddingSuite({ name: 'PGlite (in memory)', open: () => createSqlClient({ kind: 'pglite' }) });
