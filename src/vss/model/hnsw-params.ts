/**
 * A variant's HNSW parameters, from its registration's `vectordb_config`, and the width its searches
 * run at: shared by admin (which creates a version's collection with them) and serving (which
 * searches each variant at its own width, whatever collection it shares).
 */
import { HNSW_DEFAULTS, type HnswParams } from '../../platform/vectordb/vector-db.js';
import type { JsonObject, JsonValue, Variant } from '../store/index.js';

/**
 * HNSW parameters from the variants' `vectordb_config`: `hnsw: {m, ef_construction, ef_search}` or
 * the original system's `params: {m, ef_construct}` (strings or numbers). The first variant (by name)
 * that sets a parameter decides it; unset ones take the vector DB's defaults.
 */
export function hnswOf(
  variants: readonly Pick<Variant, 'variant' | 'vectorDbConfig'>[],
): Partial<HnswParams> {
  const hnsw: Partial<HnswParams> = {};
  for (const variant of [...variants].sort((a, b) => (a.variant < b.variant ? -1 : 1))) {
    const config = variant.vectorDbConfig;
    const sources = [objectAt(config, 'hnsw'), objectAt(config, 'params')];
    for (const source of sources) {
      if (source === undefined) continue;
      hnsw.m ??= positive(source.m);
      hnsw.efConstruction ??= positive(
        source.ef_construction ?? source.ef_construct ?? source.efConstruction,
      );
      hnsw.efSearch ??= positive(source.ef_search ?? source.ef ?? source.efSearch);
    }
  }
  return Object.fromEntries(Object.entries(hnsw).filter(([, v]) => v !== undefined));
}

function objectAt(config: JsonObject, key: string): JsonObject | undefined {
  const value = config[key];
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

function positive(value: JsonValue | undefined): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= 10_000 ? n : undefined;
}

/**
 * The HNSW width (ef) of the variant's searches: as changed live (update-variant), else its
 * registration's `ef_search`, else the vector DB's default. `requested` (a Search's `search_width`)
 * widens it, never narrows it: a client may pay for more recall, not take the variant's away.
 */
export function searchWidthOf(
  variant: Pick<Variant, 'efSearch' | 'variant' | 'vectorDbConfig'>,
  requested = 0,
): number {
  const own = variant.efSearch ?? hnswOf([variant]).efSearch ?? HNSW_DEFAULTS.efSearch;
  return Math.max(own, requested);
}
