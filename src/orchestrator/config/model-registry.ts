import type { ConfigEvent, ConfigStore, ConfigWatch } from '../../platform/config-store/index.js';
import { describeError, LatticeError, notFound } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { Metrics } from '../../platform/metrics/index.js';
import { quote } from '../../platform/quote.js';
import { type DagComponent, TopologyCache } from '../dag/index.js';
import { MatrixLayout } from '../matrix/component-matrix.js';
import {
  type ComponentPlan,
  type ConfigProblem,
  ModelConfigError,
  type ValidatedModel,
  validateModelConfig,
} from './validate-model.js';
import { splitArmProblems } from './validate-split.js';

/**
 * One immutable version of a model configuration with everything derived from it: the validated
 * config, the DAG topology, the matrix layout of the columns its components write, and its
 * components, built by name. A request takes the snapshot once and finishes on it, whatever
 * reloads happen meanwhile.
 */
export interface ModelSnapshot<C> {
  readonly id: string;
  /** The config store revision the snapshot was built from. */
  readonly version: string;
  /** The document as stored (before defaults), which the console shows as what serves. */
  readonly document: unknown;
  readonly model: ValidatedModel;
  /** Target-matrix columns the components write, plus the target id column (requests add their inputs). */
  readonly layout: MatrixLayout;
  /** SlateData columns slate components write. */
  readonly slateLayout: MatrixLayout;
  readonly components: ReadonlyMap<string, DagComponent<C>>;
  readonly loadedAt: number;
}

/** Builds the runnable component for a validated component plan (feature, model serving, compute). */
export type ComponentBuilder<C> = (plan: ComponentPlan, model: ValidatedModel) => DagComponent<C>;

export interface ModelStatus {
  id: string;
  /** Version serving now; undefined when no valid version was ever loaded. */
  version: string | undefined;
  /** When the serving version was loaded (epoch ms). */
  loadedAt: number | undefined;
  /** Why the latest change was rejected, while the previous version keeps serving. */
  lastError: string | undefined;
  /** The rejected version and when it was rejected (epoch ms), with `lastError`. */
  rejected: { version: string; at: number } | undefined;
  /** Each problem of the rejected version at its JSON path (`''` for the whole document). */
  problems: readonly ConfigProblem[] | undefined;
}

/** The latest rejected change of a model: why, which version, when, and each problem at its path. */
interface Rejection {
  reason: string;
  version: string;
  at: number;
  problems: readonly ConfigProblem[];
}

/** What became of one change the registry saw: which version, and whether it serves now. */
export interface SettledChange {
  id: string;
  version: string;
  outcome: 'applied' | 'rejected' | 'removed';
}

/** The problems of a rejected document at their JSON paths: the validator's, or one for the error's field. */
export function problemsOf(err: unknown): ConfigProblem[] {
  if (err instanceof ModelConfigError) return [...err.problems];
  if (err instanceof LatticeError) return [{ path: err.field ?? '', message: err.message }];
  return [{ path: '', message: describeError(err) }];
}

export interface ModelRegistryOptions<C> {
  store: ConfigStore;
  buildComponent: ComponentBuilder<C>;
  logger: Logger;
  metrics: Metrics;
  /** Config store prefix holding one document per model; default `models/`. */
  prefix?: string;
  topologies?: TopologyCache;
}

/**
 * The live map model_config_id → snapshot, loaded from the ConfigStore and kept current by its watch.
 * The reload sequence of the spec, per changed document: validate, derive the matrix layout (the
 * feature schemas), build the components by name, then swap the model's entry in one step. An invalid
 * change is logged and counted and leaves the previous snapshot serving; a deleted document removes
 * the model.
 */
export class ModelRegistry<C> {
  private snapshots = new Map<string, ModelSnapshot<C>>();
  private readonly errors = new Map<string, Rejection>();
  private readonly prefix: string;
  private readonly topologies: TopologyCache;
  private watch: ConfigWatch | undefined;
  private readonly listeners = new Set<(id: string, snapshot: ModelSnapshot<C> | undefined) => void>();
  private readonly settledListeners = new Set<(change: SettledChange) => void>();
  private readonly reloads;
  /** Set once the initial load is done: from then on a split's arms are checked against what serves. */
  private started = false;
  /** While the initial load runs: the documents with a split, applied once it is done. */
  private deferredSplits: Map<string, ConfigEvent> | undefined;

  constructor(private readonly options: ModelRegistryOptions<C>) {
    this.prefix = options.prefix ?? 'models/';
    this.topologies = options.topologies ?? new TopologyCache();
    this.reloads = options.metrics.counter(
      'orchestrator_model_config_reloads_total',
      'Model configuration changes, by model and outcome (applied, rejected, removed)',
      ['model', 'outcome'],
    );
  }

  /** Loads every model under the prefix and starts following changes; resolves once all are loaded. */
  async start(): Promise<void> {
    if (this.watch) return;
    // The initial documents come in key order; a split is applied after them all, so its arms are
    // checked against every config that serves, whatever their names.
    const splits = new Map<string, ConfigEvent>();
    this.deferredSplits = splits;
    try {
      this.watch = await this.options.store.watch(this.prefix, (event) => this.apply(event), {
        initial: true,
        onError: (err) => this.options.logger.warn({ err }, 'model config watch: %s', err.message),
      });
    } finally {
      this.deferredSplits = undefined;
    }
    this.started = true;
    for (const event of splits.values()) this.apply(event);
  }

  async stop(): Promise<void> {
    await this.watch?.close();
    this.watch = undefined;
  }

  /** The snapshot serving `id` now, or undefined. */
  get(id: string): ModelSnapshot<C> | undefined {
    return this.snapshots.get(id);
  }

  /** The snapshot serving `id`; NOT_FOUND when there is none. */
  require(id: string): ModelSnapshot<C> {
    const snapshot = this.snapshots.get(id);
    if (!snapshot) throw notFound(`unknown model_config_id ${quote(id)}`, 'model_config_id');
    return snapshot;
  }

  /** The serving configs whose sticky A/B split has `id` as an arm (other than `id` itself). */
  splitsUsing(id: string): string[] {
    const owners: string[] = [];
    for (const [owner, snapshot] of this.snapshots) {
      if (owner !== id && snapshot.model.config.split?.arms.some((arm) => arm.model_config_id === id))
        owners.push(owner);
    }
    return owners.sort();
  }

  ids(): string[] {
    return [...this.snapshots.keys()].sort();
  }

  status(): ModelStatus[] {
    const ids = new Set([...this.snapshots.keys(), ...this.errors.keys()]);
    return [...ids].sort().map((id) => {
      const snapshot = this.snapshots.get(id);
      const rejection = this.errors.get(id);
      return {
        id,
        version: snapshot?.version,
        loadedAt: snapshot?.loadedAt,
        lastError: rejection?.reason,
        rejected: rejection && { version: rejection.version, at: rejection.at },
        problems: rejection?.problems,
      };
    });
  }

  /** Called after each applied change (snapshot undefined when the model was removed). */
  onChange(listener: (id: string, snapshot: ModelSnapshot<C> | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called once per change the registry has dealt with, applied, rejected or removed (a writer
   * waits on it to answer with what serves after its write).
   */
  onSettled(listener: (change: SettledChange) => void): () => void {
    this.settledListeners.add(listener);
    return () => this.settledListeners.delete(listener);
  }

  /** Validates and builds a snapshot without installing it (also used by `lattice` tooling to lint configs). */
  build(id: string, version: string, document: unknown): ModelSnapshot<C> {
    const model = validateModelConfig(document, { expectedId: id, topologies: this.topologies });
    // Only a started registry knows what serves (`lattice models apply` checks a document alone).
    if (this.started) this.checkSplit(id, model);
    const components = new Map<string, DagComponent<C>>();
    for (const plan of model.components.values()) {
      try {
        components.set(plan.name, this.options.buildComponent(plan, model));
      } catch (err) {
        throw new LatticeError(
          'INVALID_ARGUMENT',
          `invalid model config ${id}: ${plan.path}: ${describeError(err)}`,
          {
            field: plan.path,
            cause: err,
          },
        );
      }
    }
    return {
      id,
      version,
      document,
      model,
      layout: new MatrixLayout(model.targetColumns, [model.config.target_id_column]),
      slateLayout: new MatrixLayout(model.slateColumns),
      components,
      loadedAt: Date.now(),
    };
  }

  /** The model's split against the configs serving now (validate-split.ts); ModelConfigError when it does not fit. */
  private checkSplit(id: string, model: ValidatedModel): void {
    const serving = new Map<string, { split?: ValidatedModel['config']['split'] }>();
    for (const [other, snapshot] of this.snapshots) serving.set(other, snapshot.model.config);
    const problems = splitArmProblems(id, model.config, serving);
    if (problems.length > 0) throw new ModelConfigError(id, problems);
  }

  private apply(event: ConfigEvent): void {
    const id = event.key.slice(this.prefix.length);
    if (id === '' || id.includes('/')) return; // not a model document
    if (this.deferredSplits !== undefined) {
      if (event.type === 'put' && hasSplit(event.value)) {
        this.deferredSplits.set(id, event);
        return;
      }
      this.deferredSplits.delete(id);
    }
    const version = String(event.revision);
    if (event.type === 'delete') {
      const removed = this.snapshots.delete(id);
      this.errors.delete(id);
      if (removed) {
        this.reloads.inc({ model: id, outcome: 'removed' });
        this.options.logger.info({ model: id, version }, 'model config removed');
        this.notify(id, undefined);
      }
      this.settled({ id, version, outcome: 'removed' });
      return;
    }
    if (event.type === 'invalid') {
      this.reject(id, version, event.reason, [{ path: '', message: event.reason }]);
      return;
    }
    let snapshot: ModelSnapshot<C>;
    try {
      snapshot = this.build(id, version, event.value);
    } catch (err) {
      this.reject(id, version, describeError(err), problemsOf(err));
      return;
    }
    this.snapshots.set(id, snapshot);
    this.errors.delete(id);
    this.reloads.inc({ model: id, outcome: 'applied' });
    this.options.logger.info({ model: id, version }, 'model config applied');
    this.notify(id, snapshot);
    this.settled({ id, version, outcome: 'applied' });
  }

  private reject(id: string, version: string, reason: string, problems: readonly ConfigProblem[]): void {
    this.errors.set(id, { reason, version, at: Date.now(), problems });
    this.reloads.inc({ model: id, outcome: 'rejected' });
    const serving = this.snapshots.get(id)?.version;
    this.options.logger.error(
      { model: id, version, serving },
      `model config rejected${serving ? ` (version ${serving} keeps serving)` : ''}: ${reason}`,
    );
    this.settled({ id, version, outcome: 'rejected' });
  }

  private settled(change: SettledChange): void {
    for (const listener of this.settledListeners) {
      try {
        listener(change);
      } catch (err) {
        this.options.logger.error({ err, model: change.id }, 'model registry listener failed');
      }
    }
  }

  private notify(id: string, snapshot: ModelSnapshot<C> | undefined): void {
    for (const listener of this.listeners) {
      try {
        listener(id, snapshot);
      } catch (err) {
        this.options.logger.error({ err, model: id }, 'model registry listener failed');
      }
    }
  }
}

/** Whether a document declares a split (looked at before it is validated, to order the initial load). */
function hasSplit(document: unknown): boolean {
  return typeof document === 'object' && document !== null && 'split' in document;
}
