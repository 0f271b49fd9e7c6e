/**
 * One owner per data directory: the embedded vector database lives inside one process. A second
 * process is refused at once with a message that names the owner and the way out; a lock left by a
 * killed process does not block the restart; a second open in the same process is refused too.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/index.js';
import { eventually } from '../../support/servers.js';
import { rejectsWith } from './contract.js';

const HOLDER = fileURLToPath(new URL('./fixtures/hold-vector-db.ts', import.meta.url));

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-vectordb-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts a process that opens `dir`; resolves with its first line of output (`ready …` or `error …`). */
async function holder(
  t: { after: (fn: () => void) => void },
  dir: string,
): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  await eventually(() => output.includes('\n'), 60_000, 'the holder process to open the database');
  return { child, line: output.split('\n')[0]! };
}

/** Resolves once the child has exited, also when it already had (its 'exit' event is gone then). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

describe('embedded vector db: one owner per data directory', () => {
  test('a second process is refused at once, naming the owner and what to do instead', async (t) => {
    const dir = join(tempDir(t), 'db');
    const db = await EmbeddedVectorDb.open({ dir });
    t.after(() => db.close());
    const second = await holder(t, dir);
    assert.match(second.line, /^error FAILED_PRECONDITION /);
    assert.match(second.line, new RegExp(`is in use by process ${process.pid}[ ;(]`));
    assert.match(second.line, /lattice vss/);
    assert.match(second.line, /Qdrant/);
    await exited(second.child);
    assert.equal(second.child.exitCode, 1);
  });

  test('the owner is another process: this one is refused, then admitted once it closed', async (t) => {
    const dir = join(tempDir(t), 'db');
    const first = await holder(t, dir);
    assert.match(first.line, /^ready \d+$/);
    const pid = Number(first.line.split(' ')[1]);
    await rejectsWith(
      EmbeddedVectorDb.open({ dir }),
      'FAILED_PRECONDITION',
      undefined,
      new RegExp(`in use by process ${pid}\\b.*lattice vss`),
    );
    first.child.stdin!.end();
    await exited(first.child);
    const db = await EmbeddedVectorDb.open({ dir });
    await db.close();
  });

  test('a lock left by a SIGKILLed owner does not block the restart', async (t) => {
    const dir = join(tempDir(t), 'db');
    const first = await holder(t, dir);
    assert.match(first.line, /^ready \d+$/);
    first.child.kill('SIGKILL');
    await exited(first.child);
    assert.equal(
      JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pid,
      first.child.pid,
      'the lock was left behind',
    );
    const db = await EmbeddedVectorDb.open({ dir });
    t.after(() => db.close());
    // And by another process after this one: the restarted process owns it now.
    const second = await holder(t, dir);
    assert.match(second.line, new RegExp(`in use by process ${process.pid}`));
  });

  test('a lock naming this process that this process does not hold (a restarted container’s pid 1) is stale', async (t) => {
    const dir = join(tempDir(t), 'db');
    writeFileSync(`${dir}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), start: 1 }));
    const db = await EmbeddedVectorDb.open({ dir });
    await db.close();
  });

  test('opening the same directory twice in one process is refused: open it once and share it', async (t) => {
    const dir = join(tempDir(t), 'db');
    const db = await EmbeddedVectorDb.open({ dir });
    t.after(() => db.close());
    await rejectsWith(
      EmbeddedVectorDb.open({ dir }),
      'FAILED_PRECONDITION',
      undefined,
      new RegExp(`in use by process ${process.pid} \\(this process: open it once\\)`),
    );
  });
});
