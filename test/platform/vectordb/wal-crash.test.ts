/**
 * Acknowledged writes survive SIGKILL: a child process (fixtures/wal-writer.ts) upserts and deletes
 * concurrently, reporting every acknowledged call on stdout, and is killed at a random point of its
 * progress, four times in a row on the same directory (each restart also proves a dead owner's lock
 * does not block). Then every acknowledged point must be there with its exact vector and payload,
 * and every acknowledged delete must hold.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EmbeddedVectorDb } from '../../../src/platform/vectordb/index.js';
import { eventually } from '../../support/servers.js';
import { BATCH, COLLECTION, pointAt } from './fixtures/wal-points.js';

const WRITER = fileURLToPath(new URL('./fixtures/wal-writer.ts', import.meta.url));
const RUNS = 4;

interface Run {
  child: ChildProcess;
  /** Whole lines only: a line cut by the kill was never fully reported. */
  lines: string[];
  exited: Promise<NodeJS.Signals | null>;
  stderr: string;
}

function startWriter(dir: string, run: number): Run {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', WRITER, dir, String(run), String(run * 1_000_000)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const state: Run = {
    child,
    lines: [],
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal))),
  };
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    state.lines.push(...parts);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    state.stderr += chunk;
  });
  return state;
}

test('every acknowledged write survives repeated SIGKILLs', { timeout: 180_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-wal-crash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const upserted: number[] = [];
  const deletedBatches = new Set<number>();
  const deleteIssued = new Set<number>();
  for (let run = 1; run <= RUNS; run++) {
    const writer = startWriter(dir, run);
    t.after(() => {
      if (writer.child.exitCode === null && writer.child.signalCode === null) writer.child.kill('SIGKILL');
    });
    await eventually(
      () => writer.lines.some((l) => l.startsWith('ready')) || writer.child.exitCode !== null,
      60_000,
      `run ${run} to open the database (the previous owner was killed)`,
    );
    assert.ok(writer.lines[0]?.startsWith('ready'), `run ${run} failed to start: ${writer.stderr}`);
    // A random point of its progress: anywhere from right after opening to a few hundred calls in.
    const killAfter = Math.floor(Math.random() * 300);
    await eventually(
      () => writer.lines.length > killAfter,
      60_000,
      `run ${run}: ${killAfter} acknowledgements`,
    );
    writer.child.kill('SIGKILL');
    assert.equal(await writer.exited, 'SIGKILL');
    const acks = writer.lines.slice(1).map((line) => line.split(' '));
    for (const [kind, first] of acks) {
      if (kind === 'U') upserted.push(Number(first));
      else if (kind === 'D') deletedBatches.add(Number(first));
      else assert.fail(`unexpected line from run ${run}: ${kind}`);
    }
    // A batch the deleter may have been working on when the kill came: its delete may or may not stand.
    for (const first of upserted) if (first % (3 * BATCH) === 0) deleteIssued.add(first);
    t.diagnostic(`run ${run}: killed after ${acks.length} acknowledged calls (aimed at ${killAfter})`);
  }

  const db = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
  t.after(() => db.close());
  let checked = 0;
  for (const first of upserted) {
    const run = Math.floor(first / 1_000_000);
    const ids = Array.from({ length: BATCH }, (_, k) => `p${first + k}`);
    const stored = await db.getPoints(COLLECTION, ids);
    for (let k = 0; k < BATCH; k++) {
      const i = first + k;
      const doomed = i % 7 === 0;
      const got = stored[k];
      if (doomed && deletedBatches.has(first)) {
        assert.equal(got, undefined, `p${i}: its delete was acknowledged`);
        continue;
      }
      if (doomed && deleteIssued.has(first) && got === undefined) continue; // unacknowledged delete
      assert.ok(got, `p${i} was acknowledged (run ${run}) but is missing`);
      const expected = pointAt(i, run);
      assert.deepEqual(got.vector, expected.vector, `p${i}: vector`);
      assert.deepEqual(got.payload, expected.payload, `p${i}: payload`);
      checked++;
    }
  }
  t.diagnostic(`${checked} acknowledged points checked, ${deletedBatches.size} acknowledged deletes`);
  assert.ok(upserted.length > 0);
});
