/**
 * The load generator of the admission benchmark, run in its own process (index.ts spawns it) so the
 * process under test does not also pay for making the load: LOAD_CONCURRENCY (200) Search calls of 4
 * queries and page 100 kept in flight against one vss serving address, each worker starting its next
 * call when the last one is answered. A call refused RESOURCE_EXHAUSTED is retried after a backoff,
 * as the refusal asks: by default the shape of a gRPC retry policy (ADMISSION_BACKOFF_MS, 100 ms,
 * doubling per refusal in a row up to 2 s, with jitter); ADMISSION_BACKOFF=fixed keeps it at
 * ADMISSION_BACKOFF_MS ± 50 % (a retry storm: 200 callers at ten refusals a second each).
 *
 * argv: <vss address> <seconds>. Prints `started` once the workers run and, at the end, one JSON line
 * with the answers counted by status and the latencies of the answered ones.
 */
import { status } from '@grpc/grpc-js';
import { Client as VssClient } from '../../test/vss/serving/harness.js';
import { envNumber, percentile, round } from '../support/stats.js';

const env = envNumber;
const CONCURRENCY = env('LOAD_CONCURRENCY', 200);
const QUERIES = env('LOAD_QUERIES', 4);
const PAGE = env('LOAD_PAGE', 100);
const DEADLINE_MS = env('LOAD_DEADLINE_MS', 10_000);
const BACKOFF_MS = env('ADMISSION_BACKOFF_MS', 100);
const MAX_BACKOFF_MS = 2000;
const FIXED_BACKOFF = process.env.ADMISSION_BACKOFF === 'fixed';
const ROWS = 1000;

const [address, secondsArg] = process.argv.slice(2);
if (!address || !secondsArg) throw new Error('usage: load.ts <vss address> <seconds>');
const until = performance.now() + Number(secondsArg) * 1000;

// A few channels, as a fleet of clients would open: one HTTP/2 connection would serialise 200 calls.
const clients = Array.from({ length: 8 }, () => new VssClient(address));
const counts: Record<string, number> = {};
const latencies: number[] = [];
let seed = 1;
const nextRow = () => {
  seed = (seed * 48271) % 2147483647;
  return seed % ROWS;
};

async function worker(w: number): Promise<void> {
  const client = clients[w % clients.length]!;
  let refusedInARow = 0;
  while (performance.now() < until) {
    const queries = Array.from({ length: QUERIES }, () => ({
      candidateId: `c${nextRow() + 1}`,
      pageToken: '',
      filters: [],
    }));
    const t = performance.now();
    let code = 'OK';
    try {
      await client.search(
        {
          entity: 'catalog',
          modelName: 'products',
          variant: w % 2 === 0 ? 'shoes' : 'all',
          queries,
          pageSize: PAGE,
        },
        DEADLINE_MS,
      );
      latencies.push(performance.now() - t);
      refusedInARow = 0;
    } catch (err) {
      const c = (err as { code?: number }).code;
      code = c === undefined ? 'ERROR' : (status[c] ?? String(c));
      if (c === status.RESOURCE_EXHAUSTED && BACKOFF_MS > 0) {
        refusedInARow++;
        const backoff = FIXED_BACKOFF
          ? BACKOFF_MS
          : Math.min(MAX_BACKOFF_MS, BACKOFF_MS * 2 ** (refusedInARow - 1));
        await new Promise((resolve) => setTimeout(resolve, backoff * (0.5 + Math.random())));
      } else refusedInARow = 0;
    }
    counts[code] = (counts[code] ?? 0) + 1;
  }
}

const started = performance.now();
const running = Array.from({ length: CONCURRENCY }, (_, w) => worker(w));
console.log('started');
await Promise.all(running);
const seconds = (performance.now() - started) / 1000;
const sorted = Float64Array.from(latencies).sort();
for (const client of clients) client.close();
console.log(
  JSON.stringify({
    seconds: round(seconds, 1),
    counts,
    ok_per_s: round((counts.OK ?? 0) / seconds, 1),
    p50_ms: round(percentile(sorted, 50), 1),
    p99_ms: round(percentile(sorted, 99), 1),
  }),
);
