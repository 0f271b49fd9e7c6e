/**
 * The data both processes of the vss-search benchmark build independently from the same seeded
 * parameters: the load generator (ground truth, raw hnswlib baseline, query vectors) and the serving
 * process (PGlite catalog, EmbeddedVectorDb collection). Same seed, same vectors, same order.
 */

import type { SearchStats } from '../../src/platform/vectordb/index.js';
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

/** 100,000 × 128 in clusters of 1,000 by default, as in vss-recall (env BENCH_POINTS to scale). */
export function fixtureParams(): FixtureParams {
  const points = Number(process.env.BENCH_POINTS ?? 100_000);
  return {
    points,
    dimension: Number(process.env.BENCH_DIMENSION ?? 128),
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

/** What the serving process reports once it listens. */
export interface ServingReady {
  port: number;
  /** The bare grpc-js server answering every Search with a canned page. */
  echoPort: number;
  points: number;
  /** Wall time from the first upsert until the collection was READY (every point in the graph). */
  build_s: number;
  /** RSS growth over the build (after GC) ÷ points. */
  bytes_per_point: number;
  /** V8 heap + array buffers growth over the build ÷ points (vectors, ids, payloads; not the graph). */
  heap_bytes_per_point: number;
  status: string;
}

/** What the serving process reports on `stats`: cumulative since it started. */
export interface ServingStats {
  /** The collection's search-path counters. */
  search: SearchStats;
  rss: number;
  /** Every latency histogram of the server (gRPC handling, vss request, vector DB): sum and count. */
  timing: Record<string, { sum_ms: number; count: number }>;
  /** Event-loop delay and GC pauses since the previous `stats`. */
  pauses: Pauses;
}
