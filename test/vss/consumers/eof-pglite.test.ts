import { createSqlClient } from '../../../src/platform/sql/index.js';
import { eofSuite } from './eof-suite.js';

eofSuite({ name: 'PGlite (in memory)', open: () => createSqlClient({ kind: 'pglite' }) });
