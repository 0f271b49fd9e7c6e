/**
 * Crash test of the operations engine: the engine (with the consumers and the job runner, on PGlite,
 * the embedded vector DB and the journaled memory queue in one data directory) runs as a process
 * of its own (test/support/admin-engine-process.ts) and resets a model that already serves version
 * 1. For every transition of the reset in turn, a fresh copy of the data directory is reset by a
 * process that stops right after that transition committed and is SIGKILLed there; a new process
 * then finishes the operation. Each time: the operation SUCCEEDED on its first attempt, one
 * collection per version (version 1's dropped), one flip (every variant READY on version 2, the
 * previous read versions recorded once), and exact counts in the version, the store and the
 * collection. About 8 transitions × 2 processes: this file takes roughly a minute.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createSqlClient } from '../../../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../../../src/platform/vectordb/index.js';
import { RESET_STEPS } from '../../../../src/vss/admin/operations/index.js';
import { collectionName } from '../../../../src/vss/model/index.js';
import { openVssStore } from '../../../../src/vss/store/index.js';
import { type AdminProcessConfig, adminDataPaths } from '../../../support/admin-engine-process.js';
import { type Catalog, registerCatalog, writeTrainingData } from '../../../support/admin-engine-world.js';
import { eventually } from '../../../support/servers.js';

const script = fileURLToPath(new URL('../../../support/admin-engine-process.ts', import.meta.url));
const ROWS = 400;
/** Start, then one per step: the last is SUCCEEDED. */
const TRANSITIONS = RESET_STEPS.length + 1;

interface Child {
  child: ChildProcess;
  output(): string;
  waitFor(text: string, timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

function runChild(config: AdminProcessConfig): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_TEST_CONTEXT: '' },
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  return {
    child,
    output: () => output,
    waitFor: (text, timeoutMs = 60_000) =>
      eventually(
        () => {
          if (output.includes(text)) return true;
          if (exited) throw new Error(`the admin process exited before printing ${text}:\n${output}`);
          return false;
        },
        timeoutMs,
        `the admin process to print ${text}:\n${output}`,
      ),
    kill: async () => {
      if (!exited) child.kill('SIGKILL');
      await exit;
    },
    stop: async () => {
      if (!exited) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

describe('vss admin engine: SIGKILL at every transition of a reset, then restart', () => {
  let base: string;
  let catalog: Catalog;
  const dirs: string[] = [];

  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'lattice-admin-crash-'));
    dirs.push(base);
    const training = join(base, 'training');
    writeTrainingData(training, ROWS);
    const sql = await createSqlClient({ kind: 'pglite', dataDir: adminDataPaths(base).sql });
    try {
      catalog = await registerCatalog(await openVssStore(sql), training);
    } finally {
      await sql.close();
    }
    // Version 1 serving, as the reset under test finds it.
    const first = runChild({
      dataDir: base,
      entity: catalog.entity,
      modelName: 'm',
      stopAt: null,
      resetKey: 'base',
    });
    try {
      await first.waitFor('DONE', 120_000);
    } finally {
      await first.stop();
    }
  });
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  for (let stopAt = 1; stopAt <= TRANSITIONS; stopAt++) {
    it(`killed after transition ${stopAt} of ${TRANSITIONS}: finishes with one flip and exact counts`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'lattice-admin-crash-run-'));
      dirs.push(dataDir);
      cpSync(base, dataDir, { recursive: true });
      // The training files are named by absolute path in the model: the copy reads the base's.
      const config = { dataDir, entity: catalog.entity, modelName: 'm', resetKey: 'crash' };
      const crashed = runChild({ ...config, stopAt });
      try {
        await crashed.waitFor('STOPPED');
      } finally {
        await crashed.kill();
      }
      const step = /STEP \d+ (\S+) (\S+)\n(?:DONE\n)?STOPPED/.exec(crashed.output());
      assert.ok(step, crashed.output());
      const restarted = runChild({ ...config, stopAt: null });
      try {
        await restarted.waitFor('DONE');
      } finally {
        await restarted.stop();
      }

      const paths = adminDataPaths(dataDir);
      const sql = await createSqlClient({ kind: 'pglite', dataDir: paths.sql });
      const vectorDb = await EmbeddedVectorDb.open({ dir: paths.vectordb, snapshotIntervalMs: 0 });
      try {
        const store = await openVssStore(sql);
        const [op] = (await store.operations.list(catalog)).filter((o) => o.idempotencyKey === 'crash');
        assert.equal(op?.status, 'SUCCEEDED', JSON.stringify(op));
        assert.equal(op.attempts, 1);
        assert.equal(op.result?.version, 2);
        assert.deepEqual(op.result?.previous_read_versions, { all: 1, live: 1 });
        assert.deepEqual(op.result?.dropped_versions, [1]);
        for (const variant of ['all', 'live']) {
          const v = await store.variants.get({ ...catalog, variant });
          assert.equal(v.state, 'READY');
          assert.equal(v.readVersion, 2);
          assert.equal(v.writeVersion, 2);
        }
        const versions = await store.versions.list(catalog);
        assert.deepEqual(
          versions.map((v) => [v.version, v.status, v.ingestedCount]),
          [
            [2, 'SERVING', ROWS],
            [1, 'DROPPED', ROWS],
          ],
        );
        assert.deepEqual(await vectorDb.listCollections(), [collectionName(catalog.entity, 'm', 2)]);
        assert.equal((await vectorDb.collectionInfo(collectionName(catalog.entity, 'm', 2))).points, ROWS);
        assert.equal(await store.embeddings.count(catalog.embeddingsTable, 'm', 2), ROWS);
        assert.equal(await store.embeddings.count(catalog.embeddingsTable, 'm', 1), 0);
        assert.deepEqual(op.result?.ingestion, {
          events: ROWS,
          applied: ROWS,
          rejected: 0,
          points_written: ROWS,
        });
      } finally {
        await vectorDb.close();
        await sql.close();
      }
    });
  }
});
