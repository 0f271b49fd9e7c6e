/**
 * The race between ingestion and real-time updates of the same id: the embedding processor reads the
 * aggregator row, a real-time batch then writes the row and finds no point to update (it is not
 * written yet), and the point is then written with the old attributes. So after writing its points
 * the processor reads the rows again (one query per aggregator table) and writes once more, on the
 * rows as they are now, the points of ids whose row changed, until a read after the writes finds
 * nothing changed. A real-time write after that read finds the point and updates it itself.
 */
import type { Attributes } from '../store/index.js';
import type { PointWrites } from './embedding-plan.js';

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

/** The point writes (puts and payload updates, no deletes) of `writes` for the changed ids, if any. */
export function rewritesOf(
  writes: PointWrites,
  changed: ReadonlyMap<string, ReadonlySet<string>>,
): PointWrites | undefined {
  const ids = changed.get(writes.model.aggregatorTable);
  if (ids === undefined) return undefined;
  const puts = new Map([...writes.puts].filter(([id]) => ids.has(id)));
  const payloads = new Map([...writes.payloads].filter(([id]) => ids.has(id)));
  if (puts.size === 0 && payloads.size === 0) return undefined;
  return { ...writes, deletes: [], puts, payloads };
}

function sameRow(a: Attributes | undefined, b: Attributes | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}
