/**
 * The serving configuration repository: entity / model / variant → the model's configuration
 * (distance, dimension), its store tables, and each variant (read version, state, vss_filter, cache
 * TTLs). Serving reads a snapshot in memory; the snapshot is reloaded from the SQL store every
 * `refreshIntervalMs` (default 1 s) and on `refresh()`, so a registration or a read-version flip is
 * seen without a restart. A key missing from the snapshot is looked up in SQL at once before it is
 * reported NOT_FOUND, so a model registered a moment ago is served immediately.
 */
import { LatticeError, notFound } from '../../platform/errors.js';
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
}

export interface ConfigRepositoryOptions {
  /** Poll interval of the SQL store, ms; 0 turns polling off (then only `refresh()` reloads). */
  refreshIntervalMs?: number;
  /** Called when a periodic reload fails (the previous snapshot stays in use). */
  onRefreshError?: (err: unknown) => void;
}

const modelKey = (entity: string, modelName: string) => `${entity}\u0000${modelName}`;

export class ServingConfigRepository {
  private models = new Map<string, ServingModel>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly store: VssStore,
    private readonly options: ConfigRepositoryOptions = {},
  ) {}

  /** Loads the first snapshot and starts polling. */
  async start(): Promise<void> {
    await this.refresh();
    const interval = this.options.refreshIntervalMs ?? 1000;
    if (interval > 0) {
      this.timer = setInterval(() => {
        this.refresh().catch((err: unknown) => this.options.onRefreshError?.(err));
      }, interval);
      this.timer.unref();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reloads every model, store and variant from SQL; concurrent calls share one reload. */
  refresh(): Promise<void> {
    this.refreshing ??= this.load().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** The model; NOT_FOUND naming `entity` or `model_name`. */
  async model(key: ModelKey): Promise<ServingModel> {
    const cached = this.models.get(modelKey(key.entity, key.modelName));
    if (cached) return cached;
    const loaded = await this.loadModel(key);
    if (loaded) {
      this.models.set(modelKey(key.entity, key.modelName), loaded);
      return loaded;
    }
    const store = await this.store.stores.findByEntity(key.entity);
    if (!store) throw notFound(`entity "${key.entity}" is not registered`, 'entity');
    throw notFound(`model ${key.entity}/${key.modelName} is not registered`, 'model_name');
  }

  /** The variant and its read version; NOT_FOUND for an unknown one, FAILED_PRECONDITION when nothing is ready. */
  async served(key: VariantKey): Promise<ServedVariant> {
    let model = await this.model(key);
    let variant = model.variants.get(key.variant);
    if (!variant) {
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
    return { model, variant, readVersion: variant.readVersion };
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
    if (field === 'id') return false;
    const table = tableName(model.aggregatorTable, 'aggregator_table');
    const columns = await this.store.entityTables.columns(table, [field]);
    return columns.has(field);
  }

  private async load(): Promise<void> {
    const [models, stores] = await Promise.all([this.store.models.list(), this.store.stores.list()]);
    const byStore = new Map(stores.map((s) => [s.storeId, s]));
    const next = new Map<string, ServingModel>();
    await Promise.all(
      models.map(async (model) => {
        const store = byStore.get(model.storeId);
        if (!store) return;
        const variants = await this.store.variants.list(model);
        next.set(modelKey(model.entity, model.modelName), {
          entity: model.entity,
          modelName: model.modelName,
          config: model.modelConfig,
          embeddingsTable: store.embeddingsTable,
          aggregatorTable: store.aggregatorTable,
          variants: new Map(variants.map((v) => [v.variant, v])),
        });
      }),
    );
    this.models = next;
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
      embeddingsTable: store.embeddingsTable,
      aggregatorTable: store.aggregatorTable,
      variants: new Map(variants.map((v) => [v.variant, v])),
    };
  }
}
