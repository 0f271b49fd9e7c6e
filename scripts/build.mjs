#!/usr/bin/env node
// Compiles the package into dist/ (JavaScript, declarations, source maps) from tsconfig.build.json:
// generates src/gen from proto/ first, and starts from an empty dist/ so no file of a removed or
// renamed source survives into a tarball. dist/ mirrors the clone (dist/src, dist/examples), so
// proto/ and package.json stay one walk up from every module (src/platform/package-root.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`build: ${command} ${args.join(' ')} failed`);
    process.exit(result.status ?? 1);
  }
}

run(process.execPath, ['scripts/gen-proto.mjs']);
rmSync('dist', { recursive: true, force: true });
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
if (!existsSync('dist/src/cli/main.js')) {
  console.error('build: dist/src/cli/main.js was not emitted');
  process.exit(1);
}
console.log('build: dist/ ready');
