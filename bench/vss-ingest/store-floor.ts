/**
 * store-floor: what the vss embedding store lets ingestion reach, without the queue and the runner.
 * 100,000 embedding events (128-d, distinct ids, two variants on one collection, a small payload)
 * are applied through `IngestionHandler.apply` in batches of 500, as the consumer runner would, on
 * PGlite (on disk, the embedded default) and on PostgreSQL (LATTICE_TEST_POSTGRES_URL, default
 * postgres://postgres@127.0.0.1:5432/test, in a schema of its own that is dropped at the end).
 *
 * Per adapter it prints events/s for:
 * - `floor`: the raw table insert alone, the same rows (bytea float32 vectors, both flags) written
 *   with one hand-written upsert per batch into a table of the embeddings table's shape, in the
 *   fastest form measured (INSERT … SELECT over arrays, every vector in one parameter), and
 *   `floor_values` in the plain form (multi-row VALUES, a parameter per vector);
 * - `repository`: `store.embeddings.upsert` alone (the rows the processor would write);
 * - `processor_sql`: the whole processor against a vector DB that does nothing, so what is left is
 *   the processor and its SQL (store rows, aggregator read, ledger);
 * - `processor`: the processor with the embedded vector DB and its fsynced write-ahead log (what a
 *   consumer acknowledges on embedded defaults; the indexer runs in the background as in production).
 * `processor*` run serially (`lanes 1`) and with 8 partitions applying at once (`lanes 8`: the runner
 * applies one batch per partition at a time, partitions in parallel). Event parsing (the runner's
 * `parse`) is measured apart, once.
 *
 * `node --import tsx bench/vss-ingest/store-floor.ts [pglite|postgres]...` (default both; env
 * BENCH_EVENTS, BENCH_BATCH, BENCH_ONLY, BENCH_LANES). Not part of `npm test`; the full ingestion benchmark is
 * bench/vss-ingest/index.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqlClient, type SqlClient, type SqlValue } from '../../src/platform/sql/index.js';
import {
  type CollectionInfo,
  type CollectionSpec,
  EmbeddedVectorDb,
  type VectorDb,
} from '../../src/platform/vectordb/index.js';
import { EmbeddingProcessor } from '../../src/vss/consumers/embedding-processor.js';
import { EofProcessor } from '../../src/vss/consumers/eof-processor.js';
import { IngestionHandler } from '../../src/vss/consumers/ingestion-handler.js';
import type { IngestionMessage } from '../../src/vss/consumers/ingestion-message.js';
import { ModelCatalog } from '../../src/vss/consumers/model-catalog.js';
import { type EmbeddingRow, openVssStore, type VssStore } from '../../src/vss/store/index.js';
import { seededVector } from '../../test/support/vector-fixtures.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const DIMENSION = 128;
const PARTITIONS = 8;
const VARIANTS = ['organic', 'live'] as const;
/** BENCH_ONLY: a comma-separated subset of floor, repository, processor_sql, processor. */
const only = process.env.BENCH_ONLY?.split(',');
const selected = (measurement: string) => only === undefined || only.includes(measurement);
/** BENCH_LANES: the lane counts to run the processor with (default 1,8). */
const LANES = (process.env.BENCH_LANES ?? `1,${PARTITIONS}`).split(',').map(Number);
const postgresUrl = process.env.LATTICE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

type Adapter = 'pglite' | 'postgres';

const vectorOf = (seed: number): number[] => seededVector(seed, DIMENSION);

/** Event i of run `run` (each measurement writes ids of its own, so every row is an insert). */
function eventBytes(entity: string, run: string, i: number): Uint8Array {
  const versions = Object.fromEntries(VARIANTS.map((v) => [v, 1]));
  const flags = Object.fromEntries(VARIANTS.map((v) => [v, true]));
  return Buffer.from(
    JSON.stringify({
      entity,
      model_name: 'm',
      candidate_id: `${run}-${i}`,
      version: 1,
      index_space: {
        variants_version_map: JSON.stringify(versions),
        variants_index_map: JSON.stringify(flags),
        embedding: vectorOf(i),
        operation: 'A',
        payload: JSON.stringify({ brand: i % 3 === 0 ? 'a' : 'b', is_live: 'true' }),
      },
    }),
  );
}

/** A vector DB that accepts every write and does nothing: the processor's own cost is what is left. */
class NullVectorDb implements VectorDb {
  readonly #collections = new Map<string, CollectionSpec>();
  async createCollection(spec: CollectionSpec): Promise<void> {
    this.#collections.set(spec.name, spec);
  }
  async dropCollection(name: string): Promise<boolean> {
    return this.#collections.delete(name);
  }
  async listCollections(): Promise<string[]> {
    return [...this.#collections.keys()].sort();
  }
  async collectionInfo(name: string): Promise<CollectionInfo> {
    const spec = this.#collections.get(name)!;
    return { ...spec, points: 0, indexedPoints: 0, status: 'GREEN' } as unknown as CollectionInfo;
  }
  async upsert(): Promise<void> {}
  async delete(): Promise<number> {
    return 0;
  }
  async setPayload(): Promise<number> {
    return 0;
  }
  async getPoints(_collection: string, ids: readonly string[]) {
    return ids.map(() => undefined);
  }
  async search() {
    return [];
  }
  async close(): Promise<void> {}
}

interface World {
  sql: SqlClient;
  store: VssStore;
  entity: string;
  table: string;
  close(): Promise<void>;
}

let worlds = 0;

async function openWorld(adapter: Adapter): Promise<World> {
  worlds++;
  let sql: SqlClient;
  let cleanup: () => Promise<void>;
  if (adapter === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), 'store-floor-'));
    sql = await createSqlClient({ kind: 'pglite', dataDir: dir });
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = `store_floor_${process.pid}_${worlds}`;
    const admin = await createSqlClient({ kind: 'postgres', url: postgresUrl, poolSize: 1 });
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    sql = await createSqlClient({ kind: 'postgres', url: postgresUrl, searchPath: schema, poolSize: 10 });
    cleanup = async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    };
  }
  const store = await openVssStore(sql);
  const entity = 'floor';
  const table = 'emb_floor';
  await store.stores.create({
    storeId: 1,
    entity,
    dbConfId: 'main',
    embeddingsTable: table,
    aggregatorTable: 'agg_floor',
  });
  await store.models.create({
    entity,
    modelName: 'm',
    ingestionColumnMapping: { idColumn: 'id', embeddingColumn: 'emb', toBeIndexedColumn: 'flag' },
    embeddingStoreEnabled: true,
    embeddingStoreTtlSeconds: 0,
    mqId: 1,
    modelConfig: { distanceFunction: 'COSINE', vectorDimension: DIMENSION },
    storeId: 1,
    trainingDataPath: 'file:///tmp/none',
  });
  await store.versions.create({ entity, modelName: 'm', version: 1 });
  for (const variant of VARIANTS) {
    const filter =
      variant === 'live'
        ? { criteria: [{ column_name: 'is_live', filter_value: 'true', default_value: 'false' }] }
        : {};
    await store.variants.create({
      entity,
      modelName: 'm',
      variant,
      vssFilter: filter as never,
      vectorDbType: 'EMBEDDED',
      vectorDbConfig: {},
      jobFrequency: 'FREQ_1D',
    });
    const key = { entity, modelName: 'm', variant };
    await store.variants.transition(key, 'REGISTERED', 'INGESTING', { writeVersion: 1 });
  }
  return {
    sql,
    store,
    entity,
    table,
    close: async () => {
      await sql.close();
      await cleanup();
    },
  };
}

const rate = (n: number, ms: number) => Math.round(n / (ms / 1000));

/**
 * A measurement: events/s by the wall clock, and by this process's CPU time (steadier on a busy
 * machine; on PGlite it holds the database's work too, on PostgreSQL only the client's).
 */
interface Rate {
  perS: number;
  perCpuS: number;
}

async function timed(events: number, work: () => Promise<void>): Promise<Rate> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  await work();
  const used = process.cpuUsage(cpu);
  return {
    perS: rate(events, performance.now() - wall),
    perCpuS: rate(events, (used.user + used.system) / 1000),
  };
}

const show = (r: Rate) => `${r.perS} events/s (${r.perCpuS} per CPU-s of this process)`;

/**
 * The raw table insert: the same rows (bytea vectors, both flags), one hand-written upsert per batch
 * into a fresh table of the embeddings table's shape, with no repository around it. `values`: a
 * multi-row VALUES with a parameter per vector; `unnest`: INSERT … SELECT over arrays with every
 * vector in one parameter, sent as each driver sends bytes best (binary to PostgreSQL, base64 text
 * to PGlite, whose bytea encoder works byte by byte in JavaScript).
 */
async function floor(world: World, adapter: Adapter, form: 'values' | 'unnest'): Promise<Rate> {
  const t = `raw_floor_${form}`;
  await world.sql.query(
    `CREATE TABLE ${t} (model_name text NOT NULL, version integer NOT NULL, id text NOT NULL,
       embedding bytea NOT NULL, search_embedding bytea, expires_at timestamptz,
       to_be_indexed_organic boolean, to_be_indexed_live boolean, PRIMARY KEY (model_name, version, id))`,
  );
  const vectors = Array.from({ length: BATCH }, (_, i) => Buffer.from(Float32Array.from(vectorOf(i)).buffer));
  const width = DIMENSION * 4;
  const update = `ON CONFLICT (model_name, version, id) DO UPDATE
    SET embedding = EXCLUDED.embedding, search_embedding = EXCLUDED.search_embedding,
        expires_at = EXCLUDED.expires_at, to_be_indexed_organic = EXCLUDED.to_be_indexed_organic,
        to_be_indexed_live = EXCLUDED.to_be_indexed_live`;
  return timed(EVENTS, async () => {
    for (let from = 0; from < EVENTS; from += BATCH) {
      const to = Math.min(EVENTS, from + BATCH);
      if (form === 'values') {
        const params: SqlValue[] = ['m', 1];
        const values: string[] = [];
        for (let i = from; i < to; i++) {
          params.push(`f-${i}`, vectors[i - from]!);
          const p = params.length;
          values.push(`($1, $2, $${p - 1}, $${p}, NULL, NULL, true, true)`);
        }
        await world.sql.query(`INSERT INTO ${t} VALUES ${values.join(',')} ${update}`, params);
      } else {
        const ids: string[] = [];
        for (let i = from; i < to; i++) ids.push(`f-${i}`);
        const all = Buffer.concat(vectors.slice(0, to - from));
        const [bytes, value] =
          adapter === 'pglite' ? [`decode($3::text, 'base64')`, all.toString('base64')] : ['$3::bytea', all];
        await world.sql.query(
          `WITH v AS MATERIALIZED (SELECT ${bytes} AS b)
           INSERT INTO ${t} SELECT $1::text, $2::integer, u.id, substr(v.b, (u.n::integer - 1) * ${width} + 1, ${width}),
                  NULL, NULL, true, true
             FROM v, unnest($4::text[]) WITH ORDINALITY AS u(id, n) ${update}`,
          ['m', 1, value, ids],
        );
      }
    }
  });
}

async function repository(world: World): Promise<Rate> {
  const vectors = Array.from({ length: BATCH }, (_, i) => Float32Array.from(vectorOf(i)));
  const flags = Object.fromEntries(VARIANTS.map((v) => [v, true]));
  return timed(EVENTS, async () => {
    for (let from = 0; from < EVENTS; from += BATCH) {
      const rows: EmbeddingRow[] = [];
      for (let i = from; i < Math.min(EVENTS, from + BATCH); i++) {
        rows.push({ id: `r-${i}`, embedding: vectors[i - from]!, toBeIndexed: flags });
      }
      await world.store.embeddings.upsert(world.table, { modelName: 'm', version: 1, rows });
    }
  });
}

/** Parses the run's events (the runner's part), split into partitions by id as a producer keys them. */
function parsed(
  handler: IngestionHandler,
  entity: string,
  run: string,
): { lanes: IngestionMessage[][]; parsePerS: number } {
  const bytes = Array.from({ length: EVENTS }, (_, i) => eventBytes(entity, run, i));
  const started = performance.now();
  const messages = bytes.map((b) => handler.parse(b));
  const parsePerS = rate(EVENTS, performance.now() - started);
  const lanes: IngestionMessage[][] = Array.from({ length: PARTITIONS }, () => []);
  messages.forEach((m, i) => {
    lanes[i % PARTITIONS]!.push(m);
  });
  return { lanes, parsePerS };
}

async function processor(
  world: World,
  vectorDb: VectorDb,
  run: string,
  lanes: number,
): Promise<Rate & { parsePerS: number }> {
  const catalog = new ModelCatalog(world.store);
  const embeddings = new EmbeddingProcessor({
    store: world.store,
    vectorDb,
    vectorDbType: 'EMBEDDED',
    catalog,
  });
  const markers = new EofProcessor({ store: world.store, partitions: PARTITIONS, catalog });
  const handler = new IngestionHandler(embeddings, markers);
  const { lanes: partitions, parsePerS } = parsed(handler, world.entity, run);
  const work = lanes === 1 ? [partitions.flat()] : partitions;
  const applied = await timed(EVENTS, async () => {
    await Promise.all(
      work.map(async (messages) => {
        for (let from = 0; from < messages.length; from += BATCH) {
          const outcomes = await handler.apply(messages.slice(from, from + BATCH));
          const refused = outcomes.find((o) => o !== undefined);
          if (refused !== undefined) throw new Error(`event refused: ${refused}`);
        }
      }),
    );
  });
  return { ...applied, parsePerS };
}

async function measure(adapter: Adapter): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const record = (name: string, label: string, r: Rate) => {
    figures[name] = r.perS;
    figures[`${name}_per_cpu_s`] = r.perCpuS;
    console.log(`${adapter} ${label.padEnd(36)} ${show(r)}`);
  };
  const world = await openWorld(adapter);
  try {
    if (selected('floor')) {
      record('floor', 'floor (raw INSERT … SELECT unnest)', await floor(world, adapter, 'unnest'));
      record('floor_values', 'raw multi-row VALUES upsert', await floor(world, adapter, 'values'));
    }
    if (selected('repository')) record('repository', 'store.embeddings.upsert', await repository(world));
    for (const lanes of selected('processor_sql') ? LANES : []) {
      const nil = await processor(world, new NullVectorDb(), `n${lanes}`, lanes);
      figures.parse = nil.parsePerS;
      record(`processor_sql_lanes${lanes}`, `processor, null vector DB, lanes ${lanes}`, nil);
    }
    for (const lanes of selected('processor') ? LANES : []) {
      const dir = mkdtempSync(join(tmpdir(), 'store-floor-vdb-'));
      const vectorDb = await EmbeddedVectorDb.open({ dir, snapshotIntervalMs: 0 });
      try {
        const full = await processor(world, vectorDb, `e${lanes}`, lanes);
        figures.parse = full.parsePerS;
        record(`processor_lanes${lanes}`, `processor, embedded WAL, lanes ${lanes}`, full);
      } finally {
        await vectorDb.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (figures.parse !== undefined) {
      console.log(`${adapter} ${"parse (the runner's part)".padEnd(36)} ${figures.parse} events/s`);
    }
  } finally {
    await world.close();
  }
  return figures;
}

const adapters = (
  process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['pglite', 'postgres']
) as Adapter[];
const result: Record<string, unknown> = {
  bench: 'vss-ingest-store-floor',
  events: EVENTS,
  batch: BATCH,
  dimension: DIMENSION,
};
for (const adapter of adapters) result[adapter] = await measure(adapter);
console.log(JSON.stringify(result));
