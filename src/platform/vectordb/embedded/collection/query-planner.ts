/**
 * Chooses how to answer one query over the indexed points: an exact scan of the points the filters
 * leave, or a graph search that applies the filters while walking.
 *
 * Cost model (both sides scale with the dimension, so it cancels): an exact scan scores every
 * candidate, cost ∝ `candidates`. A filtered graph walk must pass about `ef / selectivity` nodes to
 * collect `ef` matching ones, cost ∝ `ef × graphSize / candidates`, each node dearer than a scanned
 * row (a native distance plus a call into JavaScript for the filter, against a JavaScript dot product).
 * Exact wins when `candidates² ≤ ratio × ef × graphSize`. `ratio` was measured on 100,000 × 128
 * (bench/RESULTS.md, vss-recall): an exact scan costs about 0.34 ms per 1,000 candidates and a
 * filtered walk about 0.0013 ms × ef × graphSize / candidates, so ratio ≈ 4 and, at ef 64, the
 * crossover is near 5,000 candidates (5 %): a 0.5 % filter is scanned, a 10 % one walked. At the
 * default ef 96 it is near 6,200 (6 %).
 */

export interface PlannerSettings {
  /** Exact scan when candidates² ≤ ratio × ef × graphSize. */
  exactScanRatio: number;
  /** Always scan exactly at or below this many candidates. */
  exactScanMinCandidates: number;
}

export const PLANNER_DEFAULTS: Readonly<PlannerSettings> = { exactScanRatio: 4, exactScanMinCandidates: 256 };

export interface PlanInput {
  /** Indexed points that pass the filters (all indexed points when unfiltered). */
  candidates: number;
  /** Nodes the graph can return. */
  graphSize: number;
  /** Hits wanted: limit + excluded ids. */
  depth: number;
  efSearch: number;
  filtered: boolean;
}

export type QueryPlan =
  | { path: 'exact'; candidates: number }
  | { path: 'graph'; candidates: number; ef: number; filtered: boolean };

export function planQuery(input: PlanInput, settings: PlannerSettings = PLANNER_DEFAULTS): QueryPlan {
  const { candidates, graphSize, depth } = input;
  const ef = Math.max(input.efSearch, depth);
  if (candidates <= settings.exactScanMinCandidates || candidates <= depth)
    return { path: 'exact', candidates };
  if (candidates * candidates <= settings.exactScanRatio * ef * graphSize)
    return { path: 'exact', candidates };
  return { path: 'graph', candidates, ef, filtered: input.filtered && candidates < graphSize };
}
