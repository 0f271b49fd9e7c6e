/**
 * The vss Search filter scenario (vss-filters-scenario.ts) on pgvector, selected as an operator does
 * (LATTICE_VSS_VECTOR_DB=pgvector), in the stack's PGlite SQL database: serving and consumers write
 * and search through the pgvector adapter end to end.
 */
import { inProcessVssStack } from '../support/vss-stack.js';
import { filtersScenario } from './vss-filters-scenario.js';

filtersScenario(
  'pgvector on PGlite',
  () => inProcessVssStack({ env: { LATTICE_VSS_VECTOR_DB: 'pgvector' } }),
  'PGVECTOR',
);
