/**
 * One query against one collection: filter bitsets → plan → exact scan or filtered graph walk over
 * the indexed points → exact scan of the backlog (unless `indexedOnly`; then of a restart's backlog
 * only, collection.ts `recoveringRows`) → exact rescoring → the page.
 */
import type { Bitset } from '../storage/bitset.js';
import type { Collection } from './collection.js';
import { prepareScorer, scanInto, TopK } from './exact-scan.js';
import { type PlannerSettings, planQuery, type QueryPlan } from './query-planner.js';

export interface PreparedQuery {
  vector: Float32Array;
  /** Live rows passing every filter; undefined when the query has no filter. */
  matches: Bitset | undefined;
  limit: number;
  /** Rows never returned. */
  excluded: ReadonlySet<number>;
  indexedOnly: boolean;
  /** The search's own width; the collection's `efSearch` when undefined. */
  efSearch: number | undefined;
  /** Scan every matching indexed row instead of walking the graph (the port's `exact`). */
  exact?: boolean;
}

export interface QueryExplanation {
  plan: QueryPlan;
  /** Points of the backlog the query also scans (0 when `indexedOnly`). */
  backlogCandidates: number;
}

interface Planned extends QueryExplanation {
  /** Indexed rows passing the filters; undefined when unfiltered. */
  indexedMatches: Bitset | undefined;
  depth: number;
  /** The unindexed rows to scan when not every pending row is (`indexedOnly` after a restart). */
  backlog?: Bitset | undefined;
}

function plan(collection: Collection, query: PreparedQuery, settings: PlannerSettings): Planned {
  const { store, graph } = collection;
  const depth = query.limit + query.excluded.size;
  const indexed = query.matches ? collection.indexedMatches(query.matches) : undefined;
  const indexedMatches = indexed?.rows;
  const candidates = indexed ? indexed.count : store.indexedCount;
  const planned: QueryPlan = query.exact
    ? { path: 'exact', candidates }
    : planQuery(
        {
          candidates,
          graphSize: graph.size,
          depth,
          efSearch: query.efSearch ?? collection.spec.hnsw.efSearch,
          filtered: indexedMatches !== undefined,
        },
        settings,
      );
  let backlogCandidates = 0;
  let backlog: Bitset | undefined;
  if (!query.indexedOnly && collection.pendingCount > 0) {
    backlogCandidates = query.matches ? query.matches.count() - candidates : collection.pendingCount;
  } else if (query.indexedOnly) {
    // A restart's backlog was (mostly) in the graph before it: scanned exactly until re-indexed, so
    // what a restart serves never shrinks to the part of the graph its last snapshot held.
    const recovering = collection.recoveringRows;
    if (recovering) {
      backlog = query.matches ? query.matches.copy().and(recovering) : recovering;
      backlogCandidates = query.matches ? backlog.count() : collection.recoveringCount;
    }
  }
  return { plan: planned, backlogCandidates, indexedMatches, depth, backlog };
}

export function explainQuery(
  collection: Collection,
  query: PreparedQuery,
  settings: PlannerSettings,
): QueryExplanation {
  const { plan: chosen, backlogCandidates } = plan(collection, query, settings);
  return { plan: chosen, backlogCandidates };
}

/** The page of hits for one query: rows and keys (smaller is better), best first. */
export function runQuery(
  collection: Collection,
  query: PreparedQuery,
  settings: PlannerSettings,
): { rows: number[]; keys: number[] } {
  const { store, graph, stats } = collection;
  const planned = plan(collection, query, settings);
  const { plan: chosen, backlogCandidates, indexedMatches, depth } = planned;
  const scorer = prepareScorer(store, collection.spec.distance, query.vector);
  const top = new TopK(depth, store.ids);
  if (chosen.path === 'exact') {
    stats.exactScans++;
    scanInto(indexedMatches ?? store.indexed, scorer, top);
  } else {
    stats.graphSearches++;
    let accept: ((row: number) => boolean) | undefined;
    if (chosen.filtered && indexedMatches) {
      stats.filteredGraphSearches++;
      const words = indexedMatches.words;
      accept = (row) => (words[row >>> 5]! & (1 << (row & 31))) !== 0;
    }
    const hits = graph.search(query.vector, depth, chosen.ef, accept);
    if (hits.rows.length < Math.min(depth, chosen.candidates)) {
      // The walk could not reach enough matching nodes (possible when deletes cut the graph up):
      // answer exactly rather than short.
      stats.fallbacks++;
      scanInto(indexedMatches ?? store.indexed, scorer, top);
    } else {
      // Rescore exactly, so a point's score does not depend on the path that found it.
      for (const row of hits.rows) top.offer(row, scorer.key(row));
    }
  }
  if (backlogCandidates > 0) {
    stats.backlogScans++;
    const backlog = planned.backlog ?? (query.matches ?? store.live).copy().andNot(store.indexed);
    scanInto(backlog, scorer, top);
  }
  const best = top.sorted();
  const rows: number[] = [];
  const keys: number[] = [];
  for (let i = 0; i < best.rows.length && rows.length < query.limit; i++) {
    const row = best.rows[i]!;
    if (query.excluded.has(row)) continue;
    rows.push(row);
    keys.push(best.keys[i]!);
  }
  return { rows, keys };
}
