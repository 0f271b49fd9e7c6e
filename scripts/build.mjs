#!/usr/bin/env node
// Compiles the package into dist/ (JavaScript, declarations, source maps) from tsconfig.build.json,
// starting from an empty dist/ so no file of a removed or renamed source survives into a tarball.
// dist/ mirrors the clone (dist/src, dist/examples), so proto/ and package.json stay one walk up from
// every module (src/platform/package-root.ts).
//
// src/gen is generated first unless it is newer than proto/ and buf's files: buf cleans src/gen before
// writing it, and the package test builds while other tests import from src/gen.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`build: ${command} ${args.join(' ')} failed`);
    process.exit(result.status ?? 1);
  }
}

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

function generatedIsFresh() {
  if (!existsSync('src/gen')) return false;
  const generated = files('src/gen').map((f) => statSync(f).mtimeMs);
  if (generated.length === 0) return false;
  const inputs = [...files('proto'), 'buf.yaml', 'buf.gen.yaml', 'package-lock.json'];
  return Math.max(...inputs.map((f) => statSync(f).mtimeMs)) < Math.min(...generated);
}

if (!generatedIsFresh()) run(process.execPath, ['scripts/gen-proto.mjs']);
rmSync('dist', { recursive: true, force: true });
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
if (!existsSync('dist/src/cli/main.js')) {
  console.error('build: dist/src/cli/main.js was not emitted');
  process.exit(1);
}
console.log('build: dist/ ready');
