// Whether dist/ (the compiled package) is as new as what it is compiled from: scripts/build.mjs skips
// a build on it (`--if-stale`), and bin/lattice.js runs dist/ inside a clone whenever it is fresh, so a
// CLI call there costs what it costs an installed package (about 0.3 s for --help instead of 1.5-3 s
// under the TypeScript loader) without ever running a stale dist/. Modification times only: walking
// the ~450 input files costs about 10 ms.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir`, recursively. */
export function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

const newest = (paths) => Math.max(...paths.map((f) => statSync(f).mtimeMs));

/** src/gen was generated after proto/, buf's files and the generator script last changed. */
export function generatedIsFresh(root = '.') {
  const at = (path) => join(root, path);
  if (!existsSync(at('src/gen'))) return false;
  const generated = files(at('src/gen')).map((f) => statSync(f).mtimeMs);
  if (generated.length === 0) return false;
  const inputs = [
    ...files(at('proto')),
    ...['buf.yaml', 'buf.gen.yaml', 'package-lock.json', 'scripts/gen-proto.mjs'].map(at),
  ];
  return newest(inputs) < Math.min(...generated);
}

/** The stamp a build leaves in dist/ once it is complete. */
const STAMP = 'dist/.built';

/** Files beside the sources that change what the build emits. */
const CONFIGURATION = [
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
  'scripts/build.mjs',
  'scripts/build-console.mjs',
];

/** dist/ was built after every file the build reads (sources, protos, configuration) last changed. */
export function distIsFresh(root = '.') {
  const at = (path) => join(root, path);
  if (!existsSync(at(STAMP)) || !generatedIsFresh(root)) return false;
  const inputs = [
    ...files(at('src')),
    ...files(at('examples')),
    ...files(at('proto')),
    ...CONFIGURATION.map(at),
  ];
  return statSync(at(STAMP)).mtimeMs > newest(inputs);
}
