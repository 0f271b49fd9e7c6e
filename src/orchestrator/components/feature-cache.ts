import { createHash } from 'node:crypto';
import type { Cache, CacheEntry } from '../../platform/cache/index.js';
import type { BoundCounter, CounterMetric, Metrics } from '../../platform/metrics/index.js';
import { CHECK_EVERY, inChunks, nextTurn, sliceOver } from '../../platform/scheduling/index.js';

/**
 * The feature cache of one FeatureComponent: an entity's feature values stored under
 * `<model_config_id>:<cache.version>:<component>:<layout>:<entity key>`, each value length-prefixed.
 * Changing `cache.version` invalidates a model's cached features; `layout` (featureLayout) changes
 * with the entity, its key schema and the features requested (names, types, order), since cached
 * values are matched to columns by position: a config that changes them reads none of the old rows.
 * Cache trouble never fails a request: a slow or broken cache counts as misses.
 */
export class FeatureCache {
  private readonly prefix: string;
  private readonly errors: CounterMetric;
  private readonly labels: { model: string; component: string };
  private readonly hits: BoundCounter;
  private readonly misses: BoundCounter;

  constructor(
    private readonly cache: Cache,
    metrics: Metrics,
    modelConfigId: string,
    cacheVersion: number,
    component: string,
    layout: string,
    private readonly ttlMs: number,
  ) {
    this.prefix = `${modelConfigId}:${cacheVersion}:${component}:${layout}:`;
    this.labels = { model: modelConfigId, component };
    const requests = metrics.counter(
      'orchestrator_feature_cache_requests_total',
      'Feature cache look-ups per unique entity key, by model, component and result (hit, miss)',
      ['model', 'component', 'result'],
    );
    this.hits = requests.bind({ ...this.labels, result: 'hit' });
    this.misses = requests.bind({ ...this.labels, result: 'miss' });
    this.errors = metrics.counter(
      'orchestrator_feature_cache_errors_total',
      'Feature cache calls that failed or timed out (treated as misses)',
      ['model', 'component', 'operation'],
    );
  }

  key(parts: readonly string[]): string {
    return this.prefix + parts.join('|');
  }

  /**
   * Cached values per key (undefined = miss), waiting at most until `deadline`. Many keys are looked
   * up in chunks that give the event loop its turns, and the look-up stops (throwing) once `signal`
   * aborts.
   */
  async lookup(
    keys: readonly (readonly string[])[],
    deadline: number,
    signal: AbortSignal,
  ): Promise<(readonly Uint8Array[] | undefined)[]> {
    const found: (readonly Uint8Array[] | undefined)[] = new Array(keys.length);
    let hits = 0;
    const getManyShared = this.cache.getManyShared?.bind(this.cache);
    if (getManyShared !== undefined) {
      // An in-process cache answers at once and without copies; each stored entry is decoded once.
      let failed = false;
      await inChunks(keys.length, signal, Number.POSITIVE_INFINITY, (from, to) => {
        if (failed) return;
        let raw: (Uint8Array | undefined)[];
        try {
          raw = getManyShared(this.keysOf(keys, from, to));
        } catch {
          failed = true;
          return;
        }
        for (let i = from; i < to; i++) {
          const bytes = raw[i - from];
          if (bytes !== undefined) {
            found[i] = decodedOnce(bytes);
            hits++;
          }
        }
      });
      if (failed) this.errors.inc({ ...this.labels, operation: 'get' });
    } else {
      let raw: (Uint8Array | undefined)[] | undefined;
      try {
        raw = await withDeadline(this.cache.getMany(this.keysOf(keys, 0, keys.length)), deadline);
      } catch {
        this.errors.inc({ ...this.labels, operation: 'get' });
      }
      if (raw) {
        const answer = raw;
        await inChunks(keys.length, signal, Number.POSITIVE_INFINITY, (from, to) => {
          for (let i = from; i < to; i++) {
            const bytes = answer[i];
            if (bytes !== undefined) {
              found[i] = decodeValues(bytes);
              hits++;
            }
          }
        });
      }
    }
    if (hits > 0) this.hits.inc(hits);
    if (keys.length - hits > 0) this.misses.inc(keys.length - hits);
    return found;
  }

  private keysOf(keys: readonly (readonly string[])[], from: number, to: number): string[] {
    const out = new Array<string>(to - from);
    for (let i = from; i < to; i++) out[i - from] = this.key(keys[i]!);
    return out;
  }

  /**
   * Stores fetched entities in the background, in chunks that give the event loop its turns; stops
   * when `signal` aborts. A failure is counted, never thrown.
   */
  store(
    entries: readonly { key: readonly string[]; values: readonly Uint8Array[] }[],
    signal: AbortSignal,
  ): void {
    if (entries.length === 0) return;
    this.storeChunks(entries, signal).catch(() => {
      if (!signal.aborted) this.errors.inc({ ...this.labels, operation: 'set' });
    });
  }

  private async storeChunks(
    entries: readonly { key: readonly string[]; values: readonly Uint8Array[] }[],
    signal: AbortSignal,
  ): Promise<void> {
    const ttlMs = this.ttlMs;
    for (let from = 0; from < entries.length; from += CHECK_EVERY) {
      if (from > 0 && sliceOver()) await nextTurn(signal);
      const to = Math.min(entries.length, from + CHECK_EVERY);
      const chunk = new Array<CacheEntry>(to - from);
      for (let i = from; i < to; i++) {
        const e = entries[i]!;
        chunk[i - from] = { key: this.key(e.key), value: encodeValues(e.values), ttlMs };
      }
      await this.cache.setMany(chunk);
    }
  }
}

/**
 * Decoded values per shared cache entry. Entries are immutable (a write stores a new object), so a
 * decoding stays right for as long as the entry lives, and goes with it.
 */
const decodedEntries = new WeakMap<Uint8Array, Uint8Array[]>();

function decodedOnce(bytes: Uint8Array): Uint8Array[] {
  let values = decodedEntries.get(bytes);
  if (values === undefined) {
    values = decodeValues(bytes);
    decodedEntries.set(bytes, values);
  }
  return values;
}

function withDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  const remaining = deadline - Date.now();
  if (!Number.isFinite(remaining)) return work;
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('feature cache timed out')), Math.max(0, remaining));
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Each value as a 4-byte little-endian length then its bytes. */
export function encodeValues(values: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const v of values) total += 4 + v.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const v of values) {
    view.setUint32(at, v.length, true);
    out.set(v, at + 4);
    at += 4 + v.length;
  }
  return out;
}

export function decodeValues(bytes: Uint8Array): Uint8Array[] {
  const values: Uint8Array[] = [];
  let at = 0;
  while (at + 4 <= bytes.length) {
    // The length read by hand: a DataView per cached entity was most of a cache hit's garbage.
    const length =
      (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
    values.push(bytes.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return values;
}

/** What a feature component's cached rows mean: the entity, its key schema, and each value's feature and type, in order. */
export interface FeatureLayout {
  entity: string;
  fs_keys: readonly { schema: readonly string[] }[];
  feature_groups: readonly {
    label: string;
    data_type: string;
    vector_dim?: number;
    features: readonly string[];
  }[];
}

/**
 * A stable short hash (16 base64url characters of SHA-256) of a component's layout: equal for equal
 * layouts whatever else the config changes, different when a feature, type, order or the key schema
 * changes.
 */
export function featureLayout(component: FeatureLayout): string {
  const canonical = JSON.stringify([
    component.entity,
    component.fs_keys.map((k) => k.schema),
    component.feature_groups.map((g) => [g.label, g.data_type.toUpperCase(), g.vector_dim ?? 0, g.features]),
  ]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

/** TTL precedence: the component's `cache.ttl_seconds`, else the model's (which defaults to 300 s). */
export function featureCacheTtlMs(
  component: { cache?: { ttl_seconds?: number } },
  model: { cache: { ttl_seconds: number } },
): number {
  return (component.cache?.ttl_seconds ?? model.cache.ttl_seconds) * 1000;
}
