import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));

test('output into a pipe whose reader has gone (lattice … | head) ends quietly with exit 0', () => {
  // `true` exits before lattice writes: every write meets a closed pipe (EPIPE).
  const result = spawnSync(
    'bash',
    ['-c', `"${process.execPath}" "${bin}" settings | true; echo "exit \${PIPESTATUS[0]}" >&2`],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.doesNotMatch(result.stderr, /EPIPE|at .*\(/);
  assert.match(result.stderr, /exit 0/);
});
