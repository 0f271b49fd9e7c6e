/**
 * Serving metrics per model and variant (labels `entity`, `model`, `variant`; GetEmbeddings and
 * ScoreCandidates use variant ""): latency, errors by code, cache hits and misses by level (hit
 * percentage = hits / (hits + misses)), vector DB latency, and the running means
 * `vss_avg_similar_candidates` and `vss_avg_recall`. Only configured names become labels: requests
 * for unknown models are counted under empty labels, so callers cannot grow the series.
 */
import type { Metrics } from '../../platform/metrics/index.js';

export interface ServingLabels {
  entity: string;
  model: string;
  variant: string;
}

export const UNKNOWN_LABELS: ServingLabels = { entity: '', model: '', variant: '' };

interface Mean {
  sum: number;
  count: number;
}

export class ServingMetrics {
  private readonly latency;
  private readonly errors;
  private readonly cache;
  private readonly vectorDb;
  private readonly similarGauge;
  private readonly recallGauge;
  private readonly similar = new Map<string, Mean>();
  private readonly recall = new Map<string, Mean>();
  private readonly cacheCounts = new Map<string, { hits: number; misses: number }>();

  constructor(metrics: Metrics) {
    const names = ['entity', 'model', 'variant'];
    this.latency = metrics.timing('vss_serving_request_seconds', 'vss serving latency per query batch', [
      ...names,
      'method',
    ]);
    this.errors = metrics.counter('vss_serving_errors_total', 'vss serving failed calls, by status', [
      ...names,
      'code',
    ]);
    this.cache = metrics.counter('vss_serving_cache_total', 'vss result cache look-ups', [
      ...names,
      'level',
      'outcome',
    ]);
    this.vectorDb = metrics.timing('vss_serving_vectordb_seconds', 'vss vector DB search latency', names);
    this.similarGauge = metrics.gauge(
      'vss_avg_similar_candidates',
      'Mean candidates returned per query',
      names,
    );
    this.recallGauge = metrics.gauge(
      'vss_avg_recall',
      'Mean recall of sampled queries against an exact brute-force ranking',
      names,
    );
  }

  requestMs(labels: ServingLabels, method: string, ms: number): void {
    this.latency.observeMs({ ...labels, method }, ms);
  }

  error(labels: ServingLabels, code: string): void {
    this.errors.inc({ ...labels, code });
  }

  cacheLookup(labels: ServingLabels, outcome: 'hit' | 'miss', level: string): void {
    this.cache.inc({ ...labels, level, outcome });
    const key = labelKey(labels);
    const counts = this.cacheCounts.get(key) ?? { hits: 0, misses: 0 };
    if (outcome === 'hit') counts.hits++;
    else counts.misses++;
    this.cacheCounts.set(key, counts);
  }

  vectorDbMs(labels: ServingLabels, ms: number): void {
    this.vectorDb.observeMs({ ...labels }, ms);
  }

  similarCandidates(labels: ServingLabels, count: number): void {
    this.similarGauge.set({ ...labels }, addToMean(this.similar, labels, count));
  }

  recallSample(labels: ServingLabels, value: number): void {
    this.recallGauge.set({ ...labels }, addToMean(this.recall, labels, value));
  }

  /** The running figures of one model variant (for status pages and tests). */
  snapshot(labels: ServingLabels): {
    avgSimilarCandidates: number | undefined;
    avgRecall: number | undefined;
    recallSamples: number;
    cacheHitRatio: number | undefined;
  } {
    const key = labelKey(labels);
    const similar = this.similar.get(key);
    const recall = this.recall.get(key);
    const cache = this.cacheCounts.get(key);
    return {
      avgSimilarCandidates: similar ? similar.sum / similar.count : undefined,
      avgRecall: recall ? recall.sum / recall.count : undefined,
      recallSamples: recall?.count ?? 0,
      cacheHitRatio: cache ? cache.hits / (cache.hits + cache.misses) : undefined,
    };
  }
}

function labelKey(labels: ServingLabels): string {
  return `${labels.entity}\u0000${labels.model}\u0000${labels.variant}`;
}

function addToMean(means: Map<string, Mean>, labels: ServingLabels, value: number): number {
  const key = labelKey(labels);
  const mean = means.get(key) ?? { sum: 0, count: 0 };
  mean.sum += value;
  mean.count += 1;
  means.set(key, mean);
  return mean.sum / mean.count;
}
