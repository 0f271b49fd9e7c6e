import type {
  BoundCounter,
  BoundTiming,
  CounterMetric,
  GaugeMetric,
  Labels,
  Metrics,
  TimingMetric,
} from '../../platform/metrics/index.js';
import type { CallTarget } from './call-target.js';

/** The outbound-call metrics, registered once per CallPolicy. */
export interface CallInstruments {
  requests: CounterMetric;
  latency: TimingMetric;
  errors: CounterMetric;
  retries: CounterMetric;
  circuit: GaugeMetric;
}

/** The series of one service, target and method, bound once: the metrics of a call allocate nothing. */
export interface CallSeries {
  labels: Labels;
  ok: BoundCounter;
  error: BoundCounter;
  latency: BoundTiming;
}

export function callInstruments(metrics: Metrics): CallInstruments {
  const labels = ['service', 'target', 'method'];
  return {
    requests: metrics.counter(
      'orchestrator_external_requests_total',
      'Outbound calls to feature stores, model servers and numerix, by outcome (ok, error)',
      [...labels, 'outcome'],
    ),
    latency: metrics.timing(
      'orchestrator_external_request_seconds',
      'Outbound call latency, retries included',
      labels,
    ),
    errors: metrics.counter(
      'orchestrator_external_errors_total',
      'Failed outbound calls by kind (deadline, unavailable, circuit_open, cancelled, server_error)',
      [...labels, 'kind'],
    ),
    retries: metrics.counter('orchestrator_external_retries_total', 'Outbound call retries', labels),
    circuit: metrics.gauge(
      'orchestrator_external_circuit_state',
      'Circuit breaker state per endpoint: 0 closed, 1 open, 2 half-open',
      ['target'],
    ),
  };
}

/** Binds the series of a call target (once per target: CallPolicy keeps them). */
export function bindCallSeries(instruments: CallInstruments, call: CallTarget): CallSeries {
  const labels = { service: call.service, target: call.target, method: call.method };
  return {
    labels,
    ok: instruments.requests.bind({ ...labels, outcome: 'ok' }),
    error: instruments.requests.bind({ ...labels, outcome: 'error' }),
    latency: instruments.latency.bind(labels),
  };
}
