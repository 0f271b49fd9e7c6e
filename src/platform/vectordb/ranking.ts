/**
 * Deterministic answers over a server's ranking (Qdrant's, pgvector's). A server orders equal scores
 * its own way (Qdrant by internal offsets, PostgreSQL by its collation); the port orders them by id
 * (JavaScript's string order). The best `limit` hits are therefore fetched with one hit of margin:
 * when the hit after the last one kept ties with it, the fetch widens until the tie is inside it, and
 * the hits are re-sorted by (score, id) before the answer is cut from them.
 */
import type { DistanceFunction } from './vector-db.js';

export interface RankedHit {
  id: string;
  score: number;
}

/** Hits first fetched for an answer of `limit`: one more, to see whether the last one ties. */
export function firstWindow(limit: number): number {
  return limit + 1;
}

/** Beyond this many hits a run of equal scores is cut where it is, rather than fetched whole. */
const MAX_WINDOW = 200_000;

/**
 * How many hits to fetch instead of `window` (the size `hits` was fetched with), or undefined when
 * the answer can be cut from `hits`: every hit that ties with a kept one is in it.
 */
export function widerWindow(hits: readonly RankedHit[], window: number, limit: number): number | undefined {
  if (hits.length === 0) return undefined;
  const exhausted = hits.length < window;
  const last = Math.min(limit, hits.length) - 1;
  if (exhausted || hits[hits.length - 1]!.score !== hits[last]!.score) return undefined;
  if (window >= MAX_WINDOW) return undefined;
  return window + Math.max(window, 16);
}

/** Sorts hits by the port's order: score (descending, ascending for EUCLIDEAN), then id. */
export function sortHits<T extends RankedHit>(hits: T[], distance: DistanceFunction): T[] {
  const ascending = distance === 'EUCLIDEAN';
  return hits.sort((a, b) => {
    if (a.score !== b.score) return ascending ? a.score - b.score : b.score - a.score;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}

/** The best `limit` of a settled fetch. */
export function cutPage<T extends RankedHit>(hits: T[], limit: number, distance: DistanceFunction): T[] {
  return sortHits(hits, distance).slice(0, limit);
}
