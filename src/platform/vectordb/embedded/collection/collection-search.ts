/**
 * One query against one collection: filter bitsets → plan → exact scan or filtered graph walk over
 * the indexed points → exact scan of the backlog (unless `indexedOnly`; then of a restart's backlog
 * only, collection.ts `recoveringRows`) → exact rescoring → the page.
 *
 * The graph walk is awaited: on the native engine it runs on a pool thread (hnsw-graph.ts
 * searchAsync) while the event loop goes on, so writes, indexing and a graph swap may happen before
 * it resolves. The walk holds the graph it started on; what it returns is checked against the
 * collection as it is when it resolves (see {@link runQuery}).
 */
import type { Bitset } from '../storage/bitset.js';
import { INDEXED } from '../storage/point-store.js';
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

export interface QueryOptions {
  planner: PlannerSettings;
  /** Walk the graph on the native search pool (hnsw-graph.ts searchAsync) rather than on the event loop. */
  pool: boolean;
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
      // A copy: the collection's set shrinks as rows are indexed, and a search may hold this one.
      backlog = query.matches ? query.matches.copy().and(recovering) : recovering.copy();
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

/** The rows to scan exactly besides the indexed ones, as they are now (a set of its own). */
function backlogRows(collection: Collection, query: PreparedQuery, planned: Planned): Bitset {
  const { store } = collection;
  return planned.backlog ?? (query.matches ?? store.live).copy().andNot(store.indexed);
}

/**
 * The page of hits for one query, rows and keys (smaller is better) best first, handed to `page` in
 * the same synchronous step that found them, so the caller reads the rows as they were. `prepare`
 * makes the query against the collection's current state (filter rows, excluded rows).
 *
 * While a graph walk is awaited, the collection may change. When it resolves:
 * - a row it returned counts only if it is still indexed (not deleted, no new vector waiting, not
 *   reused by another point) and, when writes happened meanwhile, still passes the filters;
 * - the backlog taken before the walk is scanned exactly, and a row of it is never taken from the
 *   walk (one the indexer inserted meanwhile would otherwise be counted twice); when writes happened,
 *   the backlog is also scanned as it is now (new points, new vectors), minus rows no longer live
 *   or matching;
 * - a walk that came back short is answered by an exact scan of the collection as it is now;
 * - a page that came out short because rows the walk returned went meanwhile is searched again
 *   (`retries` times), rather than answered short: a short page reads as the last one.
 */
export async function runQuery<T>(
  collection: Collection,
  prepare: () => PreparedQuery,
  options: QueryOptions,
  page: (rows: number[], keys: number[]) => T,
  retries = 1,
): Promise<T> {
  const { planner: settings } = options;
  const { store, stats } = collection;
  let query = prepare();
  const planned = plan(collection, query, settings);
  const { plan: chosen, backlogCandidates, indexedMatches, depth } = planned;
  const scorer = prepareScorer(store, collection.spec.distance, query.vector);
  const top = new TopK(depth, store.ids);
  if (backlogCandidates > 0) stats.backlogScans++;
  if (chosen.path === 'exact') {
    stats.exactScans++;
    scanInto(indexedMatches ?? store.indexed, scorer, top);
    if (backlogCandidates > 0) scanInto(backlogRows(collection, query, planned), scorer, top);
    return pageOf(top, query, page);
  }
  stats.graphSearches++;
  let filter: Bitset | undefined;
  if (chosen.filtered && indexedMatches) {
    stats.filteredGraphSearches++;
    filter = indexedMatches;
  }
  const backlog = backlogCandidates > 0 ? backlogRows(collection, query, planned) : undefined;
  const version = collection.version;
  const { graph } = collection;
  const hits = await (options.pool
    ? graph.searchAsync(query.vector, depth, chosen.ef, filter)
    : graph.search(query.vector, depth, chosen.ef, filter));
  const written = collection.version !== version;
  if (written) query = prepare();
  if (hits.rows.length < Math.min(depth, chosen.candidates)) {
    // The walk could not reach enough matching nodes (possible when deletes cut the graph up):
    // answer exactly rather than short.
    stats.fallbacks++;
    const now = plan(collection, query, settings);
    scanInto(now.indexedMatches ?? store.indexed, scorer, top);
    if (now.backlogCandidates > 0) scanInto(backlogRows(collection, query, now), scorer, top);
    return pageOf(top, query, page);
  }
  const { state } = store;
  const matches = written ? query.matches : undefined;
  let gone = 0;
  for (let i = 0; i < hits.rows.length; i++) {
    const row = hits.rows[i]!;
    if (backlog?.has(row)) continue; // scanned with the backlog below
    if (state[row] !== INDEXED || (matches && !matches.has(row))) {
      gone++;
      continue;
    }
    // Rescore exactly, so a point's score does not depend on the path that found it.
    top.offer(row, scorer.key(row));
  }
  let rest = backlog;
  if (written) {
    const now = plan(collection, query, settings);
    const current = now.backlogCandidates > 0 ? backlogRows(collection, query, now) : undefined;
    const earlier = backlog?.and(query.matches ?? store.live);
    rest = current && earlier ? current.or(earlier) : (current ?? earlier);
  }
  if (rest) scanInto(rest, scorer, top);
  if (gone > 0 && top.rows.length < depth && retries > 0) {
    return runQuery(collection, prepare, options, page, retries - 1);
  }
  return pageOf(top, query, page);
}

/** The first `limit` of `top` that the query does not exclude. */
function pageOf<T>(top: TopK, query: PreparedQuery, page: (rows: number[], keys: number[]) => T): T {
  const best = top.sorted();
  const rows: number[] = [];
  const keys: number[] = [];
  for (let i = 0; i < best.rows.length && rows.length < query.limit; i++) {
    const row = best.rows[i]!;
    if (query.excluded.has(row)) continue;
    rows.push(row);
    keys.push(best.keys[i]!);
  }
  return page(rows, keys);
}
