/**
 * The serving configuration repository: entity / model / variant → the model's configuration
 * (distance, dimension), its store tables, and each variant (read version, state, vss_filter, cache
 * TTLs). Serving reads a snapshot in memory, reloaded (three statements, whatever the number of
 * models) when the SQL store says something changed (LISTEN on `vss_config`, which the store's
 * triggers notify on every committed change of stores, models, variants and versions), on a slow
 * safety poll (default 30 s with notifications, 1 s without), and on `refresh()`. A reload that
 * fails or does not finish within `refreshTimeoutMs` (a hung statement) is reported, the last
 * snapshot stays in use, and it is retried (1 s, doubling up to the poll interval).
 *
 * A key missing from the snapshot is looked up in SQL at once before it is reported NOT_FOUND, so a
 * model registered a moment ago is served immediately; the miss is then remembered for
 * `negativeTtlMs` (default 2 s, forgotten on every reload), so a storm of calls naming an unknown
 * entity, model, variant or filter field reaches SQL once, not once per call.
 */
import { LatticeError, notFound } from '../../platform/errors.js';
import { backoffDelay } from '../../platform/scheduling/index.js';
import { embeddingTtlSeconds, searchWidthOf } from '../model/index.js';
import {
  type ModelConfig,
  type ModelKey,
  tableName,
  type Variant,
  type VariantKey,
  type VersionStatus,
  type VssStore,
  variantColumn,
} from '../store/index.js';

export interface ServingModel {
  entity: string;
  modelName: string;
  config: ModelConfig;
  /**
   * The model's embedding store is the source of its embeddings by id (rows with a TTL expire
   * there); when it is off, embeddings are looked up in the vector DB.
   */
  embeddingStoreEnabled: boolean;
  /** Seconds an embedding lives (model/embedding-expiry.ts); 0: no expiry. Search skips expired points. */
  embeddingTtlSeconds: number;
  embeddingsTable: string;
  aggregatorTable: string;
  /** By variant name. */
  variants: ReadonlyMap<string, Variant>;
}

export interface ServedVariant {
  model: ServingModel;
  variant: Variant;
  /** The version the variant serves. */
  readVersion: number;
  /** The variant's own HNSW width (model/hnsw-params.ts searchWidthOf), worked out once per snapshot. */
  searchWidth: number;
}

/** Subscribes to change notifications; `onChange` runs after each committed change (and after a gap). */
export type ConfigChanges = (
  onChange: () => void,
  onError: (err: unknown) => void,
) => Promise<{ close(): Promise<void> }>;

export interface ConfigRepositoryOptions {
  /**
   * Safety poll of the SQL store, ms; 0 turns polling off. Default 30,000 with `changes`, else 1,000.
   */
  refreshIntervalMs?: number;
  /** Change notifications (the SQL store's LISTEN); without them the snapshot is polled. */
  changes?: ConfigChanges;
  /** A reload not finished by then fails (and is retried); default 10,000 ms. */
  refreshTimeoutMs?: number;
  /** How long an unknown key is remembered, ms; default 2,000. */
  negativeTtlMs?: number;
  /** Called when a reload fails (the previous snapshot stays in use; it is retried). */
  onRefreshError?: (err: unknown) => void;
}

const modelKey = (entity: string, modelName: string) => `${entity}\u0000${modelName}`;

/** The most a failed reload waits before its retry, ms. */
const MAX_RETRY_MS = 30_000;

export class ServingConfigRepository {
  private models = new Map<string, ServingModel>();
  /**
   * What `served` answers per variant of the current snapshot: a reload brings new Variant objects,
   * so an entry lives exactly as long as the snapshot it was worked out from, and a Search costs no
   * allocation or settings parse here.
   */
  private readonly servedOf = new WeakMap<Variant, ServedVariant>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  /** A change was notified while a reload ran: reload again after it. */
  private dirty = false;
  private stopped = false;
  private failures = 0;
  private listener: { close(): Promise<void> } | undefined;
  /** Keys looked up in SQL and not found, until the time they may be looked up again. */
  private readonly unknown = new Map<string, number>();
  /** Columns seen per aggregator table (columns are only ever added). */
  private readonly knownColumns = new Map<string, Set<string>>();
  private readonly pollMs: number;
  private readonly timeoutMs: number;
  private readonly negativeTtlMs: number;
  /** Completed and failed reloads (status pages and tests). */
  readonly stats = { refreshes: 0, failures: 0 };

  constructor(
    private readonly store: VssStore,
    private readonly options: ConfigRepositoryOptions = {},
  ) {
    this.pollMs = options.refreshIntervalMs ?? (options.changes ? 30_000 : 1000);
    this.timeoutMs = options.refreshTimeoutMs ?? 10_000;
    this.negativeTtlMs = options.negativeTtlMs ?? 2000;
  }

  /** Loads the first snapshot, subscribes to changes and starts the safety poll. */
  async start(): Promise<void> {
    this.stopped = false;
    if (this.options.changes) {
      this.listener = await this.options.changes(
        () => this.changed(),
        (err) => this.options.onRefreshError?.(err),
      );
    }
    try {
      await this.refresh();
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.schedule(this.pollMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.close();
  }

  /**
   * Reloads every model, store and variant from SQL; concurrent calls share one reload. Rejects with
   * DEADLINE_EXCEEDED when it takes longer than `refreshTimeoutMs` (the statement is abandoned; its
   * late answer is dropped).
   */
  refresh(): Promise<void> {
    this.refreshing ??= this.loadBounded().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** The model; NOT_FOUND naming `entity` or `model_name`. */
  async model(key: ModelKey): Promise<ServingModel> {
    const id = modelKey(key.entity, key.modelName);
    const cached = this.models.get(id);
    if (cached) return cached;
    const missing = `m\u0000${id}`;
    const entityMissing = `e\u0000${key.entity}`;
    if (this.knownUnknown(entityMissing)) {
      throw notFound(`entity "${key.entity}" is not registered`, 'entity');
    }
    if (!this.knownUnknown(missing)) {
      const loaded = await this.loadModel(key);
      if (loaded) {
        this.models.set(id, loaded);
        return loaded;
      }
      this.rememberUnknown(missing);
      const store = await this.store.stores.findByEntity(key.entity);
      if (!store) {
        this.rememberUnknown(entityMissing);
        throw notFound(`entity "${key.entity}" is not registered`, 'entity');
      }
    }
    throw notFound(`model ${key.entity}/${key.modelName} is not registered`, 'model_name');
  }

  /** The variant and its read version; NOT_FOUND for an unknown one, FAILED_PRECONDITION when nothing is ready. */
  async served(key: VariantKey): Promise<ServedVariant> {
    let model = await this.model(key);
    let variant = model.variants.get(key.variant);
    const missing = `v\u0000${modelKey(key.entity, key.modelName)}\u0000${key.variant}`;
    if (!variant && !this.knownUnknown(missing)) {
      this.rememberUnknown(missing);
      const fresh = await this.loadModel(key);
      if (fresh) {
        this.models.set(modelKey(key.entity, key.modelName), fresh);
        model = fresh;
        variant = fresh.variants.get(key.variant);
      }
    }
    if (!variant) {
      throw notFound(`variant ${key.entity}/${key.modelName}/${key.variant} is not registered`, 'variant');
    }
    if (variant.readVersion === null) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `variant ${key.entity}/${key.modelName}/${key.variant} has no ready version yet (state ${variant.state})`,
        { field: 'variant' },
      );
    }
    let served = this.servedOf.get(variant);
    if (served === undefined) {
      served = { model, variant, readVersion: variant.readVersion, searchWidth: searchWidthOf(variant) };
      this.servedOf.set(variant, served);
    }
    return served;
  }

  /**
   * The version model-level look-ups (GetEmbeddings, ScoreCandidates) read: the newest version any
   * variant of the model serves. FAILED_PRECONDITION when no variant serves one.
   */
  modelReadVersion(model: ServingModel): number {
    let newest: number | undefined;
    for (const variant of model.variants.values()) {
      if (variant.readVersion !== null && (newest === undefined || variant.readVersion > newest)) {
        newest = variant.readVersion;
      }
    }
    if (newest === undefined) {
      throw new LatticeError(
        'FAILED_PRECONDITION',
        `model ${model.entity}/${model.modelName} has no ready version yet`,
        { field: 'model_name' },
      );
    }
    return newest;
  }

  /** The status of a version, read from SQL (not the snapshot): used for stale page tokens. */
  async versionStatus(key: ModelKey, version: number): Promise<VersionStatus | undefined> {
    const found = await this.store.versions.find({ ...key, version });
    return found?.status;
  }

  /**
   * The fields a filter may name for this model: the entity's aggregator columns (the attributes
   * ingestion and the real-time consumers copy into each point's payload) and the membership flags
   * `to_be_indexed_<variant>` of the model's variants. A field not yet cached is re-read from the
   * catalog, so a label that appeared a moment ago is accepted.
   */
  async isFilterField(model: ServingModel, field: string): Promise<boolean> {
    for (const name of model.variants.keys()) if (variantColumn(name) === field) return true;
    // Only a lower-case SQL name can be a column: anything else never reaches SQL.
    if (field === 'id' || !/^[a-z][a-z0-9_]{0,62}$/.test(field)) return false;
    const table = tableName(model.aggregatorTable, 'aggregator_table');
    if (this.knownColumns.get(table)?.has(field)) return true;
    const missing = `c\u0000${table}\u0000${field}`;
    if (this.knownUnknown(missing)) return false;
    const columns = await this.store.entityTables.columns(table, [field]);
    if (!columns.has(field)) {
      this.rememberUnknown(missing);
      return false;
    }
    let known = this.knownColumns.get(table);
    if (!known) {
      known = new Set();
      this.knownColumns.set(table, known);
    }
    known.add(field);
    return true;
  }

  /** A notification: forget the misses at once (what was unknown may exist now) and reload. */
  private changed(): void {
    this.unknown.clear();
    if (this.stopped) return;
    if (this.refreshing) {
      this.dirty = true;
      return;
    }
    this.reloadNow();
  }

  /** A reload off the request path; a failure is reported and retried with backoff. */
  private reloadNow(): void {
    this.refresh().then(
      () => {
        this.failures = 0;
        if (this.dirty) {
          this.dirty = false;
          this.reloadNow();
          return;
        }
        this.schedule(this.pollMs);
      },
      (err: unknown) => {
        this.options.onRefreshError?.(err);
        this.failures++;
        this.dirty = false;
        const cap = Math.max(1000, Math.min(MAX_RETRY_MS, this.pollMs || MAX_RETRY_MS));
        this.schedule(backoffDelay({ initialMs: 1000, maxMs: cap }, this.failures));
      },
    );
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || ms <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) this.reloadNow();
    }, ms);
    this.timer.unref();
  }

  private async loadBounded(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new LatticeError(
              'DEADLINE_EXCEEDED',
              `vss serving: configuration reload did not finish within ${this.timeoutMs} ms`,
            ),
          ),
        this.timeoutMs,
      );
    });
    const loading = this.load();
    loading.catch(() => {}); // a reload abandoned by the timeout fails on its own, unobserved
    try {
      this.models = await Promise.race([loading, timedOut]);
      this.unknown.clear();
      this.stats.refreshes++;
    } catch (err) {
      this.stats.failures++;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async load(): Promise<Map<string, ServingModel>> {
    const [models, stores, variants] = await Promise.all([
      this.store.models.list(),
      this.store.stores.list(),
      this.store.variants.listAll(),
    ]);
    const byStore = new Map(stores.map((s) => [s.storeId, s]));
    const byModel = new Map<string, Variant[]>();
    for (const variant of variants) {
      const key = modelKey(variant.entity, variant.modelName);
      let list = byModel.get(key);
      if (!list) {
        list = [];
        byModel.set(key, list);
      }
      list.push(variant);
    }
    const next = new Map<string, ServingModel>();
    for (const model of models) {
      const store = byStore.get(model.storeId);
      if (!store) continue;
      const key = modelKey(model.entity, model.modelName);
      next.set(key, {
        entity: model.entity,
        modelName: model.modelName,
        config: model.modelConfig,
        embeddingStoreEnabled: model.embeddingStoreEnabled,
        embeddingTtlSeconds: embeddingTtlSeconds(model),
        embeddingsTable: store.embeddingsTable,
        aggregatorTable: store.aggregatorTable,
        variants: new Map((byModel.get(key) ?? []).map((v) => [v.variant, v])),
      });
    }
    return next;
  }

  /** Whether `key` was looked up and not found less than `negativeTtlMs` ago. */
  private knownUnknown(key: string): boolean {
    const until = this.unknown.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.unknown.delete(key);
    return false;
  }

  private rememberUnknown(key: string): void {
    if (this.negativeTtlMs <= 0) return;
    // Bounded: a storm of distinct names must not grow the map without end.
    if (this.unknown.size >= 10_000) this.unknown.delete(this.unknown.keys().next().value!);
    this.unknown.set(key, Date.now() + this.negativeTtlMs);
  }

  private async loadModel(key: ModelKey): Promise<ServingModel | undefined> {
    const model = await this.store.models.find(key);
    if (!model) return undefined;
    const [store, variants] = await Promise.all([
      this.store.stores.find(model.storeId),
      this.store.variants.list(model),
    ]);
    if (!store) return undefined;
    return {
      entity: model.entity,
      modelName: model.modelName,
      config: model.modelConfig,
      embeddingStoreEnabled: model.embeddingStoreEnabled,
      embeddingTtlSeconds: embeddingTtlSeconds(model),
      embeddingsTable: store.embeddingsTable,
      aggregatorTable: store.aggregatorTable,
      variants: new Map(variants.map((v) => [v.variant, v])),
    };
  }
}
