/**
 * Issue 40: retrieve-and-rank in one call against the same work done by a client in two calls, in
 * one run. The services are `lattice up` as its own process (fresh data directory, free ports: the
 * feature store, model and compute servers, the orchestrator and vss serving with the vss demo's
 * 1,000 products, whose ids are the feature store's catalogs); this process is only the client.
 *
 * - one call: PointWise Predict on `bench_retrieve_rank` (the demo's catalog_recommender: two
 *   retrievers over catalog/products, quotas 40 and 10, the catalog ranker, sort_by final_score,
 *   limit 10) with `user_id` and `item_id` and no targets;
 * - two calls: the client runs the same two Searches (in parallel), merges them as the orchestrator
 *   does (the same merge function), calls Predict on `bench_rank` (the same DAG without retrieval)
 *   with those targets, then sorts and keeps the top 10 itself.
 *
 * `ratio` = one-call throughput ÷ two-call throughput, each with BENCH_CONCURRENCY calls in flight
 * (a closed loop: each path as fast as it goes). Latency is compared at equal load, as a service
 * meets it: both paths paced at the same rate (BENCH_PACED_LOAD of the two-call throughput, an open
 * loop where each call is timed from when it was due) in alternating rounds; `p99_ms` and
 * `two_call_p99_ms` are those. The closed loop's p99s are reported too (`closed_loop_p99_ms`,
 * `two_call_closed_loop_p99_ms`): there the faster path runs more calls at once through the one
 * process, so its tail is not the same load's. The shadow measurement (`shadow_p99_increase`, a
 * 100 % shadow against none) is added by {@link shadowMeasurement}.
 * Knobs: BENCH_CALLS (per run), BENCH_ROUNDS (median of), BENCH_CONCURRENCY, BENCH_WARMUP.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogRecommenderConfig } from '../../examples/catalog-ranker.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import type { ModelConfigInput } from '../../src/orchestrator/config/index.js';
import { mergeCandidates } from '../../src/orchestrator/engine/candidate-merge.js';
import { createConfigStore } from '../../src/platform/config-store/index.js';
import { VssClient } from '../../src/vss/client.js';
import { startLattice } from '../../test/support/lattice-up-process.js';
import { paced } from '../shadow/shadow-overhead.js';
import {
  envNumber,
  measure,
  medianRun,
  percentile,
  printResult,
  type RunStats,
  round,
} from '../support/stats.js';

const CALLS = envNumber('BENCH_CALLS', 1000);
const ROUNDS = envNumber('BENCH_ROUNDS', 3);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 8);
const WARMUP = envNumber('BENCH_WARMUP', 300);
const DEADLINE_MS = 5000;
const ONE_CALL = 'bench_retrieve_rank';
const SHADOWED = 'bench_retrieve_rank_shadowed';
/**
 * The paced phases (equal load, shadow): seconds per round, rounds per arm; the shadow phase's rate
 * as a share of the one-call throughput.
 */
const PACED_ROUND_SECONDS = envNumber('BENCH_PACED_ROUND_SECONDS', 10);
const PACED_ROUNDS = envNumber('BENCH_PACED_ROUNDS', 3);
const SHADOW_LOAD = envNumber('BENCH_SHADOW_LOAD', 0.25);
/** The equal-load latency phase: its rate as a share of the two-call throughput. */
const PACED_LOAD = envNumber('BENCH_PACED_LOAD', 0.5);
const TWO_CALL_RANKER = 'bench_rank';
const USERS = 100;
const ITEMS = 1000;

/** `lattice up` on a fresh data directory; resolves with its addresses once it is up. */
async function startServices() {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-bench-retrieve-rank-'));
  const up = startLattice(['up'], { LATTICE_DATA_DIR: dataDir });
  const deadline = Date.now() + 300_000;
  while (!up.output.stdout.includes('Ctrl-C')) {
    if (up.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`lattice up did not start:\n${up.output.stdout}\n${up.output.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const address = (pattern: RegExp) => {
    const found = pattern.exec(up.output.stdout)?.[1];
    if (!found) throw new Error(`${pattern} not in:\n${up.output.stdout}`);
    return found;
  };
  return {
    configDir: join(dataDir, 'config'),
    orchestrator: address(/gRPC orchestrator\.v1 .*\s+(\S+)\n/),
    vss: address(/gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/),
    modelServer: address(/gRPC inference\.GRPCInferenceService.*\s+(\S+)\n/),
    computeServer: address(/gRPC numerix\.Numerix.*\s+(\S+)\n/),
    stop: async () => {
      up.child.kill('SIGTERM');
      await up.exited;
    },
  };
}

async function main(): Promise<void> {
  const services = await startServices();
  try {
    const demo = catalogRecommenderConfig(services);
    // The same deadline for both paths: the stage's own would cut retrievers short on a busy machine.
    const oneCall = { ...demo, retrieval: { ...demo.retrieval!, deadline_ms: DEADLINE_MS } };
    const retrieval = oneCall.retrieval;
    const { retrieval: _, ...withoutRetrieval } = oneCall;
    const ranker: ModelConfigInput = {
      ...withoutRetrieval,
      model_config_id: TWO_CALL_RANKER,
      request_features: ['user_id'],
      response: { columns: ['final_score', 'ctr'] },
    };
    const store = await createConfigStore({ kind: 'file', dir: services.configDir });
    await store.put(`models/${ONE_CALL}`, { ...oneCall, model_config_id: ONE_CALL });
    await store.put(`models/${TWO_CALL_RANKER}`, ranker);
    // The same config again with a 100 % shadow on its twin: every request is retrieved and ranked twice.
    await store.put(`models/${SHADOWED}`, {
      ...oneCall,
      model_config_id: SHADOWED,
      shadow: { model_config_id: ONE_CALL, percentage: 100 },
    });
    await store.close();

    const orchestrator = new OrchestratorClient(services.orchestrator);
    const vss = new VssClient(services.vss);
    const context = (i: number) => ({
      user_id: `u${(i % USERS) + 1}`,
      item_id: `c${((i * 7919) % ITEMS) + 1}`,
    });

    const answer = (modelConfigId: string) => async (i: number) => {
      const result = await orchestrator.pointWise({
        modelConfigId,
        context: context(i),
        deadlineMs: DEADLINE_MS,
      });
      if (result.targets.length !== 10 || result.errors.length > 0)
        throw new Error(`bad one-call answer: ${JSON.stringify(result.errors)}`);
      return result;
    };
    const one = answer(ONE_CALL);
    const two = async (i: number) => {
      const { user_id, item_id } = context(i);
      const pages = await Promise.all(
        retrieval.retrievers.map((r) =>
          vss.search({
            entity: r.entity,
            model: r.model,
            variant: r.variant,
            id: item_id,
            pageSize: r.k,
            attributes: (r.attributes ?? []).map((x) => x.name),
            deadlineMs: DEADLINE_MS,
          }),
        ),
      );
      const merged = mergeCandidates(
        pages.map((page, r) => ({
          quota: retrieval.retrievers[r]!.quota ?? retrieval.retrievers[r]!.k,
          candidates: page.candidates,
        })),
      );
      const result = await orchestrator.pointWise({
        modelConfigId: TWO_CALL_RANKER,
        context: { user_id },
        targets: merged.ids.map((id) => ({ id })),
        deadlineMs: DEADLINE_MS,
      });
      const top = result.targets
        .map((t) => ({ id: t.id, score: t.values.final_score as number }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10);
      if (top.length !== 10) throw new Error('bad two-call answer');
      return top;
    };

    // Both answer the same list (checked once), then warm up.
    await waitForConfigs(one, two, answer(SHADOWED));
    const [a, b] = [await one(1), await two(1)];
    if (JSON.stringify(a.targets.map((t) => t.id)) !== JSON.stringify(b.map((t) => t.id)))
      throw new Error(
        `the two paths rank differently: ${a.targets.map((t) => t.id)} vs ${b.map((t) => t.id)}`,
      );
    await measure(WARMUP, CONCURRENCY, one);
    await measure(WARMUP, CONCURRENCY, two);

    const oneRuns: RunStats[] = [];
    const twoRuns: RunStats[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      oneRuns.push(await measure(CALLS, CONCURRENCY, one));
      twoRuns.push(await measure(CALLS, CONCURRENCY, two));
      console.log(
        `round ${round + 1}: one call ${oneRuns[round]!.throughput.toFixed(0)}/s p99 ${oneRuns[round]!.p99_ms.toFixed(2)} ms; two calls ${twoRuns[round]!.throughput.toFixed(0)}/s p99 ${twoRuns[round]!.p99_ms.toFixed(2)} ms`,
      );
    }
    const oneRun = medianRun(oneRuns);
    const twoRun = medianRun(twoRuns);
    const paced = await equalLoad(twoRun.throughput * PACED_LOAD, one, two);
    const shadow = await shadowMeasurement(oneRun.throughput * SHADOW_LOAD, one, answer(SHADOWED));
    orchestrator.close();
    vss.close();
    printResult({
      bench: 'retrieve-rank',
      ratio: round(oneRun.throughput / twoRun.throughput),
      throughput: round(oneRun.throughput, 1),
      baseline_throughput: round(twoRun.throughput, 1),
      p50_ms: round(paced.one.p50),
      p99_ms: round(paced.one.p99),
      two_call_p50_ms: round(paced.two.p50),
      two_call_p99_ms: round(paced.two.p99),
      paced_rate: paced.rate,
      closed_loop_p50_ms: round(oneRun.p50_ms),
      closed_loop_p99_ms: round(oneRun.p99_ms),
      two_call_closed_loop_p50_ms: round(twoRun.p50_ms),
      two_call_closed_loop_p99_ms: round(twoRun.p99_ms),
      shadow_p99_increase: shadow,
      calls: CALLS,
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
    });
  } finally {
    await services.stop();
  }
}

/** The orchestrator loads the two configs written to its file store live: wait until both answer. */
async function waitForConfigs(...paths: ((i: number) => Promise<unknown>)[]): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      for (const path of paths) await path(0);
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** p50 and p99 of latencies in ms. */
function percentiles(values: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(values).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/**
 * Both paths at the same offered rate (an open loop with headroom for both), in alternating rounds
 * so drift in the machine's load falls on both; each call timed from when it was due.
 */
async function equalLoad(
  rate: number,
  one: (i: number) => Promise<unknown>,
  two: (i: number) => Promise<unknown>,
): Promise<{ rate: number; one: { p50: number; p99: number }; two: { p50: number; p99: number } }> {
  const perSecond = Math.max(1, Math.round(rate));
  let i = 0;
  const oneMs: number[] = [];
  const twoMs: number[] = [];
  for (let r = 0; r < PACED_ROUNDS; r++) {
    await paced(perSecond, PACED_ROUND_SECONDS, () => one(i++), oneMs);
    await paced(perSecond, PACED_ROUND_SECONDS, () => two(i++), twoMs);
  }
  const result = { rate: perSecond, one: percentiles(oneMs), two: percentiles(twoMs) };
  console.log(
    `equal load at ${perSecond}/s: one call p50 ${result.one.p50.toFixed(2)} / p99 ${result.one.p99.toFixed(2)} ms; two calls p50 ${result.two.p50.toFixed(2)} / p99 ${result.two.p99.toFixed(2)} ms`,
  );
  return result;
}

/**
 * What a 100 % shadow costs the primary's callers (issue 40): the one-call config and its twin with
 * `shadow: { percentage: 100 }` on it, called at a fixed rate (an open loop with headroom: a share of
 * the measured one-call throughput, BENCH_SHADOW_LOAD) in alternating rounds, so drift in the
 * machine's load falls on both. Each call is timed from when it was due. Returns the shadowed p99 ÷
 * the plain p99 − 1 (0.05 is +5 %).
 */
async function shadowMeasurement(
  rate: number,
  plain: (i: number) => Promise<unknown>,
  shadowed: (i: number) => Promise<unknown>,
): Promise<number> {
  const perSecond = Math.max(1, Math.round(rate));
  let i = 0;
  const plainMs: number[] = [];
  const shadowedMs: number[] = [];
  await paced(perSecond, 2, () => shadowed(i++), []);
  for (let r = 0; r < PACED_ROUNDS; r++) {
    await paced(perSecond, PACED_ROUND_SECONDS, () => plain(i++), plainMs);
    await paced(perSecond, PACED_ROUND_SECONDS, () => shadowed(i++), shadowedMs);
  }
  const without = percentiles(plainMs).p99;
  const withShadow = percentiles(shadowedMs).p99;
  console.log(
    `shadow phase at ${perSecond}/s: p99 ${without.toFixed(2)} ms without, ${withShadow.toFixed(2)} ms with a 100 % shadow`,
  );
  return round(withShadow / without - 1, 4);
}

await main();
