/**
 * Serving metrics per model and variant (labels `entity`, `model`, `variant`; GetEmbeddings and
 * ScoreCandidates use variant ""): latency, errors by code and by the HTTP status class the code maps
 * to (`status_class="5xx"` is the spec's "service 5xx count", which an alert reads), cache hits and
 * misses by level with the hit ratio beside them, cache, embedding-store and vector DB latency, and
 * the running means `vss_avg_similar_candidates` and `vss_avg_recall`. Only configured names become
 * labels: requests for unknown models are counted under empty labels, so callers cannot grow the
 * series.
 */
import type { ErrorCode } from '../../platform/errors.js';
import { httpStatusOf } from '../../platform/http/status.js';
import type {
  BoundCounter,
  BoundTiming,
  CounterMetric,
  GaugeMetric,
  Labels,
  Metrics,
  TimingMetric,
} from '../../platform/metrics/index.js';

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

/** Everything kept for one model variant: its bound series (label checks once) and running figures. */
interface VariantSeries {
  labels: Labels;
  latency: Map<string, BoundTiming>;
  errors: Map<string, BoundCounter>;
  cache: Map<string, BoundCounter>;
  vectorDb: BoundTiming;
  store: BoundTiming;
  cacheLatency: BoundTiming;
  similar: Mean;
  recall: Mean;
  hits: number;
  misses: number;
}

export class ServingMetrics {
  private readonly latency: TimingMetric;
  private readonly errors: CounterMetric;
  private readonly cache: CounterMetric;
  private readonly cacheErrors: CounterMetric;
  private readonly vectorDb: TimingMetric;
  private readonly store: TimingMetric;
  private readonly cacheLatency: TimingMetric;
  private readonly hitRatio: GaugeMetric;
  private readonly similarGauge: GaugeMetric;
  private readonly recallGauge: GaugeMetric;
  private readonly variants = new Map<string, VariantSeries>();

  constructor(metrics: Metrics) {
    const names = ['entity', 'model', 'variant'];
    this.latency = metrics.timing('vss_serving_request_seconds', 'vss serving latency per query batch', [
      ...names,
      'method',
    ]);
    this.errors = metrics.counter(
      'vss_serving_errors_total',
      'vss serving failed calls, by status code and the HTTP status class it maps to (5xx: server errors)',
      [...names, 'code', 'status_class'],
    );
    this.cache = metrics.counter('vss_serving_cache_total', 'vss result cache look-ups', [
      ...names,
      'level',
      'outcome',
    ]);
    this.cacheErrors = metrics.counter(
      'vss_serving_cache_errors_total',
      'vss distributed result cache failures: get, set, or invalid (an entry that is not a page)',
      ['failure'],
    );
    this.vectorDb = metrics.timing('vss_serving_vectordb_seconds', 'vss vector DB search latency', names);
    this.store = metrics.timing(
      'vss_serving_store_seconds',
      'vss embedding store (SQL) read latency while answering a call',
      names,
    );
    this.cacheLatency = metrics.timing(
      'vss_serving_cache_seconds',
      'vss result cache look-up latency',
      names,
    );
    this.hitRatio = metrics.gauge(
      'vss_serving_cache_hit_ratio',
      'Share of result cache look-ups that hit, since the process started',
      names,
    );
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
    const series = this.series(labels);
    bound(series.latency, method, () => this.latency.bind({ ...series.labels, method })).observeMs(ms);
  }

  error(labels: ServingLabels, code: string): void {
    const series = this.series(labels);
    bound(series.errors, code, () =>
      this.errors.bind({ ...series.labels, code, status_class: statusClassOf(code) }),
    ).inc();
  }

  /** One read of the embedding store (SQL) made to answer a call. */
  storeMs(labels: ServingLabels, ms: number): void {
    this.series(labels).store.observeMs(ms);
  }

  /** One result cache look-up, hit or miss, every level it asked included. */
  cacheMs(labels: ServingLabels, ms: number): void {
    this.series(labels).cacheLatency.observeMs(ms);
  }

  /** A distributed result cache failure (see result-cache.ts). */
  cacheError(failure: string): void {
    this.cacheErrors.inc({ failure });
  }

  cacheLookup(labels: ServingLabels, outcome: 'hit' | 'miss', level: string): void {
    const series = this.series(labels);
    bound(series.cache, `${level}\u0000${outcome}`, () =>
      this.cache.bind({ ...series.labels, level, outcome }),
    ).inc();
    if (outcome === 'hit') series.hits++;
    else series.misses++;
    this.hitRatio.set(series.labels, series.hits / (series.hits + series.misses));
  }

  vectorDbMs(labels: ServingLabels, ms: number): void {
    this.series(labels).vectorDb.observeMs(ms);
  }

  similarCandidates(labels: ServingLabels, count: number): void {
    const series = this.series(labels);
    this.similarGauge.set(series.labels, addToMean(series.similar, count));
  }

  recallSample(labels: ServingLabels, value: number): void {
    const series = this.series(labels);
    this.recallGauge.set(series.labels, addToMean(series.recall, value));
  }

  /** The running figures of one model variant (for status pages and tests). */
  snapshot(labels: ServingLabels): {
    avgSimilarCandidates: number | undefined;
    avgRecall: number | undefined;
    recallSamples: number;
    cacheHitRatio: number | undefined;
  } {
    const series = this.variants.get(labelKey(labels));
    const similar = series?.similar;
    const recall = series?.recall;
    const lookups = (series?.hits ?? 0) + (series?.misses ?? 0);
    return {
      avgSimilarCandidates: similar?.count ? similar.sum / similar.count : undefined,
      avgRecall: recall?.count ? recall.sum / recall.count : undefined,
      recallSamples: recall?.count ?? 0,
      cacheHitRatio: lookups > 0 ? series!.hits / lookups : undefined,
    };
  }

  private series(labels: ServingLabels): VariantSeries {
    const key = labelKey(labels);
    let series = this.variants.get(key);
    if (!series) {
      const own: Labels = { entity: labels.entity, model: labels.model, variant: labels.variant };
      series = {
        labels: own,
        latency: new Map(),
        errors: new Map(),
        cache: new Map(),
        vectorDb: this.vectorDb.bind({ ...own }),
        store: this.store.bind({ ...own }),
        cacheLatency: this.cacheLatency.bind({ ...own }),
        similar: { sum: 0, count: 0 },
        recall: { sum: 0, count: 0 },
        hits: 0,
        misses: 0,
      };
      this.variants.set(key, series);
    }
    return series;
  }
}

function bound<T>(series: Map<string, T>, key: string, make: () => T): T {
  let found = series.get(key);
  if (found === undefined) {
    found = make();
    series.set(key, found);
  }
  return found;
}

/**
 * The HTTP status class (`4xx`, `5xx`) of a failure code, by the one HTTP mapping, so gRPC failures
 * count toward the same "5xx" threshold as the HTTP APIs; a code it does not know is a server error.
 */
function statusClassOf(code: string): string {
  const status = httpStatusOf[code as ErrorCode] ?? 500;
  return `${Math.floor(status / 100)}xx`;
}

function labelKey(labels: ServingLabels): string {
  return `${labels.entity}\u0000${labels.model}\u0000${labels.variant}`;
}

function addToMean(mean: Mean, value: number): number {
  mean.sum += value;
  mean.count += 1;
  return mean.sum / mean.count;
}
