/**
 * runner-floor: what the vss consumer runner costs by itself, i.e. the ceiling it leaves the event
 * processors. 100,000 small keyed messages on 8 partitions are consumed through the runner with a
 * no-op processor (parse returns the payload, apply reports every event applied), and, as the
 * baseline in the same run, by a bare `Queue.subscribe` handler that returns at once (auto-ack) with
 * the same window of unsettled messages per partition. Each measurement gets a topic of its own,
 * filled before the clock starts, and ends when the group's lag is zero (everything acknowledged).
 *
 * Queues: the in-process memory queue, the journaled memory queue (embedded defaults: fsync on every
 * publish and settle, group-committed), and NATS JetStream when it answers at LATTICE_TEST_NATS_URL
 * (default nats://127.0.0.1:4222). The ingestion goals, processors included: ≥ 20,000
 * events/s acknowledged embedded, ≥ 10,000/s on JetStream.
 *
 * `node --import tsx bench/vss-ingest/runner-floor.ts` (env BENCH_EVENTS, BENCH_BATCH, BENCH_LINGER_MS,
 * BENCH_ROUNDS: each figure is the median of that many rounds, 3 by default).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Histogram } from 'prom-client';
import { Metrics } from '../../src/platform/metrics/index.js';
import { createQueue, type Queue } from '../../src/platform/queue/index.js';
import { ConsumerRunner } from '../../src/vss/consumers/consumer-runner.js';
import type { EventBatchHandler, EventOutcome } from '../../src/vss/consumers/event-batch.js';
import { printResult, round } from '../support/stats.js';
import { untilSettled } from './until-settled.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const PARTITIONS = 8;
const KEYS = 10_000;
const BATCH = Number(process.env.BENCH_BATCH ?? 256);
const LINGER_MS = Number(process.env.BENCH_LINGER_MS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PUBLISH_CONCURRENCY = 512;
const natsUrl = process.env.LATTICE_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** Messages the current measurement's handler has seen (reset by each). */
let handled = 0;

/** The processor that does nothing but count: what is left is the runner and the queue. */
const noop: EventBatchHandler<Uint8Array> = {
  kind: 'noop',
  parse: (payload) => payload,
  apply: async (events): Promise<EventOutcome[]> => {
    handled += events.length;
    return new Array(events.length).fill(undefined);
  },
};

interface Figures {
  publish_per_s: number;
  runner_per_s: number;
  baseline_per_s: number;
  batch_p50_ms: number;
  batch_p99_ms: number;
}

async function fill(queue: Queue, topic: string): Promise<number> {
  await queue.ensureTopic(topic, { partitions: PARTITIONS, deadLetterTopic: false });
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < EVENTS; i = next++) {
      const key = `c${i % KEYS}`;
      await queue.publish(topic, new TextEncoder().encode(`{"id":"${key}","v":${i}}`), { key });
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_CONCURRENCY }, worker));
  return EVENTS / ((performance.now() - started) / 1000);
}

/**
 * Waits until the handler saw every message and the group settled them all (until-settled.ts);
 * returns the seconds since `started`.
 */
async function settled(queue: Queue, topic: string, group: string, started: number): Promise<number> {
  await untilSettled({
    handled: () => handled,
    expected: EVENTS,
    lag: async () => (await queue.groupLag(topic, group)).reduce((n, p) => n + p.pending + p.unsettled, 0),
    pollMs: 20,
  });
  return (performance.now() - started) / 1000;
}

/** Quantile from the runner's batch histogram (upper bound of the bucket it falls in), in ms. */
async function batchQuantile(metrics: Metrics, q: number): Promise<number> {
  const histogram = metrics.registry.getSingleMetric('vss_consumer_batch_seconds') as
    | Histogram<string>
    | undefined;
  const values = (await histogram?.get())?.values ?? [];
  const buckets = values
    .filter((v) => v.metricName === 'vss_consumer_batch_seconds_bucket')
    .map((v) => ({ le: Number(v.labels.le), count: v.value }))
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  const bucket = buckets.find((b) => b.count >= q * total);
  return bucket ? bucket.le * 1000 : Number.NaN;
}

/** Median of `ROUNDS` rounds, figure by figure: one noisy round on a shared machine should not decide. */
async function measureOn(name: string, open: () => Promise<Queue>): Promise<Figures> {
  const rounds: Figures[] = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await measureRound(name, open));
  const median = (pick: (f: Figures) => number) =>
    rounds.map(pick).sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
  const figures: Figures = {
    publish_per_s: median((f) => f.publish_per_s),
    runner_per_s: median((f) => f.runner_per_s),
    baseline_per_s: median((f) => f.baseline_per_s),
    batch_p50_ms: median((f) => f.batch_p50_ms),
    batch_p99_ms: median((f) => f.batch_p99_ms),
  };
  console.log(`${name}, median of ${ROUNDS}: ${JSON.stringify(figures)}`);
  return figures;
}

async function measureRound(name: string, open: () => Promise<Queue>): Promise<Figures> {
  const queue = await open();
  const baseTopic = `floor_base_${process.pid}_${Date.now()}`;
  const topic = `floor_runner_${process.pid}_${Date.now()}`;
  try {
    const window = 2 * BATCH;
    await fill(queue, baseTopic);
    handled = 0;
    let started = performance.now();
    const bare = await queue.subscribe(baseTopic, 'baseline', () => void handled++, {
      inFlightPerPartition: window,
      concurrency: window * PARTITIONS,
    });
    const baselineSeconds = await settled(queue, baseTopic, 'baseline', started);
    await bare.close();

    const publishRate = await fill(queue, topic);
    const metrics = new Metrics();
    handled = 0;
    started = performance.now();
    const runner = await ConsumerRunner.start({
      queue,
      topic,
      group: 'runner',
      handler: noop,
      batchSize: BATCH,
      lingerMs: LINGER_MS,
      retry: { attempts: 3, baseMs: 100, maxMs: 1000 },
      metrics,
    });
    const runnerSeconds = await settled(queue, topic, 'runner', started);
    await runner.close();
    const figures: Figures = {
      publish_per_s: Math.round(publishRate),
      runner_per_s: Math.round(EVENTS / runnerSeconds),
      baseline_per_s: Math.round(EVENTS / baselineSeconds),
      batch_p50_ms: round(await batchQuantile(metrics, 0.5)),
      batch_p99_ms: round(await batchQuantile(metrics, 0.99)),
    };
    console.log(`${name}: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    // A failed round leaves nothing on a shared server.
    for (const t of [baseTopic, topic]) await queue.deleteTopic(t).catch(() => false);
    await queue.close();
  }
}

async function natsAnswers(): Promise<boolean> {
  try {
    const queue = await createQueue({ kind: 'jetstream', servers: [natsUrl], connectTimeoutMs: 1000 });
    await queue.close();
    return true;
  } catch {
    return false;
  }
}

console.log(
  `runner-floor: ${EVENTS} events, ${PARTITIONS} partitions, batch ${BATCH}, linger ${LINGER_MS} ms`,
);
const memory = await measureOn('memory', () => createQueue({ kind: 'memory' }));
const journalDir = mkdtempSync(join(tmpdir(), 'lattice-runner-floor-'));
let journaled: Figures;
try {
  journaled = await measureOn('memory, journaled (fsync always)', () =>
    createQueue({ kind: 'memory', journalDir }),
  );
} finally {
  rmSync(journalDir, { recursive: true, force: true });
}
const jetstream = (await natsAnswers())
  ? await measureOn('jetstream', () => createQueue({ kind: 'jetstream', servers: [natsUrl] }))
  : undefined;
if (!jetstream) console.log(`jetstream: skipped, no NATS at ${natsUrl}`);

printResult({
  bench: 'vss-ingest-runner-floor',
  ratio: round(journaled.runner_per_s / journaled.baseline_per_s),
  throughput: journaled.runner_per_s,
  baseline_throughput: journaled.baseline_per_s,
  p50_ms: journaled.batch_p50_ms,
  p99_ms: journaled.batch_p99_ms,
  memory_throughput: memory.runner_per_s,
  memory_baseline_throughput: memory.baseline_per_s,
  distributed_throughput: jetstream?.runner_per_s ?? null,
  distributed_baseline_throughput: jetstream?.baseline_per_s ?? null,
  distributed_p99_ms: jetstream?.batch_p99_ms ?? null,
});
