/**
 * The load generator's side of the wire: Search by embedding through the generated grpc-js client,
 * and an open-loop paced run (requests leave on a fixed schedule whatever the responses do, and
 * latency counts from the scheduled send time, so a slow server cannot hide queueing by slowing the
 * sender down).
 */
import { credentials, Metadata } from '@grpc/grpc-js';
import { type SearchRequest, type SearchResponse, SimilaritySearchClient } from '../../src/gen/vss/v1/vss.js';
import { percentile } from '../support/stats.js';
import { ENTITY, K, MODEL, VARIANT } from './fixture.js';

const DEADLINE_MS = 10_000;

/** One Search by embedding per query vector, first page of K, no filters or attributes. */
export function searchRequests(queries: readonly Float32Array[]): SearchRequest[] {
  return queries.map((q) => ({
    entity: ENTITY,
    modelName: MODEL,
    variant: VARIANT,
    queries: [{ embedding: { values: Array.from(q) }, pageToken: '', filters: [] }],
    pageSize: K,
    searchWidth: 0,
    attributes: [],
    filters: [],
  }));
}

export class SearchCaller {
  private readonly client: SimilaritySearchClient;
  /** One prepared request per query vector: building them is not the service's cost. */
  private readonly requests: SearchRequest[];

  constructor(address: string, queries: readonly Float32Array[]) {
    this.client = new SimilaritySearchClient(address, credentials.createInsecure());
    this.requests = searchRequests(queries);
  }

  /** The ids of query `q`'s first page, best first. */
  async search(q: number): Promise<string[]> {
    const [result] = (await this.send(this.requests[q % this.requests.length]!)).results;
    if (result?.error !== '') throw new Error(`search ${q}: ${result?.error ?? 'no result'}`);
    return result.candidates.map((c) => c.id);
  }

  /**
   * Queries `first … first + size − 1` (wrapping) in one Search call, as the API allows: the ids of
   * each query's first page, in query order.
   */
  async searchBatch(first: number, size: number): Promise<string[][]> {
    const queries = Array.from(
      { length: size },
      (_, k) => this.requests[(first + k) % this.requests.length]!.queries[0]!,
    );
    const { results } = await this.send({ ...this.requests[0]!, queries });
    const failed = results.find((r) => r.error !== '');
    if (failed || results.length !== size) {
      throw new Error(`batch at ${first}: ${failed?.error ?? `${results.length} results`}`);
    }
    return results.map((r) => r.candidates.map((c) => c.id));
  }

  private send(request: SearchRequest): Promise<SearchResponse> {
    return new Promise((resolve, reject) => {
      this.client.search(
        request,
        new Metadata(),
        { deadline: Date.now() + DEADLINE_MS },
        (err: Error | null, response: SearchResponse) => (err ? reject(err) : resolve(response)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

export interface PacedStats {
  rate: number;
  sent: number;
  failed: number;
  /** Sends ÷ time from the first scheduled send to the last actual one. */
  achievedRate: number;
  /** Percentiles of response time − actual send time. */
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** The same from the scheduled send time, i.e. with the generator's own lateness added. */
  scheduled_p50_ms: number;
  scheduled_p99_ms: number;
  /** How late the generator itself sent (timer lateness in this process), p99. */
  sendLagP99_ms: number;
}

/**
 * Sends `rate × seconds` calls on a fixed schedule that never waits for a response (open loop). The
 * generator sleeps on a timer until the next send is due and then sends every call that is due;
 * latency counts from the moment each call left. The timer's own lateness (on this VM up to a few ms
 * now and then, whatever the server does) is reported as the send lag and in the from-schedule
 * percentiles rather than charged to the server; a generator that polls instead keeps one of the
 * machine's two cores busy and slows the server it measures.
 */
export function paced(
  rate: number,
  seconds: number,
  call: (i: number) => Promise<unknown>,
): Promise<PacedStats> {
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const latencies = new Float64Array(total);
  const fromSchedule = new Float64Array(total);
  const lags = new Float64Array(total);
  let failed = 0;
  let done = 0;
  let next = 0;
  let lastSend = 0;
  const start = performance.now() + 20;
  return new Promise((resolve) => {
    const finish = () => {
      if (++done < total) return;
      const sendSpan = (lastSend - start) / 1000;
      latencies.sort();
      fromSchedule.sort();
      lags.sort();
      resolve({
        rate,
        sent: total,
        failed,
        achievedRate: sendSpan > 0 ? (total - 1) / sendSpan : Number.NaN,
        p50_ms: percentile(latencies, 50),
        p99_ms: percentile(latencies, 99),
        max_ms: latencies[total - 1]!,
        scheduled_p50_ms: percentile(fromSchedule, 50),
        scheduled_p99_ms: percentile(fromSchedule, 99),
        sendLagP99_ms: percentile(lags, 99),
      });
    };
    const send = (i: number, now: number) => {
      const scheduled = start + i * interval;
      lags[i] = now - scheduled;
      lastSend = now;
      const settle = () => {
        const end = performance.now();
        latencies[i] = end - now;
        fromSchedule[i] = end - scheduled;
        finish();
      };
      call(i).then(settle, () => {
        failed++;
        settle();
      });
    };
    const tick = () => {
      let now = performance.now();
      while (next < total && start + next * interval <= now) {
        send(next++, now);
        now = performance.now();
      }
      if (next >= total) return;
      // Timers have 1 ms granularity: sleep until the next send is due (rounded down), then poll
      // for the last fraction of a millisecond.
      const wait = start + next * interval - now;
      if (wait >= 1) setTimeout(tick, Math.floor(wait));
      else setImmediate(tick);
    };
    setTimeout(tick, 20);
  });
}
