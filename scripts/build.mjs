#!/usr/bin/env node
// Compiles the package into dist/ (JavaScript, declarations, source maps) from tsconfig.build.json,
// starting from an empty directory so no file of a removed or renamed source survives into a tarball.
// With `--if-stale` it does nothing when dist/ is newer than every input (npm start and npm test run
// it so: the clone starts compiled JavaScript, without a TypeScript loader's memory and start time).
// dist/ mirrors the clone (dist/src, dist/examples), so proto/ and package.json stay one walk up from
// every module (src/platform/package-root.ts).
//
// src/gen is generated first unless it is newer than proto/ and buf's files: buf cleans src/gen before
// writing it, and the package test builds while other tests import from src/gen.
import { spawnSync } from 'node:child_process';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildConsole } from './build-console.mjs';
import { distIsFresh, generatedIsFresh } from './dist-freshness.mjs';

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`build: ${command} ${args.join(' ')} failed`);
    process.exit(result.status ?? 1);
  }
}

// `--if-stale` (npm start, npm test): nothing to do when dist/ was built after every input changed.
if (process.argv.includes('--if-stale') && distIsFresh()) process.exit(0);

if (!generatedIsFresh()) run(process.execPath, ['scripts/gen-proto.mjs']);
// Compiled into a directory of its own, then swapped in: a process running from dist/ meanwhile (a
// test's `lattice up`, a concurrent `npm start`) never finds it half written or gone for longer than
// two renames. The directory sits beside dist/ so the source maps' relative paths stay right.
const partial = `dist.partial-${process.pid}`;
const previous = `dist.previous-${process.pid}`;
rmSync(partial, { recursive: true, force: true });
console.log('build: compiling src/ into dist/ (sources changed since the last build)');
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', partial]);
if (!existsSync(join(partial, 'src/cli/main.js'))) {
  rmSync(partial, { recursive: true, force: true });
  console.error('build: src/cli/main.js was not emitted');
  process.exit(1);
}
// The web console beside the compiled sources (dist/console), served by every ops server.
let consoleBytes;
try {
  consoleBytes = await buildConsole(partial);
} catch (err) {
  rmSync(partial, { recursive: true, force: true });
  console.error(`build: bundling the console failed: ${err.message}`);
  process.exit(1);
}
console.log(`build: console bundled (${(consoleBytes / 1024).toFixed(1)} KB gzipped)`);
writeFileSync(join(partial, '.built'), '');
if (existsSync('dist')) renameSync('dist', previous);
try {
  renameSync(partial, 'dist');
} catch (err) {
  // A concurrent build swapped its own dist/ in between the two renames: it is as fresh as ours.
  if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
  rmSync(partial, { recursive: true, force: true });
}
rmSync(previous, { recursive: true, force: true });
console.log('build: dist/ ready');
