/**
 * Times every run of every component a builder makes, into the model's traffic (model-traffic.ts):
 * the executor already measures each node, but only for executions that finish; a required
 * component that fails a request is exactly the run the console must count. Wrapping the built
 * component sees every run, synchronous or not, and adds two clock reads to it.
 */
import type { ComponentBuilder } from '../config/index.js';
import type { DagComponent } from '../dag/index.js';
import type { ModelTraffic, TrafficSeries } from './model-traffic.js';

export function timedComponents<C>(build: ComponentBuilder<C>, traffic: ModelTraffic): ComponentBuilder<C> {
  return (plan, model) => {
    const inner = build(plan, model);
    const series = traffic.component(model.config.model_config_id, plan.name, plan.kind);
    return new TimedComponent(inner, series);
  };
}

class TimedComponent<C> implements DagComponent<C> {
  readonly name: string;
  readonly required: boolean;

  constructor(
    private readonly inner: DagComponent<C>,
    private readonly series: TrafficSeries,
  ) {
    this.name = inner.name;
    this.required = inner.required;
  }

  run(context: C, signal: AbortSignal): void | Promise<void> {
    const started = performance.now();
    let result: void | Promise<void>;
    try {
      result = this.inner.run(context, signal);
    } catch (err) {
      this.series.record(performance.now() - started, true);
      throw err;
    }
    if (result === undefined) {
      this.series.record(performance.now() - started, false);
      return;
    }
    return Promise.resolve(result).then(
      () => this.series.record(performance.now() - started, false),
      (err: unknown) => {
        this.series.record(performance.now() - started, true);
        throw err;
      },
    );
  }
}
