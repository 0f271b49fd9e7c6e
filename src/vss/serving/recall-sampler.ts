/**
 * `avg_recall` measured on live traffic: a sampled share of first-page queries is re-run off the
 * request path with a search deep enough to be exhaustive (limit = every point of the collection,
 * up to the port's 10,000; the embedded planner then scans exactly, since no more candidates exist
 * than are asked for), and the served page is compared with the head of that exact ranking.
 * Collections above 10,000 points get a 10,000-deep search, which is close to, not exactly, brute
 * force. Samples queue up to `maxPending`; beyond that they are dropped, never the request.
 *
 * Each measurement is also handed to `record` (serving stores it in SQL, where the admin's automatic
 * rollback reads it: store/live-recall-repository.ts), and the last `keepMeasured` of each variant
 * are kept with their version and time (this process's LiveRecallSource, model/live-recall.ts).
 */
import { invalidArgument } from '../../platform/errors.js';
import type { Filter, VectorDb } from '../../platform/vectordb/index.js';
import type { LiveRecallFigures, LiveRecallSource } from '../model/index.js';
import type { ServingLabels, ServingMetrics } from './serving-metrics.js';

export interface RecallSample {
  labels: ServingLabels;
  collection: string;
  /** The version `collection` holds. */
  version: number;
  vector: Float32Array;
  filters: readonly Filter[];
  excludeIds: readonly string[];
  /** The ids served on the first page, best first. */
  served: readonly string[];
  /** The vector DB that served the page (the variant's cluster's); default the sampler's. */
  vectorDb?: VectorDb;
}

export interface RecallSamplerOptions {
  /** Share of first-page queries re-run exactly, 0..1; default 0.01. */
  sampleRate?: number;
  maxPending?: number;
  /** Measurements kept per variant for `liveRecall`; default 512. */
  keepMeasured?: number;
  /** Told each measurement (off the request path; a failure goes to `onError`). */
  record?: (labels: ServingLabels, version: number, recall: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
  onError?: (err: unknown) => void;
}

const MAX_LIMIT = 10_000;

interface Measured {
  version: number;
  value: number;
  atMs: number;
}

export class RecallSampler implements LiveRecallSource {
  private readonly sampleRate: number;
  private readonly maxPending: number;
  private readonly random: () => number;
  private readonly pending: RecallSample[] = [];
  private running: Promise<void> | undefined;
  private readonly measured = new Map<string, Measured[]>();

  constructor(
    private readonly vectorDb: VectorDb,
    private readonly metrics: ServingMetrics,
    private readonly options: RecallSamplerOptions = {},
  ) {
    const rate = options.sampleRate ?? 0.01;
    // NaN compared false with every draw, so an unparseable rate re-ran every query by brute force.
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw invalidArgument(
        `recallSampleRate must be a number from 0 to 1, got ${String(rate).slice(0, 64)}`,
        'recallSampleRate',
      );
    }
    this.sampleRate = rate;
    this.maxPending = options.maxPending ?? 32;
    this.random = options.random ?? Math.random;
  }

  /** Offers a served page; sampled ones are measured later. Never throws, never waits. */
  offer(sample: RecallSample): void {
    if (sample.served.length === 0 || this.sampleRate <= 0) return;
    if (this.random() >= this.sampleRate || this.pending.length >= this.maxPending) return;
    this.pending.push(sample);
    this.running ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
  }

  /** Resolves once every queued sample is measured (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    try {
      for (let sample = this.pending.shift(); sample; sample = this.pending.shift()) {
        try {
          const value = await this.measure(sample);
          this.metrics.recallSample(sample.labels, value);
          this.keep(sample, value);
          await this.options.record?.(sample.labels, sample.version, value);
        } catch (err) {
          this.options.onError?.(err);
        }
      }
    } finally {
      this.running = undefined;
    }
  }

  /** The mean of the variant's samples on `version` measured in the last `windowMs`. */
  async liveRecall(
    variant: { entity: string; modelName: string; variant: string },
    version: number,
    windowMs: number,
  ): Promise<LiveRecallFigures> {
    const sinceMs = (this.options.now ?? Date.now)() - windowMs;
    const kept = this.measured.get(keyOf(variant.entity, variant.modelName, variant.variant)) ?? [];
    let samples = 0;
    let sum = 0;
    for (const m of kept) {
      if (m.version !== version || m.atMs < sinceMs) continue;
      samples++;
      sum += m.value;
    }
    return { samples, mean: samples === 0 ? Number.NaN : sum / samples };
  }

  private keep(sample: RecallSample, value: number): void {
    const key = keyOf(sample.labels.entity, sample.labels.model, sample.labels.variant);
    let kept = this.measured.get(key);
    if (kept === undefined) {
      kept = [];
      this.measured.set(key, kept);
    }
    kept.push({ version: sample.version, value, atMs: (this.options.now ?? Date.now)() });
    if (kept.length > (this.options.keepMeasured ?? 512)) kept.shift();
  }

  private async measure(sample: RecallSample): Promise<number> {
    const db = sample.vectorDb ?? this.vectorDb;
    const info = await db.collectionInfo(sample.collection);
    const limit = Math.max(1, Math.min(MAX_LIMIT, info.points));
    const [hits = []] = await db.search({
      collection: sample.collection,
      queries: [{ vector: sample.vector, excludeIds: sample.excludeIds }],
      filters: sample.filters,
      limit,
      indexedOnly: true,
    });
    const truth = new Set(hits.slice(0, sample.served.length).map((h) => h.id));
    if (truth.size === 0) return 1;
    let found = 0;
    for (const id of sample.served) if (truth.has(id)) found++;
    return found / truth.size;
  }
}

const keyOf = (entity: string, model: string, variant: string) => `${entity}\u0000${model}\u0000${variant}`;
