/** The vss Search filter scenario (vss-filters-scenario.ts) on the embedded vector database. */
import { inProcessVssStack } from '../support/vss-stack.js';
import { filtersScenario } from './vss-filters-scenario.js';

filtersScenario('embedded', () => inProcessVssStack(), 'EMBEDDED');
