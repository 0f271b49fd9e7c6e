#!/usr/bin/env node
// Compiles the native parallel graph builder (this folder) with node-gyp: npm runs this as
// the package's install step, in a clone (`npm ci`) and wherever the package is installed. It is
// optional: without a C++ toolchain (or with a broken one) the install goes on with a warning, and
// the embedded vector DB builds its graphs on one thread (src/platform/vectordb/embedded/
// parallel-builder.ts says which). npm hands its own node-gyp to install scripts
// (npm_config_node_gyp); run by hand, the one bundled with the running npm is used.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const addon = dirname(fileURLToPath(import.meta.url));

function nodeGyp() {
  const fromNpm = process.env.npm_config_node_gyp;
  if (fromNpm && existsSync(fromNpm)) return fromNpm;
  const npmCli = process.env.npm_execpath;
  if (npmCli) {
    const bundled = join(dirname(npmCli), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    if (existsSync(bundled)) return bundled;
  }
  return undefined;
}

function warn(why) {
  console.warn(
    `lattice: the native parallel graph builder was not compiled (${why}); the embedded vector DB builds graphs on one thread`,
  );
  process.exit(0);
}

if (!existsSync(join(addon, 'binding.gyp'))) warn(`${addon} is missing`);
const gyp = nodeGyp();
if (!gyp) warn('node-gyp not found: run this through npm');
const result = spawnSync(process.execPath, [gyp, 'rebuild', '--release'], { cwd: addon, stdio: 'inherit' });
if (result.status !== 0) warn(`node-gyp exited with ${result.status ?? result.signal}`);
