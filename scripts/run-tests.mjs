#!/usr/bin/env node
// Runs every test file with Node's test runner, passing the files explicitly (Node 20 does not expand
// globs, and a runner given no files would pass having run nothing). Optional arguments narrow the
// run to files whose path contains one of them: `npm test -- queue config-store`.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function findTests(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findTests(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

const filters = process.argv.slice(2);
const files = findTests('test')
  .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)))
  .sort();
if (files.length === 0) {
  console.error(
    `run-tests: no test files matched ${filters.length ? filters.join(', ') : 'test/**/*.test.ts'}`,
  );
  process.exit(1);
}
console.log(`run-tests: ${files.length} test files`);
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
