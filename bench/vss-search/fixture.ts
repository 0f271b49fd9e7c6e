/**
 * The data both processes of the vss-search benchmark build independently from the same seeded
 * parameters: the load generator (ground truth, raw hnswlib baseline, query vectors) and the serving
 * process (catalog, and the collection on the vector DB under test). Same seed, same vectors, same
 * order.
 */

import type { PgvectorSearchStats, SearchStats } from '../../src/platform/vectordb/index.js';
import { clusteredFixture, type VectorFixture } from '../../test/support/vector-fixtures.js';
import type { Pauses } from './pauses.js';

export const ENTITY = 'catalog';
export const MODEL = 'bench';
export const VARIANT = 'organic';
export const K = 10;
/** Points per upsert call while building the service's collection. */
export const UPSERT_BATCH = 1000;

export interface FixtureParams {
  points: number;
  dimension: number;
  clusters: number;
  seed: number;
}

/**
 * 100,000 × 256 in clusters of 1,000 by default, the figure (env BENCH_POINTS and
 * BENCH_DIMENSION to scale).
 */
export function fixtureParams(): FixtureParams {
  const points = Number(process.env.BENCH_POINTS ?? 100_000);
  return {
    points,
    dimension: Number(process.env.BENCH_DIMENSION ?? 256),
    clusters: Math.max(1, Math.round(points / 1000)),
    seed: 2026,
  };
}

export function buildFixture(params: FixtureParams): VectorFixture {
  return clusteredFixture({
    count: params.points,
    dimension: params.dimension,
    clusters: params.clusters,
    seed: params.seed,
  });
}

/** The vector DB a serving process searches on. */
export type Engine = 'embedded' | 'pgvector-pglite' | 'pgvector-postgres';

/** What the load generator tells a serving process to build (its command-line argument, as JSON). */
export interface ServingJob {
  fixture: FixtureParams;
  engine: Engine;
  /** Points of the fixture to ingest (its first ones): all of them, or fewer on a slow engine. */
  points: number;
  /** pgvector on PostgreSQL: the server's URL (a schema of the benchmark's own is made there). */
  postgresUrl?: string;
  /**
   * pgvector: `bulk` inserts every point with the collection's HNSW index dropped and builds the
   * index once afterwards (how a large collection is loaded); `incremental` keeps the index from the
   * start, so each insert also walks the graph (how the adapter ingests a live collection).
   */
  pgvectorBuild?: 'bulk' | 'incremental';
}

/** What the serving process reports once it listens. */
export interface ServingReady {
  port: number;
  /** The bare grpc-js server answering every Search with a canned page. */
  echoPort: number;
  points: number;
  /** Wall time from the first upsert until the collection was READY (every point in the graph). */
  build_s: number;
  /** Of it, pgvector's bulk load: the inserts, and the HNSW index built after them (0 otherwise). */
  insert_s: number;
  index_s: number;
  /** RSS growth over the build (after GC) ÷ points. */
  bytes_per_point: number;
  /** V8 heap + array buffers growth over the build ÷ points (vectors, ids, payloads; not the graph). */
  heap_bytes_per_point: number;
  status: string;
}

/** What the serving process reports on `stats`: cumulative since it started. */
export interface ServingStats {
  /** The collection's search-path counters (the embedded engine's, or pgvector's). */
  search: SearchStats | PgvectorSearchStats;
  rss: number;
  /** Every latency histogram of the server (gRPC handling, vss request, vector DB): sum and count. */
  timing: Record<string, { sum_ms: number; count: number }>;
  /** Event-loop delay and GC pauses since the previous `stats`. */
  pauses: Pauses;
}

/**
 * What the serving process reports on `cpu`: its CPU time (every thread: the event loop, libuv's
 * pool, worker threads, native search threads) and its wall clock, both cumulative. Two readings
 * around a phase give the cores it kept busy meanwhile.
 */
export interface ServingCpu {
  cpu_ms: number;
  wall_ms: number;
}
