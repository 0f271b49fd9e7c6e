import StatsDClient, { type StatsD } from 'hot-shots';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type Labels = Record<string, string>;

export interface StatsdOptions {
  host: string;
  port: number;
  /** Prepended to every StatsD name, e.g. `lattice.`. */
  prefix: string;
  /** DogStatsD tags, Telegraf tags, or none for a plain StatsD daemon. */
  tags: 'datadog' | 'telegraf' | 'none';
  /** Bytes buffered before a packet is sent; 0 sends each metric at once. */
  maxBufferSize?: number;
}

export interface MetricsOptions {
  statsd?: StatsdOptions;
  /** Also collect Node's process metrics (CPU, memory, event loop lag) for /metrics. */
  processMetrics?: boolean;
}

export interface CounterMetric {
  inc(labels?: Labels, value?: number): void;
  /** The series of one label set, its labels checked and hashed once: for hot paths. */
  bind(labels: Labels): BoundCounter;
}
export interface BoundCounter {
  inc(value?: number): void;
}
export interface GaugeMetric {
  set(labels: Labels, value: number): void;
}
/** Observations are in seconds on Prometheus (`*_seconds`) and in milliseconds on StatsD timings. */
export interface TimingMetric {
  observeMs(labels: Labels, ms: number): void;
  /** The series of one label set, its labels checked and hashed once: for hot paths. */
  bind(labels: Labels): BoundTiming;
}
export interface BoundTiming {
  observeMs(ms: number): void;
}

const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * One facade over two channels: a Prometheus registry scraped at /metrics and, when configured, a
 * StatsD client. Declaring a metric twice returns the first declaration, so components recreated
 * on a config reload share their series.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly statsd: StatsD | undefined;
  private readonly declared = new Map<string, CounterMetric | GaugeMetric | TimingMetric>();
  private readonly tagStyle: StatsdOptions['tags'];

  constructor(options: MetricsOptions = {}) {
    this.tagStyle = options.statsd?.tags ?? 'none';
    if (options.statsd) {
      this.statsd = new StatsDClient({
        host: options.statsd.host,
        port: options.statsd.port,
        prefix: options.statsd.prefix,
        telegraf: options.statsd.tags === 'telegraf',
        maxBufferSize: options.statsd.maxBufferSize ?? 1400,
        bufferFlushInterval: 200,
        // Metrics must never take a service down: a dead StatsD daemon only loses packets.
        errorHandler: () => {},
      });
    }
    if (options.processMetrics) {
      // prom-client's collector is imported lazily to keep it out of short-lived CLI commands.
      void import('prom-client').then(({ collectDefaultMetrics }) =>
        collectDefaultMetrics({ register: this.registry }),
      );
    }
  }

  private tags(labels: Labels | undefined): Labels | undefined {
    return this.tagStyle === 'none' ? undefined : labels;
  }

  private declare<T extends CounterMetric | GaugeMetric | TimingMetric>(name: string, make: () => T): T {
    const existing = this.declared.get(name);
    if (existing) return existing as T;
    const metric = make();
    this.declared.set(name, metric);
    return metric;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): CounterMetric {
    return this.declare(name, () => {
      const prom = new Counter({ name, help, labelNames, registers: [this.registry] });
      return {
        inc: (labels = {}, value = 1) => {
          prom.inc(labels, value);
          this.statsd?.increment(name, value, this.tags(labels));
        },
        bind: (labels) => {
          const series = prom.labels(labels);
          const tags = this.tags(labels);
          return {
            inc: (value = 1) => {
              series.inc(value);
              this.statsd?.increment(name, value, tags);
            },
          };
        },
      };
    });
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): GaugeMetric {
    return this.declare(name, () => {
      const prom = new Gauge({ name, help, labelNames, registers: [this.registry] });
      return {
        set: (labels, value) => {
          prom.set(labels, value);
          this.statsd?.gauge(name, value, this.tags(labels));
        },
      };
    });
  }

  /** A latency histogram; `name` should end in `_seconds` (the StatsD name drops that suffix). */
  timing(
    name: string,
    help: string,
    labelNames: readonly string[] = [],
    buckets = latencyBuckets,
  ): TimingMetric {
    return this.declare(name, () => {
      const prom = new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
      const statsdName = name.replace(/_seconds$/, '_ms');
      return {
        observeMs: (labels, ms) => {
          prom.observe(labels, ms / 1000);
          this.statsd?.timing(statsdName, ms, this.tags(labels));
        },
        bind: (labels) => {
          const series = prom.labels(labels);
          const tags = this.tags(labels);
          return {
            observeMs: (ms) => {
              series.observe(ms / 1000);
              this.statsd?.timing(statsdName, ms, tags);
            },
          };
        },
      };
    });
  }

  /** The Prometheus text exposition of every metric. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  async close(): Promise<void> {
    const statsd = this.statsd;
    if (statsd) await new Promise<void>((resolve) => statsd.close(() => resolve()));
  }
}
