/**
 * scripts/run-tests.mjs runs a test file again, once, only when every failure of the run is a test
 * file whose process died by a signal; a second crash, or any failed test, fails the run. Run on
 * folders of small test files written here, through the script itself and the Node it runs on.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
// @ts-expect-error: a plain ES module of the build scripts, without declarations
import { crashesOf } from '../../scripts/test-crashes.mjs';

const root = mkdtempSync(join(tmpdir(), 'lattice-run-tests-'));
after(() => rmSync(root, { recursive: true, force: true }));

const PASSES = `import { it } from 'node:test';\nit('passes', () => {});\n`;
const FAILS = `import assert from 'node:assert/strict';\nimport { it } from 'node:test';\nit('fails', () => assert.equal(1, 2));\n`;
const CRASHES = `import { it } from 'node:test';\nit('crashes', () => process.kill(process.pid, 'SIGSEGV'));\n`;
/** Crashes the first time only: the marker file says it already did. */
const crashesOnce = (marker: string) =>
  `import { existsSync, writeFileSync } from 'node:fs';\nimport { it } from 'node:test';\nit('crashes once', () => {\n  if (existsSync(${JSON.stringify(marker)})) return;\n  writeFileSync(${JSON.stringify(marker)}, '');\n  process.abort();\n});\n`;

function runTests(files: Record<string, string>): { status: number | null; output: string } {
  const tests = mkdtempSync(join(root, 'case-'));
  for (const [name, source] of Object.entries(files)) writeFileSync(join(tests, name), source);
  // Without NODE_TEST_CONTEXT, which would make the inner runner skip its files as nested.
  const { NODE_TEST_CONTEXT: _nested, ...env } = process.env;
  const result = spawnSync(process.execPath, ['scripts/run-tests.mjs'], {
    env: { ...env, RUN_TESTS_DIR: tests },
    encoding: 'utf8',
  });
  return { status: result.status, output: result.stdout + result.stderr };
}

describe('scripts/run-tests.mjs and crashed test files', () => {
  it('a file that crashes once is run again; the run passes and says so', () => {
    const { status, output } = runTests({
      'a.test.ts': PASSES,
      'b.test.ts': crashesOnce(join(root, 'crashed-once')),
    });
    assert.equal(status, 0, output);
    assert.match(output, /run-tests: CRASH\..*\n {2}.*b\.test\.ts: SIGABRT/);
    assert.match(output, /passed when run again/);
  });

  it('a file that crashes every time fails the run', () => {
    const { status, output } = runTests({ 'a.test.ts': PASSES, 'b.test.ts': CRASHES });
    assert.notEqual(status, 0, output);
    assert.match(output, /b\.test\.ts: SIGSEGV/);
    assert.match(output, /run-tests: failed again/);
  });

  it('a failed test beside a crash fails the run at once, nothing run again', () => {
    const { status, output } = runTests({
      'a.test.ts': FAILS,
      'b.test.ts': crashesOnce(join(root, 'crashed-beside-failure')),
    });
    assert.notEqual(status, 0, output);
    assert.doesNotMatch(output, /run-tests: CRASH/);
  });

  it('a file that exits with a code is a failure, not a crash', () => {
    const { status, output } = runTests({
      'a.test.ts': `import { it } from 'node:test';\nit('exits', () => process.exit(3));\n`,
    });
    assert.notEqual(status, 0, output);
    assert.doesNotMatch(output, /run-tests: CRASH/);
  });

  it('reads the failed count and the crashed files from a TAP report', () => {
    const tap = [
      'TAP version 13',
      '# Subtest: /w/a.test.ts',
      'not ok 1 - /w/a.test.ts',
      '  ---',
      '  duration_ms: 360.8',
      "  location: '/w/a.test.ts:1:1'",
      "  failureType: 'testCodeFailure'",
      '  exitCode: ~',
      "  signal: 'SIGTRAP'",
      "  error: 'test failed'",
      '  ...',
      '# Subtest: exits',
      'not ok 2 - /w/b.test.ts',
      '  ---',
      "  location: '/w/b.test.ts:1:1'",
      '  exitCode: 3',
      '  signal: ~',
      '  ...',
      '1..2',
      '# tests 2',
      '# fail 2',
    ].join('\n');
    assert.deepEqual(crashesOf(tap), { failed: 2, crashed: [{ file: '/w/a.test.ts', signal: 'SIGTRAP' }] });
  });
});
