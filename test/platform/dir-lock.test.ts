import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { lockDirectory } from '../../src/platform/dir-lock.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { createSqlClient } from '../../src/platform/sql/index.js';

const root = mkdtempSync(join(tmpdir(), 'lattice-lock-'));

describe('lockDirectory', () => {
  test('a second owner is refused while the first holds the lock, and admitted after release', async () => {
    const dir = join(root, 'a');
    const lock = lockDirectory(dir, 'test dir');
    assert.throws(
      () => lockDirectory(dir, 'test dir'),
      (err) => {
        assert.ok(isLatticeError(err, 'FAILED_PRECONDITION'));
        assert.match(err.message, new RegExp(`in use by process ${process.pid}`));
        return true;
      },
    );
    lock.release();
    assert.equal(existsSync(`${dir}.lock`), false);
    lockDirectory(dir, 'test dir').release();
  });

  test('a lock left by a dead process, or cut short, is taken over', async () => {
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    const dir = join(root, 'b');
    writeFileSync(`${dir}.lock`, JSON.stringify({ pid: Number(dead) }));
    lockDirectory(dir, 'test dir').release();
    writeFileSync(`${dir}.lock`, '{"pi');
    lockDirectory(dir, 'test dir').release();
  });

  test('PGlite refuses a data directory another client has open', async () => {
    const dataDir = join(root, 'pg');
    const first = await createSqlClient({ kind: 'pglite', dataDir });
    try {
      await assert.rejects(createSqlClient({ kind: 'pglite', dataDir }), /in use by process/);
    } finally {
      await first.close();
    }
    const again = await createSqlClient({ kind: 'pglite', dataDir });
    assert.deepEqual((await again.query<{ one: number }>('select 1 as one')).rows, [{ one: 1 }]);
    await again.close();
  });
});
