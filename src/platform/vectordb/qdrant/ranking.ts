/**
 * Deterministic pages over Qdrant's ranking. Qdrant orders equal scores by its internal offsets; the
 * port orders them by id. A page `[offset, offset + limit)` is therefore fetched with one hit of
 * margin on each side: when the hit before the page ties with the page's first, or the hit after it
 * ties with its last, the window widens until the tie is inside it, and the window is re-sorted by
 * (score, id) before the page is cut out of it.
 */
import { LIMITS } from '../validation.js';
import type { DistanceFunction } from '../vector-db.js';

export interface Window {
  /** Qdrant offset of the first hit fetched. */
  start: number;
  /** Qdrant offset after the last hit fetched. */
  end: number;
}

export interface RankedHit {
  id: string;
  score: number;
}

/** The window first fetched for a page: the page and one hit on each side. */
export function firstWindow(offset: number, limit: number): Window {
  return { start: offset > 0 ? offset - 1 : 0, end: offset + limit + 1 };
}

/** Beyond this depth a run of equal scores is cut where it is, rather than fetched whole. */
const MAX_WINDOW = 2 * LIMITS.maxDepth;

/**
 * The wider window `hits` (the answer for `window`) calls for, or undefined when the page can be cut
 * from it: every hit that ties with a hit of the page is in it.
 */
export function widerWindow(
  hits: readonly RankedHit[],
  window: Window,
  offset: number,
  limit: number,
): Window | undefined {
  const first = offset - window.start;
  if (hits.length <= first) return undefined; // nothing at the page's place: an empty page
  if (window.start > 0 && hits[0]!.score === hits[first]!.score) return { start: 0, end: window.end };
  const exhausted = hits.length < window.end - window.start;
  const last = Math.min(offset + limit, window.start + hits.length) - 1 - window.start;
  if (exhausted || hits[hits.length - 1]!.score !== hits[last]!.score) return undefined;
  if (window.end - window.start >= MAX_WINDOW) return undefined;
  return { start: window.start, end: window.end + Math.max(window.end - window.start, 16) };
}

/** Sorts hits by the port's order: score (descending, ascending for EUCLIDEAN), then id. */
export function sortHits<T extends RankedHit>(hits: T[], distance: DistanceFunction): T[] {
  const ascending = distance === 'EUCLIDEAN';
  return hits.sort((a, b) => {
    if (a.score !== b.score) return ascending ? a.score - b.score : b.score - a.score;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}

/** The page `[offset, offset + limit)` of a settled window. */
export function cutPage<T extends RankedHit>(
  hits: T[],
  window: Window,
  offset: number,
  limit: number,
  distance: DistanceFunction,
): T[] {
  const first = offset - window.start;
  if (hits.length <= first) return [];
  return sortHits(hits, distance).slice(first, first + limit);
}
