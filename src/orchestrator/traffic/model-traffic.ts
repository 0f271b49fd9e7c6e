/**
 * The live traffic of each model config and of each of its components, over the last minute: what
 * the console shows beside a config's DAG. The engine records every request it executed (its
 * outcome and time from the snapshot taken to the answer ready); each component records its own
 * runs (timed-components.ts). Series are per model id and component name, so a reload keeps them.
 */
import { SlidingWindow } from './sliding-window.js';

export type TrafficComponentKind = 'feature' | 'model' | 'compute';

/** One series' numbers over the window. */
export interface TrafficStats {
  requests_per_s: number;
  errors_per_s: number;
  /** errors / requests; 0 without requests. */
  error_rate: number;
  p50_ms?: number;
  p99_ms?: number;
}

export interface ComponentTrafficStats extends TrafficStats {
  name: string;
  kind: TrafficComponentKind;
}

/** One arm of a model's sticky A/B split: the requests of the model that this config served. */
export interface ArmTrafficStats extends TrafficStats {
  model_config_id: string;
}

export interface ModelTrafficStats extends TrafficStats {
  model_config_id: string;
  components: ComponentTrafficStats[];
  /** With a split: each arm's share of the model's requests (the model itself among them when it is an arm). */
  arms?: ArmTrafficStats[];
}

/** Records into one series; bound once where the hot path runs. */
export interface TrafficSeries {
  record(ms: number, failed: boolean): void;
}

interface ModelSeries {
  requests: SlidingWindow;
  components: Map<string, { kind: TrafficComponentKind; window: SlidingWindow }>;
  /** Requests of the model served by each arm of its split, by the arm's config id. */
  arms: Map<string, SlidingWindow>;
}

export class ModelTraffic {
  private readonly models = new Map<string, ModelSeries>();
  private readonly startedAt: number;

  constructor(private readonly now: () => number = Date.now) {
    this.startedAt = now();
  }

  private model(id: string): ModelSeries {
    let series = this.models.get(id);
    if (series === undefined) {
      series = { requests: new SlidingWindow(this.now), components: new Map(), arms: new Map() };
      this.models.set(id, series);
    }
    return series;
  }

  /** The series of a model's requests. */
  requests(modelId: string): TrafficSeries {
    return this.model(modelId).requests;
  }

  /** The series of a model's requests that the arm `armId` of its split served. */
  arm(modelId: string, armId: string): TrafficSeries {
    const arms = this.model(modelId).arms;
    let window = arms.get(armId);
    if (window === undefined) {
      window = new SlidingWindow(this.now);
      arms.set(armId, window);
    }
    return window;
  }

  /**
   * The series of one component of a model, created on its first run (components are also built
   * to validate documents that never serve).
   */
  component(modelId: string, name: string, kind: TrafficComponentKind): TrafficSeries {
    let window: SlidingWindow | undefined;
    return {
      record: (ms, failed) => {
        window ??= this.componentWindow(modelId, name, kind);
        window.record(ms, failed);
      },
    };
  }

  private componentWindow(modelId: string, name: string, kind: TrafficComponentKind): SlidingWindow {
    const components = this.model(modelId).components;
    let entry = components.get(name);
    if (entry === undefined || entry.kind !== kind) {
      entry = { kind, window: new SlidingWindow(this.now) };
      components.set(name, entry);
    }
    return entry.window;
  }

  /** Forgets a removed model's series. */
  forget(modelId: string): void {
    this.models.delete(modelId);
  }

  /** Seconds the numbers cover: a minute, or the time since the process started when shorter. */
  windowSeconds(): number {
    const since = (this.now() - this.startedAt) / 1000;
    return Math.max(1, Math.min(SlidingWindow.SECONDS, Math.ceil(since)));
  }

  /**
   * Each model of `models` (every one with traffic when absent), with its components named in
   * `components` (each one with traffic when absent), zeros where nothing ran in the window.
   */
  stats(
    models?: readonly {
      id: string;
      components: readonly { name: string; kind: TrafficComponentKind }[];
      /** The arms of the model's split, when it has one. */
      arms?: readonly string[];
    }[],
  ): { window_s: number; models: ModelTrafficStats[] } {
    const windowS = this.windowSeconds();
    const wanted =
      models ??
      [...this.models.entries()].map(([id, series]) => ({
        id,
        components: [...series.components.entries()].map(([name, { kind }]) => ({ name, kind })),
        arms: series.arms.size > 0 ? [...series.arms.keys()] : undefined,
      }));
    return {
      window_s: windowS,
      models: wanted.map(({ id, components, arms }) => {
        const series = this.models.get(id);
        const stats: ModelTrafficStats = {
          model_config_id: id,
          ...numbers(series?.requests, windowS),
          components: components.map(({ name, kind }) => {
            const entry = series?.components.get(name);
            return { name, kind, ...numbers(entry?.kind === kind ? entry.window : undefined, windowS) };
          }),
        };
        if (arms !== undefined)
          stats.arms = arms.map((arm) => ({
            model_config_id: arm,
            ...numbers(series?.arms.get(arm), windowS),
          }));
        return stats;
      }),
    };
  }
}

function numbers(window: SlidingWindow | undefined, windowS: number): TrafficStats {
  const summary = window?.summary();
  if (summary === undefined || summary.calls === 0) {
    return { requests_per_s: 0, errors_per_s: 0, error_rate: 0 };
  }
  const stats: TrafficStats = {
    requests_per_s: summary.calls / windowS,
    errors_per_s: summary.errors / windowS,
    error_rate: summary.errors / summary.calls,
  };
  if (summary.p50Ms !== undefined) stats.p50_ms = summary.p50Ms;
  if (summary.p99Ms !== undefined) stats.p99_ms = summary.p99Ms;
  return stats;
}
