/**
 * Whether each READY variant's served collection is indexed at least to the variant's threshold (95 %
 * of its points, vss.md). Below it a variant is *degraded*: its unindexed points are searched exactly
 * (slow) or not at all, depending on the vector DB — after a restart that reloaded an older graph, or
 * when the vector DB lost its index. That is never silent:
 *
 * - metric `vss_serving_index_degraded{entity,model,variant}`: 1 while degraded, else 0 (the shipped
 *   alert `VssServedIndexDegraded` reads it);
 * - a warning in the log when a variant becomes degraded, and a line when it recovers;
 * - {@link ServedIndexHealth.check}, a readiness check of the serving process: it fails naming the
 *   variants whose served version this process has not yet seen indexed to the threshold. Only
 *   until then: a restarted replica waits for its graph, but a delta that adds more than 5 % of the
 *   points (indexed in the background; the embedded vector DB searches the unindexed ones exactly
 *   meanwhile) must not take a serving process out of its load balancer. Registered only where the
 *   vector DB lives in the process (embedded): with a shared vector DB server, failing every
 *   replica's readiness at once would stop serving altogether.
 */
import { isLatticeError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logging/index.js';
import type { GaugeMetric, Metrics } from '../../platform/metrics/index.js';
import { type ClusterVectorDbs, collectionName } from '../model/index.js';
import type { VssStore } from '../store/index.js';

export const SERVED_INDEX_DEGRADED = 'vss_serving_index_degraded';

/** Indexed share of the points below which a READY variant is degraded (vss.md). */
export const DEFAULT_INDEXED_THRESHOLD = 0.95;

export interface ServedIndexHealthOptions {
  store: VssStore;
  vectorDbs: ClusterVectorDbs;
  metrics: Metrics;
  logger: Logger;
  /** Default {@link DEFAULT_INDEXED_THRESHOLD}. */
  threshold?: number;
  /** How often the ratios are read, ms; default 5,000; 0: only on {@link ServedIndexHealth.refresh}. */
  intervalMs?: number;
}

export interface DegradedVariant {
  entity: string;
  modelName: string;
  variant: string;
  version: number;
  indexedPoints: number;
  points: number;
}

export class ServedIndexHealth {
  readonly #o: ServedIndexHealthOptions;
  readonly #threshold: number;
  readonly #gauge: GaugeMetric;
  #timer: NodeJS.Timeout | undefined;
  /** Degraded variants of the last refresh, by `entity/model/variant`. */
  #degraded = new Map<string, DegradedVariant>();
  /** `entity/model/variant@version` seen indexed to the threshold by this process: ready for good. */
  readonly #caughtUp = new Set<string>();
  #refreshing: Promise<DegradedVariant[]> | undefined;

  constructor(options: ServedIndexHealthOptions) {
    this.#o = options;
    this.#threshold = options.threshold ?? DEFAULT_INDEXED_THRESHOLD;
    this.#gauge = options.metrics.gauge(
      SERVED_INDEX_DEGRADED,
      `1 while the collection a READY vss variant serves has fewer than ${this.#threshold * 100} % of its points indexed, else 0`,
      ['entity', 'model', 'variant'],
    );
  }

  /** Reads the ratios now and then every `intervalMs`. A failed read is logged and retried. */
  async start(): Promise<void> {
    await this.refresh().catch((err: unknown) => this.#logFailure(err));
    const intervalMs = this.#o.intervalMs ?? 5_000;
    if (intervalMs > 0) {
      this.#timer = setInterval(() => {
        this.refresh().catch((err: unknown) => this.#logFailure(err));
      }, intervalMs);
      this.#timer.unref();
    }
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The variants degraded at the last refresh. */
  get degraded(): DegradedVariant[] {
    return [...this.#degraded.values()];
  }

  /**
   * Readiness: fails while a READY variant serves a version this process has not yet seen indexed to
   * the threshold (after a restart, until its graph is back); a later fall below it (a large delta)
   * is reported by the metric, the log and the admin API, not by readiness.
   */
  check = async (): Promise<void> => {
    const waiting = (await this.refresh()).filter((d) => !this.#caughtUp.has(versionKey(d)));
    if (waiting.length === 0) return;
    throw new Error(
      `${waiting.map((d) => this.#describe(d)).join('; ')}: not ready until the index is rebuilt (the vector DB indexes in the background)`,
    );
  };

  /** Reads every READY variant's served collection once (concurrent callers share one read). */
  refresh(): Promise<DegradedVariant[]> {
    this.#refreshing ??= this.#read().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #read(): Promise<DegradedVariant[]> {
    const next = new Map<string, DegradedVariant>();
    const healthy: { entity: string; model: string; variant: string }[] = [];
    for (const variant of await this.#o.store.variants.listAll()) {
      if (variant.state !== 'READY' || variant.readVersion === null) continue;
      if (!this.#o.vectorDbs.has(variant.cluster)) continue;
      const labels = { entity: variant.entity, model: variant.modelName, variant: variant.variant };
      let info: { points: number; indexedPoints: number };
      try {
        info = await this.#o.vectorDbs
          .of(variant.cluster, variant.variant)
          .collectionInfo(collectionName(variant.entity, variant.modelName, variant.readVersion));
      } catch (err) {
        if (isLatticeError(err, 'NOT_FOUND')) continue; // a version dropped meanwhile
        throw err;
      }
      if (info.points === 0 || info.indexedPoints / info.points >= this.#threshold) {
        healthy.push(labels);
        this.#caughtUp.add(
          versionKey({
            entity: variant.entity,
            modelName: variant.modelName,
            variant: variant.variant,
            version: variant.readVersion,
          }),
        );
        continue;
      }
      const key = `${variant.entity}/${variant.modelName}/${variant.variant}`;
      next.set(key, {
        entity: variant.entity,
        modelName: variant.modelName,
        variant: variant.variant,
        version: variant.readVersion,
        indexedPoints: info.indexedPoints,
        points: info.points,
      });
    }
    for (const labels of healthy) this.#gauge.set(labels, 0);
    for (const [key, d] of next) {
      this.#gauge.set({ entity: d.entity, model: d.modelName, variant: d.variant }, 1);
      if (!this.#degraded.has(key))
        this.#o.logger.warn({ ...d }, `vss serving: ${this.#describe(d)}: degraded`);
    }
    for (const [key, d] of this.#degraded) {
      if (next.has(key)) continue;
      // Indexed again, or no longer READY (its series must not stay at 1).
      this.#gauge.set({ entity: d.entity, model: d.modelName, variant: d.variant }, 0);
      this.#o.logger.info(
        { entity: d.entity, modelName: d.modelName, variant: d.variant },
        `vss serving: variant ${d.variant} of ${d.entity}/${d.modelName} is indexed again`,
      );
    }
    this.#degraded = next;
    return [...next.values()];
  }

  #describe(d: DegradedVariant): string {
    const share = ((100 * d.indexedPoints) / d.points).toFixed(1);
    return `variant ${d.variant} of ${d.entity}/${d.modelName} serves version ${d.version} with ${d.indexedPoints} of ${d.points} points indexed (${share} %, below ${this.#threshold * 100} %)`;
  }

  #logFailure(err: unknown): void {
    this.#o.logger.warn({ err }, 'vss serving: reading the indexed share of the served collections failed');
  }
}

function versionKey(d: Pick<DegradedVariant, 'entity' | 'modelName' | 'variant' | 'version'>): string {
  return `${d.entity}/${d.modelName}/${d.variant}@${d.version}`;
}
