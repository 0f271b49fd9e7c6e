/**
 * Crash test of a whole reset (issue 36): `lattice vss` (admin, consumers and serving in one
 * process) runs a RESET_MODEL of 30,000 rows (three JSON Lines files, 16-d) and is SIGKILLed three
 * times at random moments of its `ingesting` step, each time restarted at once on the same data
 * directory. Nobody retries the operation: it succeeds by itself (one attempt, no error), and every
 * id is in the embedding store and in the collection exactly once, with its vector; the ingestion is
 * counted exactly once.
 *
 * On embedded defaults (the restart takes the killed process's job over at once: its directory locks
 * prove it dead) and on PostgreSQL + JetStream (the job is taken over when its lease, 2 s here,
 * lapses; the operation waits for it).
 *
 * VSS_RESET_CRASH_SEED replays a run's kill points (each run prints its seed).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { seededRandom } from '../../src/platform/random.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/index.js';
import { collectionName } from '../../src/vss/model/index.js';
import { openVssStore } from '../../src/vss/store/index.js';
import { adminCall, registerModelBody } from '../support/admin-http.js';
import { type LatticeVssProcess, startLatticeVss } from '../support/lattice-vss-process.js';
import { assertResetIngestedOnce } from '../support/reset-checks.js';
import { eventually, realServer } from '../support/servers.js';
import { seededVector, storedRows } from '../support/vss-ingest-catalog.js';
import { isolatedDistributedSettings } from '../support/vss-stack.js';
import { writeJsonLinesFile } from '../vss/admin/jobs/training-data.js';

const ROWS = 30_000;
const FILES = 3;
const DIMENSION = 16;
const KILLS = 3;
const ENTITY = 'crash';
const MODEL = 'resets';
const TABLE = 'crash_embeddings';
const SEED = Number(process.env.VSS_RESET_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];

const idOf = (i: number) => `r${i}`;

interface Mode {
  env: Record<string, string>;
  settingsFile?: string;
  openSql(): Promise<SqlClient>;
  cleanup(): Promise<void>;
}

function embedded(dir: string): Mode {
  const dataDir = join(dir, 'data');
  return {
    env: { LATTICE_DATA_DIR: dataDir },
    openSql: () =>
      createSqlClient({
        kind: 'pglite',
        dataDir: loadSettings({ env: { LATTICE_DATA_DIR: dataDir } }).sql.dataDir,
      }),
    cleanup: async () => {},
  };
}

async function distributed(dir: string, nats: string, postgres: string): Promise<Mode> {
  const isolated = await isolatedDistributedSettings(dir, { nats, postgres }, 'rcrash', {
    // A short ack wait and job lease, so what the killed process held comes back in seconds.
    consumers: { ackWaitMs: 2000 },
    admin: { pollIntervalMs: 200, jobRunner: { leaseMs: 2000 } },
  });
  return {
    ...isolated,
    openSql: () => createSqlClient({ kind: 'postgres', url: postgres, searchPath: isolated.schema }),
  };
}

function writeTraining(dir: string): void {
  const per = ROWS / FILES;
  for (let f = 0; f < FILES; f++) {
    const rows = [];
    for (let i = f * per; i < (f + 1) * per; i++)
      rows.push({ id: idOf(i), emb: seededVector(i, DIMENSION), n: i });
    writeJsonLinesFile(join(dir, `part-${f}.jsonl`), rows);
  }
}

async function register(base: string, training: string): Promise<void> {
  const calls: [string, Record<string, unknown>][] = [
    [
      '/register-store',
      {
        store_id: 3,
        entity: ENTITY,
        db_conf_id: 'local',
        embeddings_table: TABLE,
        aggregator_table: 'crash_attributes',
      },
    ],
    [
      '/register-model',
      registerModelBody({
        entity: ENTITY,
        modelName: MODEL,
        storeId: 3,
        dimension: DIMENSION,
        trainingDataPath: `file://${training}`,
      }),
    ],
    [
      '/register-variant',
      {
        entity: ENTITY,
        model_name: MODEL,
        variant: 'all',
        vss_filter: { criteria: [] },
        vectordb_type: 'EMBEDDED',
        vectordb_config: {},
        job_frequency: 'FREQ_1W',
      },
    ],
  ];
  for (const [path, body] of calls) {
    const response = await adminCall(base, 'POST', path, body);
    assert.equal(response.status, 201, `${path}: ${JSON.stringify(response.json)}`);
  }
}

async function crashScenario(mode: Mode, dir: string, diagnostic: (line: string) => void): Promise<void> {
  const began = performance.now();
  const log = (line: string) => diagnostic(`${((performance.now() - began) / 1000).toFixed(1)}s ${line}`);
  const next = seededRandom(SEED);
  log(`seed ${SEED} (VSS_RESET_CRASH_SEED replays the kill points)`);
  // Under the data directory: training data is read only from vss.admin.trainingDataRoots.
  const training = join(dir, 'data', 'training');
  writeTraining(training);
  const start = () =>
    startLatticeVss({
      command: 'vss',
      env: mode.env,
      ...(mode.settingsFile === undefined ? {} : { settingsFile: mode.settingsFile }),
    });
  let child: LatticeVssProcess | undefined = await start();
  const operation = async () => (await adminCall(child!.adminUrl!, 'GET', `/operations/${id}`)).json;
  let id = '';
  try {
    await register(child.adminUrl!, training);
    const reset = await adminCall(child.adminUrl!, 'POST', '/reset-model', {
      entity: ENTITY,
      model_name: MODEL,
    });
    assert.equal(reset.status, 202, JSON.stringify(reset.json));
    id = String(reset.json.operation_id);

    for (let kill = 1; kill <= KILLS; kill++) {
      // A random moment of `ingesting`: after k events applied by this process (k up to a sixth of the
      // rows), so the job may be publishing or done, the consumers mid-batch.
      const k = 1 + Math.floor(next() * (ROWS / 6));
      const applied = () =>
        child!.metric('vss_consumer_events_total', { kind: 'embedding', outcome: 'applied' });
      let op: Record<string, unknown> = {};
      await eventually(
        async () => {
          op = await operation();
          assert.notEqual(op.status, 'FAILED', `the operation failed: ${String(op.last_error)}`);
          assert.notEqual(op.status, 'SUCCEEDED', `the operation ended before kill ${kill}`);
          return op.step === 'ingesting' && (await applied()) >= k;
        },
        300_000,
        `kill ${kill}: ingesting, ${k} events applied`,
      );
      const seen = await applied();
      await child.kill();
      const job = (op.result as { job?: { state?: string; rows_published?: number } } | null)?.job;
      log(
        `kill ${kill}: SIGKILL after ${seen} events applied by this process (kill point ${k}); the job was ${job?.state} with ${job?.rows_published} rows published`,
      );
      child = undefined;
      child = await start();
    }

    let last: Record<string, unknown> = {};
    await eventually(
      async () => {
        last = await operation();
        assert.notEqual(last.status, 'FAILED', `the operation failed: ${String(last.last_error)}`);
        return last.status === 'SUCCEEDED';
      },
      300_000,
      'the reset to succeed by itself',
    ).catch((err: Error) => {
      throw new Error(`${err.message}; it is at ${JSON.stringify(last)}`);
    });
    log('the reset succeeded');
    assertResetIngestedOnce(last, ROWS);
    const model = (await adminCall(child.adminUrl!, 'GET', `/models/${ENTITY}/${MODEL}`)).json as {
      variants: { variant: string; state: string; read_version: number }[];
    };
    assert.deepEqual(
      model.variants.map((v) => [v.variant, v.state, v.read_version]),
      [['all', 'READY', 1]],
    );
    assert.equal(await child.stop(), 0, `a graceful stop exits 0:\n${child.output()}`);
    child = undefined;

    await verifyStore(mode);
    log('the store holds every row once, as in the training data');
    await verifyCollection(mode);
    log('the collection holds every point once, as in the training data');
  } catch (err) {
    if (child !== undefined && child.exited() === undefined) log(`the child's output:\n${child.output()}`);
    throw err;
  } finally {
    await child?.kill();
  }
}

async function verifyStore(mode: Mode): Promise<void> {
  const sql = await mode.openSql();
  try {
    const store = await openVssStore(sql);
    assert.equal(await store.embeddings.count(TABLE, MODEL, 1), ROWS, 'store rows');
    const seen = new Set<string>();
    for await (const row of storedRows(store, TABLE, MODEL, 1)) {
      assert.ok(!seen.has(row.id), `row ${row.id} twice`);
      seen.add(row.id);
      assert.deepEqual([...row.embedding], seededVector(Number(row.id.slice(1)), DIMENSION), row.id);
    }
    for (let i = 0; i < ROWS; i++) assert.ok(seen.has(idOf(i)), `row ${idOf(i)} lost`);
  } finally {
    await sql.close();
  }
}

async function verifyCollection(mode: Mode): Promise<void> {
  const settings = loadSettings({ env: mode.env, ...(mode.settingsFile ? { file: mode.settingsFile } : {}) });
  const db = await EmbeddedVectorDb.open({ dir: settings.vss.vectorDb.dir, snapshotIntervalMs: 0 });
  try {
    const name = collectionName(ENTITY, MODEL, 1);
    assert.equal((await db.collectionInfo(name)).points, ROWS, 'collection points');
    const chunk = 5000;
    for (let start = 0; start < ROWS; start += chunk) {
      const ids = Array.from({ length: chunk }, (_, k) => idOf(start + k));
      const points = await db.getPoints(name, ids, { withVector: true });
      points.forEach((point, k) => {
        assert.ok(point, `point ${ids[k]} lost`);
        assert.deepEqual([...point.vector!], seededVector(start + k, DIMENSION), `the vector of ${ids[k]}`);
      });
    }
  } finally {
    await db.close();
  }
}

async function inTempDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-reset-crash-'));
  try {
    await run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('a reset survives SIGKILL of lattice vss during ingesting, with no retry', {
  timeout: 600_000,
}, () => {
  test('on embedded defaults', async (t) => {
    await inTempDir(async (dir) => {
      const mode = embedded(dir);
      await crashScenario(mode, dir, (line) => t.diagnostic(line));
    });
  });

  test('on PostgreSQL + JetStream', {
    skip: natsUrl === undefined || postgresUrl === undefined,
  }, async (t) => {
    await inTempDir(async (dir) => {
      const mode = await distributed(dir, natsUrl!, postgresUrl!);
      try {
        await crashScenario(mode, dir, (line) => t.diagnostic(line));
      } finally {
        await mode.cleanup();
      }
    });
  });
});
