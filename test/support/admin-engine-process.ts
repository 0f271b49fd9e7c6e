/**
 * The vss admin operations engine as a process of its own, for the crash test: the consumers, the
 * built-in job runner and the engine (admin-engine-world.ts) on durable adapters in one data
 * directory (PGlite on disk, the embedded vector DB with its write-ahead log, the journaled memory
 * queue, job records as files). It submits a reset of the seeded model (with an idempotency key,
 * so a restart finds the same operation) and prints `OPERATION <id>`, then `STEP <n> <from> <to>`
 * after each committed transition. At transition `stopAt` it prints `STOPPED` and hangs there (the
 * parent SIGKILLs it); `DONE` once the operation succeeded.
 *
 * Usage: node --import tsx admin-engine-process.ts '<{"dataDir","entity","modelName","stopAt","resetKey"}>'
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createQueue } from '../../src/platform/queue/index.js';
import { createSqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/index.js';
import { FileJobStateStore } from '../../src/vss/admin/jobs/index.js';
import { openAdminWorld } from './admin-engine-world.js';

export interface AdminProcessConfig {
  dataDir: string;
  entity: string;
  modelName: string;
  /** The transition (1-based) to stop at; null runs to the end. */
  stopAt: number | null;
  /** Idempotency key of the reset it submits. */
  resetKey: string;
}

export function adminDataPaths(dataDir: string) {
  return {
    sql: join(dataDir, 'sql'),
    vectordb: join(dataDir, 'vectordb'),
    queue: join(dataDir, 'queue'),
    jobs: join(dataDir, 'jobs'),
  };
}

async function main(config: AdminProcessConfig): Promise<void> {
  const paths = adminDataPaths(config.dataDir);
  const sql = await createSqlClient({ kind: 'pglite', dataDir: paths.sql });
  const vectorDb = await EmbeddedVectorDb.open({ dir: paths.vectordb, snapshotIntervalMs: 0 });
  const queue = await createQueue({ kind: 'memory', journalDir: paths.queue });
  let transitions = 0;
  const world = await openAdminWorld({
    sql,
    queue,
    vectorDb,
    name: 'crash',
    pollIntervalMs: 50,
    // A job record left RUNNING by the killed process is taken over after this.
    jobRunner: { stateStore: new FileJobStateStore(paths.jobs), leaseMs: 600, checkpointEveryMs: 50 },
    onStep: async (event) => {
      transitions += 1;
      process.stdout.write(`STEP ${transitions} ${event.from ?? '-'} ${event.to}\n`);
      if (event.to === 'SUCCEEDED') process.stdout.write('DONE\n');
      if (transitions === config.stopAt) {
        process.stdout.write('STOPPED\n');
        await new Promise(() => undefined);
      }
    },
  });
  const accepted = await world.engine.lifecycle.resetModel(
    { entity: config.entity, modelName: config.modelName },
    { idempotencyKey: config.resetKey },
  );
  process.stdout.write(`OPERATION ${accepted.operation.operationId} ${accepted.operation.status}\n`);
  if (accepted.operation.status === 'SUCCEEDED') process.stdout.write('DONE\n');
  process.once('SIGTERM', () => {
    void (async () => {
      await world.close();
      await queue.close();
      await vectorDb.close();
      await sql.close();
      process.exit(0);
    })();
  });
}

// Run as a script only (the test imports the config type and paths from here).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(JSON.parse(process.argv[2]!) as AdminProcessConfig).catch((err: unknown) => {
    process.stderr.write(`admin engine process failed: ${String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  });
}
