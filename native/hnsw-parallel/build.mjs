#!/usr/bin/env node
// Compiles the embedded vector DB's native addon (this folder: the parallel graph builder and the
// graph searched on a pool of threads) with node-gyp: npm runs this as the package's install step,
// in a clone (`npm ci`) and wherever the package is installed. It is optional: without a C++
// toolchain (or with a broken one) the install goes on with a warning, and the embedded vector DB
// builds its graphs on one thread and searches them on the event loop (src/platform/vectordb/
// embedded/index/parallel-builder.ts and graph-index.ts say which). npm hands its own node-gyp to install scripts
// (npm_config_node_gyp); run by hand (`node native/hnsw-parallel/build.mjs`), the npm beside this node's.
//
// npm runs the install step again on every `npm install` in a clone. A build whose inputs (this
// folder's sources, the hnswlib-node and node-addon-api versions it compiles against, the platform)
// have not changed since is kept: the compile takes seconds, and node-gyp's rebuild deletes the
// working addon before it starts. The build records its inputs' digest beside the addon.
//   node build.mjs           compile unless the addon is up to date
//   node build.mjs --force   compile anyway
//   node build.mjs --check   exit 0 when the addon is up to date, 1 (saying why) when not
//   node build.mjs --digest  print the inputs' digest
// It is a Node-API addon (NAPI_VERSION in binding.gyp), so one build serves every Node version.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const addon = dirname(fileURLToPath(import.meta.url));
const binary = join(addon, 'build', 'Release', 'hnsw_parallel.node');
const stamp = join(addon, 'build', 'Release', 'hnsw_parallel.inputs');

/** The version of a package the compile includes headers from, as this folder resolves it. */
function versionOf(name) {
  try {
    return JSON.parse(
      readFileSync(createRequire(join(addon, 'binding.gyp')).resolve(`${name}/package.json`), 'utf8'),
    ).version;
  } catch {
    return 'not found';
  }
}

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]));
}

/** What the compiled addon depends on, as one digest. */
function inputsDigest() {
  const hash = createHash('sha256');
  hash.update(`${process.platform} ${process.arch}\n`);
  for (const name of ['hnswlib-node', 'node-addon-api']) hash.update(`${name} ${versionOf(name)}\n`);
  for (const file of [join(addon, 'binding.gyp'), ...filesUnder(join(addon, 'src'))]) {
    hash.update(`${file.slice(addon.length + 1)}\n`);
    hash.update(readFileSync(file));
  }
  return hash.digest('hex');
}

/** Why the addon needs compiling, or undefined when the one built is up to date. */
function staleness() {
  if (!existsSync(binary)) return 'not built yet';
  if (!existsSync(stamp)) return 'built without a record of its inputs';
  if (readFileSync(stamp, 'utf8').trim() !== inputsDigest()) return 'its sources or dependencies changed';
  return undefined;
}

const args = process.argv.slice(2);
if (args.includes('--digest')) {
  console.log(inputsDigest());
  process.exit(0);
}
if (args.includes('--check')) {
  const why = staleness();
  console.log(why === undefined ? 'up to date' : `stale: ${why}`);
  process.exit(why === undefined ? 0 : 1);
}
if (!args.includes('--force') && staleness() === undefined) process.exit(0);

function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    process.env.npm_execpath &&
      join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    // Run by hand: the npm installed beside this node.
    join(
      dirname(process.execPath),
      '..',
      'lib',
      'node_modules',
      'npm',
      'node_modules',
      'node-gyp',
      'bin',
      'node-gyp.js',
    ),
  ];
  return candidates.find((path) => path && existsSync(path));
}

function warn(why) {
  console.warn(
    `lattice: the native graph addon was not compiled (${why}); the embedded vector DB builds graphs on one thread and searches them on the event loop`,
  );
  process.exit(0);
}

if (!existsSync(join(addon, 'binding.gyp'))) warn(`${addon} is missing`);
const gyp = nodeGyp();
if (!gyp) warn('node-gyp not found: run it through npm, `npm run install`');
// Node's own headers, as npm passes them to install scripts (npm_config_nodedir): node-gyp would
// otherwise download them.
const prefix = join(dirname(process.execPath), '..');
const headers =
  !process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))
    ? [`--nodedir=${prefix}`]
    : [];
const result = spawnSync(process.execPath, [gyp, 'rebuild', '--release', '--loglevel=warn', ...headers], {
  cwd: addon,
  stdio: 'inherit',
});
if (result.status !== 0) warn(`node-gyp exited with ${result.status ?? result.signal}`);
writeFileSync(stamp, `${inputsDigest()}\n`);
