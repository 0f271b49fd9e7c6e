/**
 * The per-call accounting every vss.v1 handler shares: request latency by method and failures by
 * code, under the labels (entity, model, variant) the handler resolved before it failed.
 */
import { isLatticeError } from '../../platform/errors.js';
import { type ServingLabels, type ServingMetrics, UNKNOWN_LABELS } from './serving-metrics.js';

export async function measuredCall<T>(
  metrics: ServingMetrics,
  method: string,
  work: (labels: ServingLabels) => Promise<T>,
): Promise<T> {
  const labels: ServingLabels = { ...UNKNOWN_LABELS };
  const started = performance.now();
  try {
    return await work(labels);
  } catch (err) {
    metrics.error(labels, isLatticeError(err) ? err.code : 'INTERNAL');
    throw err;
  } finally {
    metrics.requestMs(labels, method, performance.now() - started);
  }
}
