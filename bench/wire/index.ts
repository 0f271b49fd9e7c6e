/**
 * Issue 37 item 4, each hand-written protobuf file earning its keep (`npm run bench -- wire`; never
 * part of `npm test`). For every case of cases.ts, the hand-written code and the generated code run
 * in the same process on the same input: WIRE_TRIALS (7) trials of WIRE_TRIAL_MS (150) each per side,
 * the two sides alternating and the first side swapped every trial, so that a noisy neighbour on the
 * shared 2-core machine hits both. Reports the median ops/s of each side and the gain of the
 * hand-written code (hand ÷ generated − 1); for files that slice their work, also the longest
 * event-loop turn of one call (median of 3). A file under 10 % in two runs goes back to the
 * generated code (bench/RESULTS.md, "wire codecs").
 */
import { loadavg } from 'node:os';
import { envNumber, printResult, round } from '../support/stats.js';
import { CASES, type WireCase } from './cases.js';

const TRIALS = envNumber('WIRE_TRIALS', 7);
const TRIAL_MS = envNumber('WIRE_TRIAL_MS', 150);
const only = process.env.WIRE_ONLY;

/** Calls of `run` per second over at least `ms` (and at least 2 calls). */
async function opsPerSecond(run: () => unknown, ms: number): Promise<number> {
  let calls = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < ms || calls < 2) {
    const result = run();
    if (result instanceof Promise) await result;
    calls++;
    elapsed = performance.now() - started;
  }
  return (calls * 1000) / elapsed;
}

/** The longest stretch of one call of `run` without a turn of the event loop, in ms. */
async function longestTurn(run: () => unknown): Promise<number> {
  let longest = 0;
  let done = false;
  let last = 0;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (!done) setImmediate(tick);
  };
  await new Promise((resolve) => setImmediate(resolve));
  last = performance.now();
  setImmediate(tick);
  await run();
  done = true;
  return Math.max(longest, performance.now() - last);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Figures {
  file: string;
  what: string;
  hand_ops_s: number;
  generated_ops_s: number;
  gain_pct: number;
  hand_longest_turn_ms?: number;
  generated_longest_turn_ms?: number;
}

async function measureCase(c: WireCase): Promise<Figures> {
  // Warm-up: both sides compiled before the first trial.
  await opsPerSecond(c.hand, TRIAL_MS);
  await opsPerSecond(c.generated, TRIAL_MS);
  const hand: number[] = [];
  const generated: number[] = [];
  for (let t = 0; t < TRIALS; t++) {
    if (t % 2 === 0) {
      hand.push(await opsPerSecond(c.hand, TRIAL_MS));
      generated.push(await opsPerSecond(c.generated, TRIAL_MS));
    } else {
      generated.push(await opsPerSecond(c.generated, TRIAL_MS));
      hand.push(await opsPerSecond(c.hand, TRIAL_MS));
    }
  }
  const figures: Figures = {
    file: c.file,
    what: c.what,
    hand_ops_s: round(median(hand), 1),
    generated_ops_s: round(median(generated), 1),
    gain_pct: round((median(hand) / median(generated) - 1) * 100, 1),
  };
  if (c.turns) {
    const turns = async (run: () => unknown) =>
      median([await longestTurn(run), await longestTurn(run), await longestTurn(run)]);
    figures.hand_longest_turn_ms = round(await turns(c.hand), 1);
    figures.generated_longest_turn_ms = round(await turns(c.generated), 1);
  }
  return figures;
}

const load = loadavg()[0]!;
const results: Figures[] = [];
for (const c of CASES) {
  if (only && !c.file.includes(only)) continue;
  const figures = await measureCase(c);
  results.push(figures);
  const turns =
    figures.hand_longest_turn_ms === undefined
      ? ''
      : `  longest turn ${figures.hand_longest_turn_ms} ms vs ${figures.generated_longest_turn_ms} ms`;
  console.log(
    `${figures.file.padEnd(44)} ${String(figures.hand_ops_s).padStart(10)} vs ${String(figures.generated_ops_s).padStart(10)} ops/s  ${figures.gain_pct >= 0 ? '+' : ''}${figures.gain_pct} %${turns}  (${figures.what})`,
  );
}

// The summary line: hand-written vs generated over all cases (geometric mean of the ratios).
const ratio = Math.exp(
  results.reduce((s, r) => s + Math.log(r.hand_ops_s / r.generated_ops_s), 0) / results.length,
);
printResult({
  bench: 'wire',
  ratio: round(ratio),
  throughput: round(
    results.reduce((s, r) => s + r.hand_ops_s, 0),
    1,
  ),
  baseline_throughput: round(
    results.reduce((s, r) => s + r.generated_ops_s, 0),
    1,
  ),
  p50_ms: Number.NaN,
  p99_ms: Number.NaN,
  load_1m_before: round(load, 2),
  load_1m_after: round(loadavg()[0]!, 2),
  cases: results,
});
