import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DirectoryInUseError, lockDirectory } from '../../src/platform/dir-lock.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { createSqlClient } from '../../src/platform/sql/index.js';
import { eventually } from '../support/servers.js';

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
        // Typed, so callers that reach the holder another way need not read the message.
        assert.ok(err instanceof DirectoryInUseError);
        assert.equal(err.holderPid, process.pid);
        return true;
      },
    );
    lock.release();
    assert.equal(existsSync(`${dir}.lock`), false);
    lockDirectory(dir, 'test dir').release();
  });

  test('a directory whose parent does not exist yet (a fresh data directory) can be locked', () => {
    const dir = join(root, 'fresh', 'data', 'vectordb');
    const lock = lockDirectory(dir, 'test dir');
    assert.equal(existsSync(`${dir}.lock`), true);
    lock.release();
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

  test('a lock whose pid now belongs to another live process (another start time) is taken over', {
    skip: process.platform !== 'linux' && 'start times are read from /proc',
  }, async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const dir = join(root, 'c');
      // Written without a start time (as before start times were recorded): a live pid holds it.
      writeFileSync(`${dir}.lock`, JSON.stringify({ pid: other.pid, host: hostname() }));
      assert.throws(() => lockDirectory(dir, 'test dir'), new RegExp(`in use by process ${other.pid}`));
      writeFileSync(`${dir}.lock`, JSON.stringify({ pid: other.pid, host: hostname(), start: 1 }));
      lockDirectory(dir, 'test dir').release();
    } finally {
      other.kill();
    }
  });

  test('a lock held by a process killed a moment ago, still a zombie, is taken over at once', {
    skip: process.platform !== 'linux' && 'process states are read from /proc',
  }, async () => {
    const dir = join(root, 'zombie');
    const holder = fileURLToPath(new URL('./fixtures/hold-dir-lock.ts', import.meta.url));
    // The holder runs in the background of a shell that then becomes `sleep`, which never reaps it:
    // once killed, the holder stays a zombie (as a killed `lattice` does until its parent waits).
    const parent = spawn(
      'sh',
      ['-c', `"${process.execPath}" --import tsx "${holder}" "${dir}" & exec sleep 120`],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      let output = '';
      parent.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
      });
      await eventually(() => /ready \d+/.test(output), 60_000, 'the holder to lock the directory');
      const pid = Number(/ready (\d+)/.exec(output)![1]);
      assert.throws(() => lockDirectory(dir, 'test dir'), new RegExp(`in use by process ${pid}`));
      process.kill(pid, 'SIGKILL');
      const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
      await eventually(() => state() === 'Z', 30_000, `process ${pid} to be a zombie`);
      lockDirectory(dir, 'test dir').release();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  test('the refusal carries the caller’s hint', () => {
    const dir = join(root, 'd');
    const lock = lockDirectory(dir, 'test dir');
    try {
      assert.throws(() => lockDirectory(dir, 'test dir', 'use a server instead'), /; use a server instead$/);
    } finally {
      lock.release();
    }
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
