/**
 * The race between ingestion and real-time updates of the same id: the embedding processor reads the
 * aggregator row, a real-time batch then writes the row and finds no point to update (it is not
 * written yet), and the point is then written with the old attributes. So after writing its points
 * the processor reads the rows again (one query per aggregator table) and writes once more, on the
 * rows as they are now, the points of ids whose row changed, until a read after the writes finds
 * nothing changed (model/aggregator-rows.ts says which). A real-time write after that read finds the
 * point and updates it itself.
 */
import type { PointWrites } from './embedding-plan.js';

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
