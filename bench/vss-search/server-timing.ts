/**
 * Where a call's time goes on the server, from the serving process's own latency histograms: the
 * gRPC interceptor's handling time (call start to status sent), the Search handler inside it, and
 * the vector DB search inside that. Means over the calls between two `stats` snapshots.
 */
import type { ServingStats } from './fixture.js';

export const GRPC = 'grpc_server_handling_seconds';
export const HANDLER = 'vss_serving_request_seconds';
export const VECTOR_DB = 'vss_serving_vectordb_seconds';

export class ServerTiming {
  private readonly totals = new Map<string, { sum_ms: number; count: number }>();

  /** Adds the calls between two snapshots. */
  add(before: ServingStats, after: ServingStats): void {
    for (const [name, end] of Object.entries(after.timing)) {
      const start = before.timing[name] ?? { sum_ms: 0, count: 0 };
      const total = this.totals.get(name) ?? { sum_ms: 0, count: 0 };
      total.sum_ms += end.sum_ms - start.sum_ms;
      total.count += end.count - start.count;
      this.totals.set(name, total);
    }
  }

  meanMs(name: string): number {
    const total = this.totals.get(name);
    return total && total.count > 0 ? total.sum_ms / total.count : Number.NaN;
  }
}
