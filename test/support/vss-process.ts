/**
 * `lattice vss serving` as its own process, for end-to-end fuzz and load tests: a data directory is
 * seeded here (PGlite on disk and an embedded vector DB snapshot, the same world as
 * test/vss/serving/harness.ts: store, model, variants `organic` and `ad` READY on version 1,
 * aggregator attributes), then the child serves it on a free loopback port and is stopped with
 * SIGTERM. Like orchestrator-process.ts, the bound address is read from what the child prints.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb } from '../../src/platform/vectordb/index.js';
import { type DistanceFunction, openVssStore } from '../../src/vss/store/index.js';
import {
  COUNT,
  DIMENSION,
  ENTITY,
  MODEL,
  payloadOf,
  readyVariant,
  registerCatalog,
  writeVersion,
} from '../vss/serving/harness.js';
import { eventually } from './servers.js';
import { clusteredFixture, type VectorFixture } from './vector-fixtures.js';

export { ENTITY as VSS_ENTITY, MODEL as VSS_MODEL, payloadOf as vssPayloadOf };

export interface VssWorldOptions {
  count?: number;
  dimension?: number;
  clusters?: number;
  seed?: number;
  distance?: DistanceFunction;
}

export interface SeededVssWorld {
  dataDir: string;
  fixture: VectorFixture;
  distance: DistanceFunction;
}

/** Seeds `<dataDir>/sql` and `<dataDir>/vectordb` with the harness world (closed again, so a child can own them). */
export async function seedVssDataDir(options: VssWorldOptions = {}): Promise<SeededVssWorld> {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-vss-proc-'));
  const distance = options.distance ?? 'COSINE';
  const dimension = options.dimension ?? DIMENSION;
  const sql = await createSqlClient({ kind: 'pglite', dataDir: join(dataDir, 'sql') });
  const db = await EmbeddedVectorDb.open({ dir: join(dataDir, 'vectordb'), snapshotIntervalMs: 0 });
  const fixture = clusteredFixture({
    count: options.count ?? COUNT,
    dimension,
    clusters: options.clusters ?? 4,
    seed: options.seed ?? 7,
  });
  try {
    const store = await openVssStore(sql);
    // The same store, model and variants as the harness's openWorld, on disk instead of in memory.
    await registerCatalog(store, distance, dimension);
    await writeVersion(store, db, fixture, 1, distance);
    await readyVariant(store, 'organic', 1);
    await readyVariant(store, 'ad', 1);
    await store.aggregator.upsert(
      'agg',
      fixture.ids.flatMap((id, i) => {
        const p = payloadOf(i);
        const rows = [
          { id, label: 'brand', value: String(p.brand) },
          { id, label: 'price', value: String(p.price) },
        ];
        if (p.tag !== undefined) rows.push({ id, label: 'tag', value: String(p.tag) });
        return rows;
      }),
    );
    await db.snapshot();
  } finally {
    await db.close();
    await sql.close();
  }
  return { dataDir, fixture, distance };
}

export interface VssProcess {
  /** `127.0.0.1:port` of vss.v1.SimilaritySearch. */
  address: string;
  child: ChildProcess;
  output(): string;
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  stop(timeoutMs?: number): Promise<number | null>;
}

/** Starts `node bin/lattice.js vss serving --port 0` on a seeded data directory and waits until it printed its address. */
export async function startVssProcess(options: {
  dataDir: string;
  env?: Record<string, string>;
  nice?: number;
  /** Node options before the script (`--cpu-prof`, for profiling a run). */
  nodeArgs?: readonly string[];
  startTimeoutMs?: number;
}): Promise<VssProcess> {
  const inherited = Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined && !entry[0].startsWith('LATTICE_') && !entry[0].startsWith('NODE_TEST'),
  );
  const env: Record<string, string> = {
    ...Object.fromEntries(inherited),
    LATTICE_DATA_DIR: options.dataDir,
    LATTICE_QUEUE: 'memory',
    LATTICE_METRICS_PORT: '0',
    LATTICE_LOG_LEVEL: 'warn',
    LATTICE_VSS_PAGE_TOKEN_SECRET: 'fuzz-and-load-page-token-secret',
    ...options.env,
  };
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), 'bin/lattice.js', 'vss', 'serving', '--port', '0'],
    {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (options.nice !== undefined && child.pid !== undefined) setPriority(child.pid, options.nice);
  let output = '';
  const collect = (chunk: string) => {
    output += chunk;
  };
  child.stdout!.setEncoding('utf8').on('data', collect);
  child.stderr!.setEncoding('utf8').on('data', collect);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve();
    });
  });
  let address: string | undefined;
  try {
    await eventually(
      () => {
        if (exit) throw new Error(`lattice vss serving exited (${exit.code ?? exit.signal}):\n${output}`);
        address = /vss\.v1\.SimilaritySearch gRPC .*?\s(\d+\.\d+\.\d+\.\d+:\d+)\s*$/m.exec(output)?.[1];
        return address !== undefined;
      },
      options.startTimeoutMs ?? 90_000,
      'lattice vss serving to print its address',
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    address: address!,
    child,
    output: () => output,
    exited: () => exit,
    stop: async (timeoutMs = 15_000) => {
      if (!exit) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      return exit!.code;
    },
  };
}
