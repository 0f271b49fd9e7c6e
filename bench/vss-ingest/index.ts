/**
 * bench/vss-ingest (issue 14): embedding ingestion through the vss consumers, end to end.
 *
 * 100,000 embedding events (128-d, design shape, two variants on one collection, keyed by candidate
 * id) and one EOF marker per partition are published to the ingestion topic (8 partitions), then
 * consumed by the vss consumers as `lattice vss consumers` starts them (`startVssConsumers`: the
 * consumer runner with the real `IngestionHandler`, embedding and EOF processors), on adapters built
 * by `Platform` from settings (stack.ts):
 *
 * - embedded defaults in a temporary data directory: the journaled memory queue, PGlite, the embedded
 *   vector DB with its write-ahead log;
 * - distributed: JetStream + PostgreSQL (LATTICE_TEST_NATS_URL, LATTICE_TEST_POSTGRES_URL, machine
 *   defaults otherwise), vector DB embedded as before; skipped with a note when either is down.
 *
 * The clock starts when the consumer starts (everything is published before; the publish rate is
 * reported apart). The job's rate = events ÷ seconds to the last acknowledgement (group lag zero);
 * `indexed_after_s` = seconds from the same start until the collection reports every point indexed.
 * Baseline in the same run: the raw index library adding the same vectors single-threaded
 * (raw-index.ts); `ratio` = throughput ÷ its adds/s. Floors on fresh stacks of each kind (floors.ts):
 * the raw pipeline (the raw libraries doing an acknowledgement's durable work, no product code: the
 * machine's floor for the throughput goals), raw SQL upsert of the same rows, raw vector DB upsert with
 * its log, the processors without queue and runner, and the queue + runner with a processor that does
 * nothing. The run checks that the store and the collection hold exactly every event and that the job
 * completed with exact counts.
 *
 * `throughput` is the steady state: acknowledged messages per second after the first BENCH_WARMUP
 * (20,000; 0 for none) are settled, with the CPU figures over the same window; `job_throughput` is
 * the whole job's rate from the consumers' start and `cold_throughput` its first BENCH_WARMUP's, a
 * fresh process's (likewise `distributed_…`).
 *
 * `npm run bench -- vss-ingest`; env BENCH_EVENTS (100000), BENCH_DIMENSION (128), BENCH_PARTITIONS
 * (8), BENCH_BATCH (consumer batch size; default the settings' 256), BENCH_FLOORS=0 (skip floors),
 * BENCH_DISTRIBUTED=0 (skip JetStream + PostgreSQL), BENCH_CPU_PROFILE=<dir> (profile the main thread
 * until the last ack and after it, print where the time went, keep the .cpuprofile files). Goals:
 * ≥ 20,000 events/s acknowledged embedded, indexed within 1.25 × baseline_build_s, ≥ 10,000 events/s
 * on JetStream + PostgreSQL. Results and their reading: bench/RESULTS.md, "vss-ingest".
 */
import { loadavg } from 'node:os';
import { printResult, round } from '../support/stats.js';
import {
  type ProcessorFloor,
  pipelineFloor,
  processorFloor,
  runnerFloor,
  type SqlFloor,
  sqlFloor,
  type VectorDbFloor,
  vectorDbFloor,
} from './floors.js';
import { type IngestFigures, measureIngestion } from './ingest-run.js';
import { buildRawIndex } from './raw-index.js';
import { type Mode, openStack, reachable, type Stack } from './stack.js';
import { registerModel, workload } from './workload.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const DIMENSION = Number(process.env.BENCH_DIMENSION ?? 128);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 8);
const BATCH = process.env.BENCH_BATCH === undefined ? undefined : Number(process.env.BENCH_BATCH);
const FLOORS = process.env.BENCH_FLOORS !== '0';
const DISTRIBUTED = process.env.BENCH_DISTRIBUTED !== '0';
const WARMUP = Number(process.env.BENCH_WARMUP ?? 20_000);
const natsUrl = process.env.LATTICE_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const postgresUrl = process.env.LATTICE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

interface Floors {
  /** The raw libraries doing an acknowledgement's durable work, no product code (floors.ts). */
  pipeline_per_s: number;
  runner_noop_per_s: number;
  processor: ProcessorFloor;
  sql: SqlFloor;
  vectordb: VectorDbFloor;
}

const load = () => loadavg().map((x) => Number(x.toFixed(2)));
const open = (mode: Mode) =>
  openStack({ mode, partitions: PARTITIONS, batchSize: BATCH, natsUrl, postgresUrl });

async function withStack<T>(mode: Mode, fn: (stack: Stack) => Promise<T>): Promise<T> {
  const stack = await open(mode);
  try {
    return await fn(stack);
  } finally {
    await stack.close();
  }
}

async function measureFloors(mode: Mode): Promise<Floors> {
  return withStack(mode, async (stack) => {
    const batch = stack.settings.vss.consumers.batchSize;
    const data = workload('floor', EVENTS, DIMENSION, PARTITIONS);
    await registerModel(stack.store, data.entity, DIMENSION, 2);
    const pipeline = await pipelineFloor(stack, data, batch, 'floor');
    console.log(
      `  ${mode} floor, raw pipeline (JSON.parse, raw SQL upsert, point log + fdatasync, ack record + fdatasync; no product code): ${pipeline} events/s`,
    );
    const runner = await runnerFloor(stack, data);
    console.log(`  ${mode} floor, queue + runner, no-op processor: ${runner} events/s`);
    const sql = await sqlFloor(stack, data, batch);
    console.log(`  ${mode} floor, raw SQL upsert of the rows (${sql.embedding_type}): ${sql.per_s} rows/s`);
    const vectordb = await vectorDbFloor(stack, data, batch);
    console.log(
      `  ${mode} floor, raw vector DB upsert with its log: ${vectordb.per_s} points/s acknowledged, all indexed after ${vectordb.indexed_after_s} s`,
    );
    const processor = await processorFloor(stack, data, batch, 3);
    console.log(
      `  ${mode} floor, processors without queue or runner: ${processor.per_s} events/s (parse alone ${processor.parse_per_s}/s)`,
    );
    return { pipeline_per_s: pipeline, runner_noop_per_s: runner, processor, sql, vectordb };
  });
}

console.log(
  `vss-ingest: ${EVENTS} events × ${DIMENSION}-d, ${PARTITIONS} partitions; load average ${load().join(' ')}`,
);
const data = workload('bench', EVENTS, DIMENSION, PARTITIONS);

const baseline = buildRawIndex(data.vectors, DIMENSION);
console.log(`baseline: hnswlib adds ${EVENTS} vectors in ${baseline.build_s} s (${baseline.per_s}/s)`);

/**
 * Consumers are long-lived: the acknowledged rate is the job's after its first BENCH_WARMUP events,
 * by consumers that are already running (ingest-run.ts); the whole job's rate and the cold start's
 * are reported beside it.
 */
const measure = (mode: Mode) => withStack(mode, (stack) => measureIngestion(stack, data, 1, WARMUP));

console.log('embedded defaults (journaled memory queue, PGlite, embedded vector DB with its log):');
const embedded = await measure('embedded');
const embeddedFloors = FLOORS ? await measureFloors('embedded') : undefined;

let distributed: IngestFigures | undefined;
let distributedFloors: Floors | undefined;
let distributedNote: string | undefined;
const down = DISTRIBUTED
  ? [
      ...((await reachable(natsUrl)) ? [] : [`NATS is not reachable at ${natsUrl}`]),
      ...((await reachable(postgresUrl)) ? [] : [`PostgreSQL is not reachable at ${postgresUrl}`]),
    ]
  : ['BENCH_DISTRIBUTED=0'];
if (down.length === 0) {
  console.log(`distributed (JetStream ${natsUrl}, PostgreSQL ${postgresUrl}, embedded vector DB):`);
  distributed = await measure('distributed');
  distributedFloors = FLOORS ? await measureFloors('distributed') : undefined;
} else {
  distributedNote = `skipped: ${down.join('; ')}`;
  console.log(`distributed ${distributedNote}`);
}

// The machine's speed drifts on a shared host: the baseline again at the end brackets it.
const baselineEnd = buildRawIndex(data.vectors, DIMENSION);
console.log(
  `baseline again: hnswlib adds ${EVENTS} vectors in ${baselineEnd.build_s} s (${baselineEnd.per_s}/s)`,
);

const indexedRatio = embedded.indexed_after_s / baseline.build_s;
console.log(
  `embedded: ${embedded.throughput} events/s acknowledged (goal 20,000; whole job ${embedded.job_throughput}, its first ${WARMUP} from a cold start ${embedded.cold_throughput ?? '-'}), indexed after ${embedded.indexed_after_s} s = ${indexedRatio.toFixed(2)} × the raw build (goal 1.25); distributed: ${distributed?.throughput ?? distributedNote} (goal 10,000)`,
);
printResult({
  bench: 'vss-ingest',
  ratio: round(embedded.throughput / baseline.per_s),
  throughput: embedded.throughput,
  baseline_throughput: baseline.per_s,
  p50_ms: embedded.batch_p50_ms,
  p99_ms: embedded.batch_p99_ms,
  indexed_after_s: embedded.indexed_after_s,
  baseline_build_s: baseline.build_s,
  distributed_throughput: distributed?.throughput ?? null,
  warmup_events: WARMUP,
  job_throughput: embedded.job_throughput,
  cold_throughput: embedded.cold_throughput ?? null,
  distributed_job_throughput: distributed?.job_throughput ?? null,
  distributed_cold_throughput: distributed?.cold_throughput ?? null,
  distributed_note: distributedNote ?? null,
  indexed_over_build: round(indexedRatio),
  baseline_build_s_end: baselineEnd.build_s,
  goals_met: {
    embedded_20k: embedded.throughput >= 20_000,
    indexed_within_1_25: indexedRatio <= 1.25,
    distributed_10k: distributed === undefined ? null : distributed.throughput >= 10_000,
  },
  events: EVENTS,
  dimension: DIMENSION,
  partitions: PARTITIONS,
  load_average: load(),
  embedded,
  embedded_floors: embeddedFloors ?? null,
  distributed: distributed ?? null,
  distributed_floors: distributedFloors ?? null,
});
