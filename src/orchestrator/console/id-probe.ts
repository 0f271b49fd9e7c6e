/**
 * Finds ids that exist in the feature store, for requests the console generates. The feature store
 * API reads rows by key and lists none, so the probe asks for ids in the shapes id columns usually
 * take — the entity's or key's initial and a number (`u1`, `c12`), the entity name and a number
 * (`user_3`), or a bare number (`7`) — in one RetrieveFeatures call per entity, and keeps those the
 * store has a row for. The reference feature store's demo data (`u1`…, `c1`…, categories `0`…)
 * is found this way; a store whose ids take another shape yields none, and the caller falls back to
 * made-up ids.
 */
import type { FeatureFetcher } from '../clients/feature-fetcher.js';

export interface ProbeTarget {
  entity: string;
  /** The key part's name, e.g. `user_id`. */
  keyName: string;
  /** A feature group of the entity to read (any will do: a row's presence is what counts). */
  group: { label: string; features: readonly string[] };
}

const NUMBERS = Array.from({ length: 24 }, (_, i) => i + 1);

/** Candidate ids, most likely shapes first. */
export function candidateIds(entity: string, keyName: string): string[] {
  const stem = keyName.replace(/_?id$/i, '');
  const prefixes = [entity[0] ?? '', stem[0] ?? '', `${entity}_`, entity, `${stem}_`, ''];
  const ids = new Set<string>();
  for (const prefix of prefixes) for (const n of NUMBERS) ids.add(`${prefix}${n}`);
  ids.add('0');
  return [...ids];
}

/** Up to `count` ids of `target.entity` the feature store has rows for, within `timeoutMs`. */
export async function probeIds(
  fetcher: FeatureFetcher,
  target: ProbeTarget,
  count: number,
  timeoutMs = 2000,
): Promise<string[]> {
  const candidates = candidateIds(target.entity, target.keyName);
  const signal = AbortSignal.timeout(timeoutMs);
  const rows = await fetcher.retrieve(
    {
      entity: target.entity,
      keysSchema: [target.keyName],
      keys: candidates.map((id) => [id]),
      featureGroups: [target.group],
    },
    { signal, deadline: Date.now() + timeoutMs, timeoutMs },
  );
  const found: string[] = [];
  rows.forEach((row, i) => {
    if (row !== undefined && row.length > 0 && found.length < count) found.push(candidates[i]!);
  });
  return found;
}
