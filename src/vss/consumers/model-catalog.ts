/**
 * What the ingestion processors need to know about a model, read from the SQL store and kept for a
 * short while (every event of a batch names its model; reading it per event would dominate).
 * Anything an event is refused for (an unknown model or variant, a version the variant does not
 * write) is checked again against a fresh read before the refusal, so a registration or a reset
 * made a moment ago is never refused from a stale copy.
 */
import { describeError } from '../../platform/errors.js';
import { compileMembership, type MembershipRule, promotingVariants } from '../model/index.js';
import type { Model, ModelKey, Variant, VssStore } from '../store/index.js';

export interface CatalogVariant {
  readonly variant: Variant;
  /** The compiled vss_filter; undefined when the stored one does not compile (see `ruleError`). */
  readonly rule: MembershipRule | undefined;
  readonly ruleError: string | undefined;
}

export interface CatalogModel {
  readonly model: Model;
  readonly embeddingsTable: string;
  readonly aggregatorTable: string;
  /** By variant name. */
  readonly variants: ReadonlyMap<string, CatalogVariant>;
  /** Variants being promoted → the version also written to production meanwhile (cluster-vector-dbs.ts). */
  readonly promoting: ReadonlyMap<string, number>;
}

interface Entry {
  /** Undefined: the model does not exist (remembered too, so a flood of such events stays cheap). */
  readonly value: CatalogModel | undefined;
  readonly loadedAt: number;
}

export interface ModelCatalogOptions {
  /** How long a read stays in use, ms. Default 5,000. */
  ttlMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

export class ModelCatalog {
  readonly #entries = new Map<string, Entry>();
  readonly #loading = new Map<string, { startedAt: number; promise: Promise<Entry> }>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(
    private readonly store: VssStore,
    options: ModelCatalogOptions = {},
  ) {
    this.#ttlMs = options.ttlMs ?? 5_000;
    this.#now = options.now ?? Date.now;
  }

  /** The current time on the catalog's clock: pass it back as `loadedSince` to force a fresh read. */
  now(): number {
    return this.#now();
  }

  /**
   * The model, or undefined when it does not exist. A copy read before `loadedSince` (or older than
   * the TTL) is read again.
   */
  async model(key: ModelKey, loadedSince = Number.NEGATIVE_INFINITY): Promise<CatalogModel | undefined> {
    const id = JSON.stringify([key.entity, key.modelName]);
    const entry = this.#entries.get(id);
    const now = this.#now();
    if (entry !== undefined && entry.loadedAt >= loadedSince && now - entry.loadedAt < this.#ttlMs) {
      return entry.value;
    }
    // Callers share a read in progress, unless it started before the copy they need.
    let loading = this.#loading.get(id);
    if (loading === undefined || loading.startedAt < loadedSince) {
      const started = { startedAt: now, promise: this.#load(key, now) };
      loading = started;
      this.#loading.set(id, started);
      void started.promise.then(
        () => this.#loading.get(id) === started && this.#loading.delete(id),
        () => this.#loading.get(id) === started && this.#loading.delete(id),
      );
    }
    const loaded = await loading.promise;
    const current = this.#entries.get(id);
    if (current === undefined || current.loadedAt <= loaded.loadedAt) this.#entries.set(id, loaded);
    return loaded.value;
  }

  async #load(key: ModelKey, loadedAt: number): Promise<Entry> {
    const model = await this.store.models.find(key);
    if (model === undefined) return { value: undefined, loadedAt };
    const [store, variants, operations] = await Promise.all([
      this.store.stores.get(model.storeId),
      this.store.variants.list(key),
      this.store.operations.list({ ...key, unfinished: true, limit: 100 }),
    ]);
    const byName = new Map<string, CatalogVariant>();
    for (const variant of variants) {
      let rule: MembershipRule | undefined;
      let ruleError: string | undefined;
      try {
        rule = compileMembership(variant.vssFilter);
      } catch (err) {
        ruleError = describeError(err);
      }
      byName.set(variant.variant, { variant, rule, ruleError });
    }
    return {
      value: {
        model,
        embeddingsTable: store.embeddingsTable,
        aggregatorTable: store.aggregatorTable,
        variants: byName,
        promoting: promotingVariants(operations),
      },
      loadedAt,
    };
  }
}
