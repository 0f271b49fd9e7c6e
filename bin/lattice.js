#!/usr/bin/env node
// The `lattice` command. An installed package has no src/: it runs the compiled JavaScript in dist/,
// with no TypeScript loader in the process. Inside a clone the sources are there and win, loaded
// through tsx's ESM hooks, so development and the tests need no build step (and never run a stale
// dist/). A clone installed without dev dependencies (no tsx) runs dist/ if it was built.
import { existsSync } from 'node:fs';

const sources = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);

if (existsSync(sources) && hasTsx()) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(sources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  console.error('lattice: dist/ is missing; run `npm run build` (or install tsx to run the sources)');
  process.exit(1);
}

function hasTsx() {
  try {
    import.meta.resolve('tsx/esm/api');
    return true;
  } catch {
    return false;
  }
}
