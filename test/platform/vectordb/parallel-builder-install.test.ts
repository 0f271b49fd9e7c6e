/**
 * The install step of the native parallel graph builder (native/hnsw-parallel/build.mjs): npm runs it
 * on every `npm install` in a clone, and it compiles only when the addon's inputs (its sources, the
 * hnswlib-node and node-addon-api versions, the platform) changed since the build it recorded, so a
 * reinstall neither spends seconds compiling nor deletes a working addon to compile it again.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

const addon = join(import.meta.dirname, '../../../native/hnsw-parallel');

function build(dir: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [join(dir, 'build.mjs'), ...args], { encoding: 'utf8' });
  return { status: result.status, out: `${result.stdout}${result.stderr}`.trim() };
}

describe('parallel graph builder install step', () => {
  test('the addon npm ci compiled is up to date, and running the install step again keeps it', () => {
    assert.deepEqual(build(addon, '--check'), { status: 0, out: 'up to date' });
    const binary = join(addon, 'build/Release/hnsw_parallel.node');
    const before = statSync(binary).mtimeMs;
    assert.deepEqual(build(addon), { status: 0, out: '' });
    assert.equal(statSync(binary).mtimeMs, before, 'the addon was not compiled again');
  });

  test('a build is stale until it records its inputs, and again once a source changes', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-hnsw-parallel-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    for (const name of ['build.mjs', 'binding.gyp', 'src']) {
      cpSync(join(addon, name), join(dir, name), { recursive: true });
    }
    assert.deepEqual(build(dir, '--check'), { status: 1, out: 'stale: not built yet' });

    mkdirSync(join(dir, 'build/Release'), { recursive: true });
    writeFileSync(join(dir, 'build/Release/hnsw_parallel.node'), 'a compiled addon');
    assert.deepEqual(build(dir, '--check'), {
      status: 1,
      out: 'stale: built without a record of its inputs',
    });

    const digest = build(dir, '--digest');
    assert.equal(digest.status, 0);
    assert.match(digest.out, /^[0-9a-f]{64}$/);
    writeFileSync(join(dir, 'build/Release/hnsw_parallel.inputs'), `${digest.out}\n`);
    assert.deepEqual(build(dir, '--check'), { status: 0, out: 'up to date' });
    // The install step itself leaves an up-to-date build alone (no compiler is reached).
    assert.deepEqual(build(dir), { status: 0, out: '' });

    appendFileSync(join(dir, 'src/parallel_builder.cc'), '\n// changed\n');
    assert.deepEqual(build(dir, '--check'), {
      status: 1,
      out: 'stale: its sources or dependencies changed',
    });
    assert.notEqual(build(dir, '--digest').out, digest.out);
  });
});
