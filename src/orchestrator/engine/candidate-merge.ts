/**
 * How the retrieval stage merges its retrievers' candidates into the request's targets: the union of
 * each retriever's first `quota` candidates (vss answers best first), each id once, keeping its best
 * score over the retrievers that returned it, ordered by that score (ties: first seen first).
 *
 * A quota counts a retriever's own top candidates, duplicates included: each retriever's top `quota`
 * are always in the union, which holds at most the sum of the quotas. A retriever's score (and
 * attributes) for a merged candidate are kept whenever it returned that candidate, even past its quota
 * (another retriever brought it in): the ranking model sees every score there is.
 */

export interface RetrievedCandidate {
  readonly id: string;
  readonly score: number;
  readonly attributes: { readonly [name: string]: string };
}

/** One retriever's answer, best first, and how many of its candidates it may contribute. */
export interface RetrieverCandidates {
  readonly quota: number;
  readonly candidates: readonly RetrievedCandidate[];
}

export interface MergedCandidates {
  /** Target ids, best score first. */
  readonly ids: string[];
  /** Per target: its best score over the retrievers that returned it. */
  readonly best: Float32Array;
  /**
   * Per retriever (in the order given), per target: the candidate it returned, or undefined when it
   * did not return that id (its columns then take their type's default).
   */
  readonly byRetriever: (RetrievedCandidate | undefined)[][];
}

export function mergeCandidates(results: readonly RetrieverCandidates[]): MergedCandidates {
  // Per retriever: id → its candidate (first occurrence: vss answers best first).
  const returned = results.map((result) => {
    const byId = new Map<string, RetrievedCandidate>();
    for (const candidate of result.candidates) if (!byId.has(candidate.id)) byId.set(candidate.id, candidate);
    return byId;
  });
  // The union, in first-seen order, with each id's best score.
  const best = new Map<string, number>();
  results.forEach((result, r) => {
    let taken = 0;
    for (const [id] of returned[r]!) {
      if (taken++ >= result.quota) break;
      if (!best.has(id)) best.set(id, Number.NEGATIVE_INFINITY);
    }
  });
  for (const id of best.keys()) {
    let score = Number.NEGATIVE_INFINITY;
    for (const byId of returned) {
      const candidate = byId.get(id);
      if (candidate !== undefined && candidate.score > score) score = candidate.score;
    }
    best.set(id, score);
  }
  // Array.prototype.sort is stable: equal scores keep first-seen order.
  const ids = [...best.keys()].sort((a, b) => best.get(b)! - best.get(a)!);
  return {
    ids,
    best: Float32Array.from(ids, (id) => best.get(id)!),
    byRetriever: returned.map((byId) => ids.map((id) => byId.get(id))),
  };
}
