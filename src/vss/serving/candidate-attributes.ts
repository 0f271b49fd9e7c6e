/**
 * Attribute resolution: the requested attributes of each returned candidate, as strings.
 *
 * One source of truth per query: the point payloads of the collection the query searched, read by
 * the same vector DB call that evaluated the query's filters. A candidate's attributes therefore
 * always satisfy the filters it was returned for. The aggregator table is the record those payload
 * fields are written from (the real-time consumers update the row and the points' payloads); serving
 * never overlays it afterwards, because a value that changed between the search and such a read
 * would contradict the filter the candidate matched.
 */
import type { Candidate } from '../../gen/vss/v1/vss.js';
import type { PayloadValue, SearchHit } from '../../platform/vectordb/index.js';

/** Requested attributes from each hit's payload; attributes a point does not carry are left out. */
export function candidatesOf(hits: readonly SearchHit[], attributes: readonly string[]): Candidate[] {
  return hits.map((hit) => {
    const values: Record<string, string> = {};
    for (const name of attributes) {
      const value = hit.payload?.[name];
      if (value !== undefined) values[name] = payloadText(value);
    }
    return { id: hit.id, score: hit.score, attributes: values };
  });
}

function payloadText(value: PayloadValue): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}
