/**
 * Which aggregator rows changed between two reads, for the processes that write points from them and
 * must not leave a point on a row a real-time update has since changed: the embedding processor
 * (consumers/aggregator-recheck.ts) and promotion's copy to production (admin/…/promote-steps.ts).
 */
import type { Attributes } from '../store/index.js';

/** Aggregator rows by table, then id, as the processor reads them. */
export type AggregatorRows = Map<string, Map<string, Attributes>>;

/** Per aggregator table, the ids whose row differs between two reads (a row added or gone included). */
export function changedRows(before: AggregatorRows, after: AggregatorRows): Map<string, Set<string>> {
  const changed = new Map<string, Set<string>>();
  for (const [table, rows] of after) {
    const earlier = before.get(table) ?? new Map<string, Attributes>();
    const ids = new Set<string>();
    for (const [id, row] of rows) if (!sameRow(earlier.get(id), row)) ids.add(id);
    for (const id of earlier.keys()) if (!rows.has(id)) ids.add(id);
    if (ids.size > 0) changed.set(table, ids);
  }
  return changed;
}

function sameRow(a: Attributes | undefined, b: Attributes | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}
