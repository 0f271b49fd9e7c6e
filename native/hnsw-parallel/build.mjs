#!/usr/bin/env node
// Compiles the native parallel graph builder (this folder) with node-gyp: npm runs this as
// the package's install step, in a clone (`npm ci`) and wherever the package is installed. It is
// optional: without a C++ toolchain (or with a broken one) the install goes on with a warning, and
// the embedded vector DB builds its graphs on one thread (src/platform/vectordb/embedded/
// parallel-builder.ts says which). npm hands its own node-gyp to install scripts
// (npm_config_node_gyp); run by hand (`node native/hnsw-parallel/build.mjs`), the npm beside this node's.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const addon = dirname(fileURLToPath(import.meta.url));

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
    `lattice: the native parallel graph builder was not compiled (${why}); the embedded vector DB builds graphs on one thread`,
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
