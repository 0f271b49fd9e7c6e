/**
 * The candidate window a page is cut from: one ranking per query, the same for every page of a walk
 * and for a single request as deep as the walk, so pages never skip what a deeper request returns.
 *
 * An approximate search is not a prefix of a wider one: a search of width 256 finds neighbours that
 * one of width 128 missed, some ranking above candidates the narrower one returned. Cutting page
 * n + 1 from a wider search than page n therefore skipped those (they rank before the cursor) and
 * ended walks early. Instead the ranking is built in fixed steps: step j searches `2 × keep[j]` wide
 * and keeps its best `keep[j]`, then appends those the earlier steps do not hold. Each step's
 * candidates are a prefix of the next step's, whatever the vector DB returns, so a page at any depth
 * reads the same sequence. Within a step the order is exact; a candidate found only by a wider step
 * comes after the earlier steps' candidates (searching twice as wide as what is kept makes that
 * rare: the best half of a beam is nearly exact).
 */
import type { SearchHit } from '../../platform/vectordb/index.js';
import { SEARCH_LIMITS } from './request-limits.js';

/**
 * Candidates kept by each step; step j searches `min(2 × keep, SEARCH_LIMITS.windowWidth)` wide. The
 * vector DB walks at least its `efSearch` wide whatever the limit, so small first steps lose no
 * recall: they only spare a first page the cost of returning hits it will not use. The last step
 * keeps the walk depth: no page of a walk ends deeper.
 */
export const WINDOW_STEPS: readonly number[] = [
  16,
  32,
  64,
  128,
  256,
  512,
  1024,
  2048,
  4096,
  SEARCH_LIMITS.walkDepth,
];

export interface CandidateWindow {
  /** Best first (see the file comment for the order across steps); no id twice. */
  hits: SearchHit[];
  /** Every matching indexed candidate is in `hits`. */
  complete: boolean;
}

/** The smallest prefix of the query's ranking that holds at least `depth` candidates, or all of them. */
export async function candidateWindow(
  depth: number,
  search: (width: number) => Promise<SearchHit[]>,
): Promise<CandidateWindow> {
  const ranked: SearchHit[] = [];
  const seen = new Set<string>();
  for (const keep of WINDOW_STEPS) {
    const width = Math.min(2 * keep, SEARCH_LIMITS.windowWidth);
    const hits = await search(width);
    // The port returns `width` hits whenever that many match: fewer means it returned them all.
    const complete = hits.length < width;
    const kept = complete ? hits : hits.slice(0, keep);
    for (const hit of kept) {
      if (seen.has(hit.id)) continue;
      seen.add(hit.id);
      ranked.push(hit);
    }
    if (complete) return { hits: ranked, complete: true };
    if (ranked.length >= depth) return { hits: ranked, complete: false };
  }
  return { hits: ranked, complete: false };
}
