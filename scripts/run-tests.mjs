#!/usr/bin/env node
// Runs every test file with Node's test runner, passing the files explicitly (Node 20 does not expand
// globs, and a runner given no files would pass having run nothing). Optional arguments narrow the
// run to files whose path contains one of them: `npm test -- queue config-store`.
//
// RUN_TESTS_DIR names another folder of tests (its own test uses it); `test` by default.
//
// A test file whose process is killed by a signal (a crash of the runtime, not a failed test) is
// run once more, and the run says so loudly. Why: V8 in Node 22–24 can abort while PGlite's
// WebAssembly instances are created and freed many times in one process (`Check failed:
// jit_page.has_value()`, nodejs/node#64500), which the suite does hundreds of times and the product
// once per process; and a Node 20 run once lost a PGlite test file to a process death that its log
// did not explain. Only when every failure of the run is such a crash is anything run again; a file
// that crashes twice, or any failed test, fails the run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { crashesOf } from './test-crashes.mjs';

function findTests(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findTests(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

/**
 * Node's on-disk compile cache (Node 22.1+; Node 20 ignores the variable) for the test processes and
 * every process they start: each of the suite's hundreds of processes loads the same dependencies,
 * and V8's cached code for them saves about a tenth of a process's start (a caller's own
 * NODE_COMPILE_CACHE wins).
 */
const compileCache = join(tmpdir(), 'lattice-test-compile-cache');

function run(files, tapFile) {
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tapFile}`,
      '--test-concurrency=2',
      ...files,
    ],
    { stdio: 'inherit', env: { NODE_COMPILE_CACHE: compileCache, ...process.env } },
  );
  return result.status ?? 1;
}

const filters = process.argv.slice(2);
const files = findTests(process.env.RUN_TESTS_DIR ?? 'test')
  .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)))
  .sort();
if (files.length === 0) {
  console.error(
    `run-tests: no test files matched ${filters.length ? filters.join(', ') : 'test/**/*.test.ts'}`,
  );
  process.exit(1);
}
console.log(`run-tests: ${files.length} test files`);
const reports = mkdtempSync(join(tmpdir(), 'lattice-test-report-'));
let status;
try {
  status = runAll(files);
} finally {
  rmSync(reports, { recursive: true, force: true });
}
process.exit(status);

function runAll(files) {
  const status = run(files, join(reports, 'run.tap'));
  if (status === 0) return 0;
  const { failed, crashed } = crashesOf(readFileSync(join(reports, 'run.tap'), 'utf8'));
  if (crashed.length === 0 || crashed.length !== failed) return status;
  const again = crashed.map((c) => relative(process.cwd(), c.file));
  const listed = crashed.map((c, i) => `  ${again[i]}: ${c.signal}`).join('\n');
  console.log(`\nrun-tests: CRASH. Every failure of this run is a test file whose process died by a signal:`);
  console.log(`${listed}\nrun-tests: running them once more (scripts/run-tests.mjs says why)\n`);
  const second = run(again, join(reports, 'again.tap'));
  console.log(
    second === 0
      ? 'run-tests: passed when run again; the crash is still in the log above'
      : 'run-tests: failed again',
  );
  return second;
}
