#!/usr/bin/env node
// Generates TypeScript from proto/ into src/gen/ (never edited by hand, not committed).
// buf and the ts-proto plugin both ship in node_modules, so this runs offline.
import { spawnSync } from 'node:child_process';

const result = spawnSync('node_modules/.bin/buf', ['generate'], { stdio: 'inherit' });
if (result.status !== 0) {
  console.error('gen-proto: buf generate failed');
  process.exit(result.status ?? 1);
}
