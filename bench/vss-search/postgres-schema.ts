/**
 * Where the vss-search benchmark puts pgvector on a PostgreSQL server: a schema of its own, made
 * afresh for each run (dropped with everything in it first), so a benchmark on a database that tests
 * also use (the default URL is the tests' one) neither reads their tables nor leaves its own behind.
 * The `vector` extension is database-wide: created here (in `public`) when the database lacks it.
 */
import { createSqlClient } from '../../src/platform/sql/index.js';

export const BENCH_SCHEMA = 'lattice_bench_vss_search';

/** The server's URL: BENCH_POSTGRES_URL, else the tests' LATTICE_TEST_POSTGRES_URL, else the tests' default. */
export function benchPostgresUrl(): string {
  return (
    process.env.BENCH_POSTGRES_URL ??
    process.env.LATTICE_TEST_POSTGRES_URL ??
    'postgres://postgres@127.0.0.1:5432/test'
  );
}

/**
 * Makes sure the server answers and has pgvector, and makes the benchmark's schema empty. Resolves
 * to undefined when ready, or to why pgvector on PostgreSQL cannot be measured (no server, no
 * extension).
 */
export async function preparePostgres(url: string): Promise<string | undefined> {
  let sql: Awaited<ReturnType<typeof createSqlClient>>;
  try {
    sql = await createSqlClient({ kind: 'postgres', url, poolSize: 1, connectTimeoutMs: 3000 });
  } catch (err) {
    return `no PostgreSQL at ${url} (${err instanceof Error ? err.message : String(err)})`;
  }
  try {
    try {
      await sql.query('CREATE EXTENSION IF NOT EXISTS vector SCHEMA public');
    } catch (err) {
      return `PostgreSQL at ${url} has no pgvector extension (${err instanceof Error ? err.message : String(err)})`;
    }
    await sql.query(`DROP SCHEMA IF EXISTS ${BENCH_SCHEMA} CASCADE`);
    await sql.query(`CREATE SCHEMA ${BENCH_SCHEMA}`);
    return undefined;
  } finally {
    await sql.close();
  }
}

/** Drops the benchmark's schema and everything in it. */
export async function dropBenchSchema(url: string): Promise<void> {
  const sql = await createSqlClient({ kind: 'postgres', url, poolSize: 1 });
  try {
    await sql.query(`DROP SCHEMA IF EXISTS ${BENCH_SCHEMA} CASCADE`);
  } finally {
    await sql.close();
  }
}
