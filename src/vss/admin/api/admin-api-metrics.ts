/**
 * Admin API request metrics: responses by route, method and status class (`2xx` … `5xx`), which
 * the "more than 10 5xx a minute" alert reads, and latency by route. Routes are the registered
 * patterns (`/models/:entity/:model`), unmatched paths one `unmatched` series, so clients cannot
 * grow the series.
 */
import type { CounterMetric, Metrics, TimingMetric } from '../../../platform/metrics/index.js';

export const ADMIN_RESPONSES_METRIC = 'vss_admin_responses_total';
export const ADMIN_LATENCY_METRIC = 'vss_admin_request_seconds';

export class AdminApiMetrics {
  private readonly responses: CounterMetric;
  private readonly latency: TimingMetric;

  constructor(metrics: Metrics) {
    this.responses = metrics.counter(
      ADMIN_RESPONSES_METRIC,
      'vss admin HTTP API responses, by route, method and status class',
      ['route', 'method', 'status_class'],
    );
    this.latency = metrics.timing(ADMIN_LATENCY_METRIC, 'vss admin HTTP API latency', ['route', 'method']);
  }

  response(route: string | undefined, method: string, status: number, ms: number): void {
    const labels = { route: route ?? 'unmatched', method };
    this.responses.inc({ ...labels, status_class: `${Math.floor(status / 100)}xx` });
    this.latency.observeMs(labels, ms);
  }
}
