/**
 * The vector databases (VectorDb adapters) a suite runs on, and how a test world opens and closes
 * each, as the composition root (src/platform/platform.ts) does:
 *
 * - `embedded`: the in-process engine, in memory.
 * - `pgvector-pglite`: pgvector in a PGlite database opened with `vector: true`; a vss store of the
 *   world lives in the same database (the product's pgvector on its PGlite SQL database).
 * - `pgvector-postgres`: pgvector on the real PostgreSQL (LATTICE_TEST_POSTGRES_URL), in a schema of
 *   the world's own (dropped on close), so test files running side by side on one database never
 *   meet; the world's vss store lives in that schema too. Skipped, saying why, where the server or
 *   its `vector` extension is missing, except under CI, which requires both.
 * - `qdrant`: the Qdrant adapter on the in-process REST stand-in (test/support/qdrant-stand-in.ts),
 *   or on a real Qdrant whenever QDRANT_URL is set (collections under a prefix of the world's own,
 *   dropped on close).
 *
 * Waiting for indexing is the port's own signal wherever the engine has nothing better:
 * `collectionInfo` until every point is indexed.
 */
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import {
  EmbeddedVectorDb,
  PgvectorVectorDb,
  type PlannerSettings,
  QdrantVectorDb,
  type VectorDb,
} from '../../src/platform/vectordb/index.js';
import type { VectorDbType } from '../../src/vss/store/index.js';
import { startQdrantStandIn } from './qdrant-stand-in.js';
import { eventually, realServer, uniqueName } from './servers.js';

export type VectorEngine = 'embedded' | 'pgvector-pglite' | 'pgvector-postgres' | 'qdrant';

export const VECTOR_ENGINES: readonly VectorEngine[] = [
  'embedded',
  'pgvector-pglite',
  'pgvector-postgres',
  'qdrant',
];

/** The `vectordb_type` a variant served by the engine is registered with. */
export const VECTOR_DB_TYPE: Record<VectorEngine, VectorDbType> = {
  embedded: 'EMBEDDED',
  'pgvector-pglite': 'PGVECTOR',
  'pgvector-postgres': 'PGVECTOR',
  qdrant: 'QDRANT',
};

let probed: Promise<string | undefined> | undefined;

/**
 * The real PostgreSQL's URL when it has pgvector to offer (scripts/test-services.sh builds it there);
 * undefined, after printing why, when it has not. Under CI an absent server or extension throws.
 */
export function pgvectorServer(): Promise<string | undefined> {
  probed ??= (async () => {
    const url = await realServer('postgres');
    if (url === undefined) return undefined;
    const probe = await createSqlClient({ kind: 'postgres', url, poolSize: 1 });
    try {
      const { rows } = await probe.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
      if (rows.length > 0) return url;
    } finally {
      await probe.close();
    }
    const reason = `PostgreSQL at ${url} has no pgvector extension (scripts/test-services.sh builds it)`;
    if (process.env.CI) throw new Error(`${reason}; CI requires it`);
    console.log(`# skipping pgvector on PostgreSQL: ${reason}`);
    return undefined;
  })();
  return probed;
}

/** Why the engine's suite is skipped on this machine, or false when it runs. */
export async function engineSkip(engine: VectorEngine): Promise<string | false> {
  if (engine !== 'pgvector-postgres') return false;
  return (await pgvectorServer()) === undefined ? 'PostgreSQL with pgvector is not reachable' : false;
}

/**
 * Creates the extension in `public` (once per database: its types must be visible to every schema
 * that searches `public` after its own), tolerating another test process creating it at once.
 */
export async function ensureVectorExtension(admin: SqlClient): Promise<void> {
  try {
    await admin.query('CREATE EXTENSION IF NOT EXISTS vector SCHEMA public');
  } catch (err) {
    const { rows } = await admin.query("SELECT 1 FROM pg_extension WHERE extname = 'vector'");
    if (rows.length === 0) throw err;
  }
}

export interface EngineOptions {
  /** The embedded engine's and pgvector's query planner (e.g. never scan exactly); Qdrant has none. */
  planner?: Partial<PlannerSettings>;
  /**
   * Also open the SQL database a vss store of the world lives in: the one pgvector runs on, else a
   * PGlite of its own (in memory).
   */
  sql?: boolean;
}

export interface OpenedEngine {
  engine: VectorEngine;
  db: VectorDb;
  /** The world's SQL database, when asked for (`EngineOptions.sql`) or when the engine runs on it. */
  sql: SqlClient | undefined;
  /** Closes the vector DB and the SQL database, and removes what the world left on shared servers. */
  close(): Promise<void>;
}

/** Resolves once every point of `collection` is indexed (what serving's indexedOnly searches see). */
export async function waitForIndexing(db: VectorDb, collection: string): Promise<void> {
  if (db instanceof EmbeddedVectorDb) return db.waitForIndexing(collection);
  await eventually(
    async () => {
      const info = await db.collectionInfo(collection);
      if (info.status === 'FAILED') throw new Error(`collection ${collection} failed to index`);
      return info.status === 'READY' && info.indexedPoints === info.points;
    },
    30_000,
    `collection ${collection} to be indexed`,
  );
}

export async function openVectorEngine(
  engine: VectorEngine,
  options: EngineOptions = {},
): Promise<OpenedEngine> {
  // What to undo, last first: on close, or at once when opening fails halfway.
  const undo: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const step of undo.splice(0).reverse()) await step();
  };
  const opened = <T>(value: T, closeIt: (value: T) => Promise<unknown>): T => {
    undo.push(() => closeIt(value));
    return value;
  };
  try {
    let sql: SqlClient | undefined;
    let db: VectorDb;
    switch (engine) {
      case 'embedded':
        if (options.sql) sql = opened(await createSqlClient({ kind: 'pglite' }), (c) => c.close());
        db = opened(await EmbeddedVectorDb.open({ planner: options.planner }), (d) => d.close());
        break;
      case 'pgvector-pglite':
        sql = opened(await createSqlClient({ kind: 'pglite', vector: true }), (c) => c.close());
        db = opened(await PgvectorVectorDb.open({ sql, planner: options.planner }), (d) => d.close());
        break;
      case 'pgvector-postgres': {
        const url = await pgvectorServer();
        if (url === undefined) throw new Error('PostgreSQL with pgvector is not reachable');
        const schema = uniqueName('lattice_engine').toLowerCase();
        const admin = opened(await createSqlClient({ kind: 'postgres', url, poolSize: 1 }), (c) => c.close());
        await ensureVectorExtension(admin);
        await admin.query(`CREATE SCHEMA ${schema}`);
        undo.push(() => admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
        const searchPath = `${schema}, public`;
        sql = opened(await createSqlClient({ kind: 'postgres', url, searchPath, poolSize: 4 }), (c) =>
          c.close(),
        );
        db = opened(await PgvectorVectorDb.open({ sql, planner: options.planner }), (d) => d.close());
        break;
      }
      case 'qdrant': {
        if (options.sql) sql = opened(await createSqlClient({ kind: 'pglite' }), (c) => c.close());
        const url = process.env.QDRANT_URL;
        if (url) {
          const apiKey = process.env.QDRANT_API_KEY || undefined;
          const collectionPrefix = `${uniqueName('lattice_engine')}_`;
          db = opened(await QdrantVectorDb.open({ url, apiKey, collectionPrefix }), async (d) => {
            // The collections of this world only (its prefix), then the adapter.
            for (const name of await d.listCollections()) await d.dropCollection(name);
            await d.close();
          });
        } else {
          const standIn = opened(await startQdrantStandIn(), (q) => q.stop());
          db = opened(await QdrantVectorDb.open({ url: standIn.url }), (d) => d.close());
        }
        break;
      }
    }
    return { engine, db, sql, close };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}
