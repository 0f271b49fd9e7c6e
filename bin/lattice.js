#!/usr/bin/env node
// The `lattice` command. An installed package has no src/: it runs the compiled JavaScript in dist/,
// with no TypeScript loader in the process. Inside a clone it runs dist/ too whenever dist/ is as new
// as the sources (npm start and npm test build it), and otherwise the sources through tsx's ESM hooks,
// so development and the tests need no build step and never run a stale dist/. A clone installed
// without dev dependencies (no tsx) runs dist/ if it was built.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const sources = new URL('src/cli/main.ts', root);
const compiled = new URL('dist/src/cli/main.js', root);

if (existsSync(sources) && hasTsx() && !(await compiledIsFresh())) {
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

/** Only a clone has scripts/ (the package does not ship it). */
async function compiledIsFresh() {
  const check = new URL('scripts/dist-freshness.mjs', root);
  if (!existsSync(check)) return false;
  const { distIsFresh } = await import(check.href);
  return distIsFresh(fileURLToPath(root));
}
