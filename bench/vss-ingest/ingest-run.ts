/**
 * One product measurement of bench/vss-ingest: the workload's events and EOF markers are published
 * to the stack's ingestion topic first (publish rate reported apart), then the vss consumers start
 * and the clock with them. `ack_s` ends when the group's lag reaches zero (every event and
 * marker acknowledged, i.e. in the store and the vector DB's log); `indexed_after_s` when the
 * collection reports every point indexed. Afterwards the store, the collection, the job record and
 * the dead-letter topic are checked, so a fast run that lost events cannot pass.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Counter } from 'prom-client';
import { collectionName } from '../../src/vss/model/index.js';
import { summarizeProfile } from './profile-summary.js';
import { batchLatency, type Stack, startConsumers } from './stack.js';
import { StageClock } from './stage-clock.js';
import { type CpuPerEvent, cpuPerEvent, cpuSeconds } from './thread-cpu.js';
import { untilSettled } from './until-settled.js';
import {
  candidateId,
  eofBytes,
  eventBytes,
  JOB_ID,
  MODEL,
  registerModel,
  tablesOf,
  VERSION,
  vectorOf,
  type Workload,
} from './workload.js';

type CpuShare = ReturnType<typeof summarizeProfile>[number];

const PUBLISH_IN_FLIGHT = 512;
const POLL_MS = 10;

export interface IngestFigures {
  publish_per_s: number;
  /**
   * Acknowledged messages per second until the last acknowledgement, from consumption start or,
   * with a warm-up, from the moment its messages were settled (the steady state).
   */
  throughput: number;
  /** Seconds of that window. */
  ack_s: number;
  /** The whole job: events per second from consumption start to the last acknowledgement. */
  job_throughput: number;
  /** With a warm-up: its rate from the consumers' start, a cold process's. */
  cold_throughput?: number;
  warmup_messages?: number;
  indexed_after_s: number;
  /** Points indexed when the last event was acknowledged. */
  indexed_at_last_ack: number;
  /** The runner's batch latency (parse to last settle), interpolated in its histogram's buckets. */
  batch_p50_ms: number;
  batch_p99_ms: number;
  batches: number;
  /** Seconds inside each instrumented call, summed over calls (partitions overlap). */
  stages: Record<string, { calls: number; s: number }>;
  /** Points the vector DB indexed per second between the last acknowledgement and the last point. */
  index_per_s_after_ack: number;
  /**
   * CPU µs per message over the `throughput` window: the main thread's, all the process's threads',
   * each other thread's, and minor page faults (Linux; absent elsewhere). Steadier than throughput on a loaded machine.
   */
  cpu_per_event_until_ack?: CpuPerEvent;
  /** With BENCH_CPU_PROFILE: the main thread's self time by component until the last ack, and after. */
  cpu_until_ack?: CpuShare[];
  cpu_after_ack?: CpuShare[];
  check: {
    rows: number;
    points: number;
    job: string;
    counts: unknown;
    dead_letters: number;
    vectors_equal: boolean;
  };
}

async function publishAll(stack: Stack, load: Workload, events: number): Promise<number> {
  const messages = Array.from({ length: events }, (_, i) =>
    eventBytes(load.entity, i, vectorOf(i, load.dimension).text),
  );
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < events; i = next++) {
      await stack.queue.publish(stack.topic, messages[i]!, { key: candidateId(i) });
      messages[i] = undefined as never; // the queue holds its own copy
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_IN_FLIGHT }, worker));
  // Each partition's marker after all of that partition's events.
  for (let p = 0; p < load.partitions; p++) {
    await stack.queue.publish(stack.topic, eofBytes(load.entity, p), { partition: p });
  }
  return events / ((performance.now() - started) / 1000);
}

async function lagOf(stack: Stack): Promise<number> {
  const lag = await stack.queue.groupLag(stack.topic, stack.group);
  return lag.reduce((n, p) => n + p.pending + p.unsettled, 0);
}

const SETTLED_OUTCOMES = new Set(['applied', 'rejected', 'dead_lettered']);

/** Messages of the stack's topic the consumers have settled an outcome for, from their metrics. */
async function handledOf(stack: Stack): Promise<number> {
  const counter = stack.platform.metrics.registry.getSingleMetric('vss_consumer_events_total') as
    | Counter<string>
    | undefined;
  let handled = 0;
  for (const { labels, value } of (await counter?.get())?.values ?? []) {
    if (labels.topic === stack.topic && SETTLED_OUTCOMES.has(String(labels.outcome))) handled += value;
  }
  return handled;
}

/** Polls until the consumers have settled `count` messages of the stack's topic. */
async function untilHandled(stack: Stack, count: number): Promise<number> {
  for (;;) {
    const handled = await handledOf(stack);
    if (handled >= count) return handled;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Consumes the workload and measures it. With `warmupEvents`, the acknowledged rate and the CPU
 * figures cover the job after its first `warmupEvents` messages are settled: the steady state of a
 * running consumer, which a fresh process reaches only once V8 has compiled the consumers' code
 * and PGlite's hot WebAssembly (~7 µs of CPU per event over a cold process's first 100,000). The
 * whole job's rate and the warm-up's are reported too; `indexed_after_s` always counts from the
 * consumers' start.
 */
export async function measureIngestion(
  stack: Stack,
  load: Workload,
  storeId: number,
  warmupEvents = 0,
): Promise<IngestFigures> {
  const events = load.vectors.length;
  await registerModel(stack.store, load.entity, load.dimension, storeId);
  const publishRate = await publishAll(stack, load, events);
  const stats = await stack.queue.topicStats(stack.topic);
  console.log(
    `  ${stack.mode}: published ${events} events + ${load.partitions} EOF markers at ${Math.round(publishRate)}/s (${(stats.bytes / 1e6).toFixed(1)} MB on the topic)`,
  );

  const clock = new StageClock();
  clock.wrap(stack.sql, 'query', 'sql.query');
  clock.wrap(stack.sql, 'transaction', 'sql.transaction');
  clock.wrap(stack.vectorDb, 'upsert', 'vectordb.upsert');
  clock.wrap(stack.vectorDb, 'getPoints', 'vectordb.getPoints');

  const collection = collectionName(load.entity, MODEL, VERSION);
  const messages = events + load.partitions;
  const consumersStarted = performance.now();
  const consumers = await startConsumers(stack);
  let handledAtStart = 0;
  let coldThroughput: number | undefined;
  if (warmupEvents > 0) {
    handledAtStart = await untilHandled(stack, Math.min(warmupEvents, messages));
    coldThroughput = Math.round(handledAtStart / ((performance.now() - consumersStarted) / 1000));
  }
  const profiler = await startProfile();
  const cpuAtStart = cpuSeconds();
  const started = performance.now();
  // Partitions run unevenly, so the window holds exactly the messages settled after it started.
  const windowMessages = messages - handledAtStart;
  // Every event and marker handled, then every acknowledgement recorded (until-settled.ts).
  await untilSettled({
    handled: () => handledOf(stack),
    expected: messages,
    lag: () => lagOf(stack),
    pollMs: POLL_MS,
  });
  const ackSeconds = (performance.now() - started) / 1000;
  const jobSeconds = (performance.now() - consumersStarted) / 1000;
  const cpuPerEventUntilAck = cpuPerEvent(cpuAtStart, cpuSeconds(), windowMessages);
  const cpuUntilAck = await profiler?.stop(`${stack.mode}-until-ack`);
  const atAck = await stack.vectorDb.collectionInfo(collection);
  const catchUp = await startProfile();
  const cpuNote =
    cpuPerEventUntilAck === undefined
      ? ''
      : `; CPU per event ${cpuPerEventUntilAck.main_us} µs main thread, ${cpuPerEventUntilAck.all_us} µs all threads (the others ${cpuPerEventUntilAck.other_threads_us.join(', ')}); minor page faults per 1,000 events ${cpuPerEventUntilAck.faults_per_1000.main} main thread, the others ${cpuPerEventUntilAck.faults_per_1000.others.join(', ')}`;
  console.log(
    `  ${stack.mode}: ${events} events acknowledged in ${jobSeconds.toFixed(2)} s (${Math.round(events / jobSeconds)}/s)${warmupEvents > 0 ? `: the first ${handledAtStart} at ${coldThroughput}/s from a cold start, the other ${windowMessages} in ${ackSeconds.toFixed(2)} s (${Math.round(windowMessages / ackSeconds)}/s)` : ''}, ${atAck.indexedPoints} indexed then${cpuNote}`,
  );
  for (;;) {
    const info = await stack.vectorDb.collectionInfo(collection);
    if (info.indexedPoints >= events) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const indexedSeconds = (performance.now() - consumersStarted) / 1000;
  const stages = clock.summary();
  const cpuAfterAck = await catchUp?.stop(`${stack.mode}-after-ack`);
  for (const [window, shares] of [
    ['until the last ack', cpuUntilAck],
    ['after it, until indexed', cpuAfterAck],
  ] as const) {
    if (shares === undefined) continue;
    console.log(`    main thread ${window}:`);
    for (const { category, s, share } of shares) {
      if (share >= 0.01)
        console.log(
          `      ${s.toFixed(2).padStart(7)} s ${(100 * share).toFixed(1).padStart(5)}%  ${category}`,
        );
    }
  }
  await consumers.stop();

  const check = await verify(stack, load, collection);
  console.log(
    `  ${stack.mode}: all ${events} indexed after ${indexedSeconds.toFixed(2)} s; check ${JSON.stringify(check)}`,
  );
  const batches = await batchLatency(stack);
  return {
    publish_per_s: Math.round(publishRate),
    throughput: Math.round(windowMessages / ackSeconds),
    ack_s: Number(ackSeconds.toFixed(3)),
    job_throughput: Math.round(events / jobSeconds),
    ...(coldThroughput === undefined
      ? {}
      : { cold_throughput: coldThroughput, warmup_messages: handledAtStart }),
    indexed_after_s: Number(indexedSeconds.toFixed(3)),
    indexed_at_last_ack: atAck.indexedPoints,
    batch_p50_ms: batches.p50,
    batch_p99_ms: batches.p99,
    batches: batches.count,
    stages,
    index_per_s_after_ack: Math.round((events - atAck.indexedPoints) / (indexedSeconds - jobSeconds)),
    ...(cpuPerEventUntilAck === undefined ? {} : { cpu_per_event_until_ack: cpuPerEventUntilAck }),
    ...(cpuUntilAck === undefined ? {} : { cpu_until_ack: cpuUntilAck, cpu_after_ack: cpuAfterAck }),
    check,
  };
}

/**
 * With BENCH_CPU_PROFILE=<dir>: a CPU profile of this process, written on `stop(name)` to
 * <dir>/<name>.cpuprofile (open it in Chrome DevTools or speedscope) and summarised by component.
 * With BENCH_HEAP_PROFILE=<dir>: a sampling heap profile of the main thread's allocations over the
 * same window, those the collector freed included (where the scavenges' work comes from), written
 * to <dir>/<name>.heapprofile.
 */
async function startProfile(): Promise<{ stop(name: string): Promise<CpuShare[] | undefined> } | undefined> {
  const cpuDir = process.env.BENCH_CPU_PROFILE;
  const heapDir = process.env.BENCH_HEAP_PROFILE;
  if (!cpuDir && !heapDir) return undefined;
  const session = new Session();
  session.connect();
  if (cpuDir) {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
  }
  if (heapDir) {
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never);
  }
  return {
    async stop(name) {
      let shares: CpuShare[] | undefined;
      if (cpuDir) {
        const { profile } = await session.post('Profiler.stop');
        mkdirSync(cpuDir, { recursive: true });
        writeFileSync(join(cpuDir, `${name}.cpuprofile`), JSON.stringify(profile));
        shares = summarizeProfile(profile);
      }
      if (heapDir) {
        const { profile } = await session.post('HeapProfiler.stopSampling');
        mkdirSync(heapDir, { recursive: true });
        writeFileSync(join(heapDir, `${name}.heapprofile`), JSON.stringify(profile));
      }
      session.disconnect();
      return shares;
    },
  };
}

/** What a correct run leaves: every row and point, the job complete with exact counts, no dead letters. */
async function verify(stack: Stack, load: Workload, collection: string): Promise<IngestFigures['check']> {
  const events = load.vectors.length;
  const rows = await stack.store.embeddings.count(tablesOf(load.entity).embeddings, MODEL, VERSION);
  const info = await stack.vectorDb.collectionInfo(collection);
  const job = await stack.store.ingestion.find({
    entity: load.entity,
    modelName: MODEL,
    version: VERSION,
    jobId: JOB_ID,
  });
  const deadLetters = (await stack.queue.topicStats(`${stack.topic}-dlq`)).messages;
  const sample = Array.from({ length: 200 }, (_, k) => Math.floor((k * events) / 200));
  const points = await stack.vectorDb.getPoints(
    collection,
    sample.map((i) => load.ids[i]!),
    { withVector: true, withPayload: false },
  );
  const vectorsEqual = points.every((point, k) => {
    const expected = load.vectors[sample[k]!]!;
    return point?.vector?.every((x, d) => x === expected[d]) === true;
  });
  const check = {
    rows,
    points: info.points,
    job: job?.status ?? 'missing',
    counts: job?.counts ?? null,
    dead_letters: deadLetters,
    vectors_equal: vectorsEqual,
  };
  if (
    rows !== events ||
    info.points !== events ||
    job?.status !== 'COMPLETE' ||
    deadLetters !== 0 ||
    !vectorsEqual
  ) {
    throw new Error(`${stack.mode}: the ingestion is not complete or not exact: ${JSON.stringify(check)}`);
  }
  return check;
}
