export {
  type BoundCounter,
  type BoundTiming,
  type CounterMetric,
  type GaugeMetric,
  type Labels,
  Metrics,
  type MetricsOptions,
  type StatsdOptions,
  type TimingMetric,
} from './metrics.js';
