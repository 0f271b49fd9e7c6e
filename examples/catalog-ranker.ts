/**
 * The worked example `lattice up` seeds (the catalog ranker), kept here for the tests and benchmarks
 * that import it from examples/: the example itself lives in src/cli/catalog-ranker.ts, since src/
 * ships without examples/ depending on it.
 */
export * from '../src/cli/catalog-ranker.js';
