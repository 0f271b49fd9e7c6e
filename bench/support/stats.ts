/** Shared measurement helpers: every benchmark reports the same figures the same way. */

export interface RunStats {
  calls: number;
  seconds: number;
  throughput: number;
  p50_ms: number;
  p99_ms: number;
}

/** The `p`th percentile of ascending `sorted` (nearest rank, lower). */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Runs `calls` invocations of `once` with `concurrency` in flight and returns throughput and latency
 * percentiles. Latencies are kept in a pre-sized typed array, so measuring allocates nothing per call.
 */
export async function measure(
  calls: number,
  concurrency: number,
  once: (i: number) => Promise<unknown>,
): Promise<RunStats> {
  const latencies = new Float64Array(calls);
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < calls; i = next++) {
      const t = performance.now();
      await once(i);
      latencies[i] = performance.now() - t;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort();
  return {
    calls,
    seconds,
    throughput: calls / seconds,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
  };
}

/** Median of several runs by throughput: one noisy run on a shared 2-core machine should not decide. */
export function medianRun(runs: RunStats[]): RunStats {
  const sorted = [...runs].sort((a, b) => a.throughput - b.throughput);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

/** The last line of every benchmark: one JSON object (see engineering.md). */
export function printResult(
  result: {
    bench: string;
    ratio: number;
    throughput: number;
    baseline_throughput: number;
    p50_ms: number;
    p99_ms: number;
  } & Record<string, unknown>,
): void {
  console.log(JSON.stringify(result));
}

/** A numeric knob of a benchmark from the environment (`LOAD_PHASE_S=5 npm run bench -- load`). */
export const envNumber = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
