/**
 * How the pgvector adapter answers one query: an exact scan of the rows the filters leave, or
 * pgvector's HNSW index with iterative scan.
 *
 * pgvector's HNSW scan applies the filters to the rows the graph walk returns; under a selective
 * filter it walks up to `hnsw.max_scan_tuples` nodes and still comes back short (recall@10 about 0.1
 * at 1 % selectivity on 100,000 × 256, issue 38), and each extra node costs a heap fetch. An exact
 * scan costs one distance per candidate row, and PostgreSQL finds the candidates through the
 * payload's GIN index. So the adapter plans as the embedded engine does (embedded/collection/
 * query-planner.ts), with the same cost model: an exact scan costs ∝ `candidates`, a filtered graph
 * walk ∝ `ef × points / candidates`; exact wins when `candidates² ≤ ratio × ef × points`. The ratio
 * is the embedded engine's measured 4 (not measured on pgvector yet: bench/ is where to tune it); at
 * ef 96 on 100,000 points the crossover is near 6,200 candidates (6 %).
 *
 * The candidates are counted with a cap (`SELECT count(*) FROM (… LIMIT cap)`), so a broad filter
 * costs at most `cap` rows to count; the count is remembered per filter (candidate-counts.ts) until
 * this process writes the collection or it is {@link PgvectorPlannerSettings.candidateCountMaxAgeMs}
 * old, so searches under one filter count once in a while, not every time. The collection's point
 * count is read at most once per {@link PgvectorPlannerSettings.pointCountMaxAgeMs}.
 */

export interface PgvectorPlannerSettings {
  /** Exact scan when candidates² ≤ ratio × ef × points. */
  exactScanRatio: number;
  /** Always scan exactly at or below this many candidates. */
  exactScanMinCandidates: number;
  /** How long a collection's point count serves the planner before it is counted again. */
  pointCountMaxAgeMs: number;
  /**
   * How long a filter's candidate count plans its searches, unless this process writes the
   * collection first (writes of other processes are seen once it has expired).
   */
  candidateCountMaxAgeMs: number;
}

export const PGVECTOR_PLANNER_DEFAULTS: Readonly<PgvectorPlannerSettings> = {
  exactScanRatio: 4,
  exactScanMinCandidates: 256,
  pointCountMaxAgeMs: 2000,
  candidateCountMaxAgeMs: 2000,
};

/**
 * The most candidates an exact scan is planned for: a filtered search counts its candidates up to
 * this many plus one, and scans exactly when the count stays at or below it.
 */
export function exactScanCap(
  points: number,
  depth: number,
  ef: number,
  settings: PgvectorPlannerSettings = PGVECTOR_PLANNER_DEFAULTS,
): number {
  const crossover = Math.floor(Math.sqrt(settings.exactScanRatio * ef * points));
  return Math.max(settings.exactScanMinCandidates, depth, crossover);
}
