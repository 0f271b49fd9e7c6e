/**
 * Ingestion into the embedded vector DB with and without its write-ahead log: 100,000 random 128-d
 * points upserted in calls of 500 with 4 calls in flight, as vss consumers write. The product run
 * acknowledges each call once its log record is fdatasynced (group commit); the baseline, in the same
 * run, is the same database on a data directory with the log off (`wal: false`: snapshots only,
 * acknowledged as soon as applied in memory). HNSW indexing runs in the background during both and
 * is not waited for. Rounds alternate between the two and each figure is the median of its rounds.
 * The goal (vss, issue 14): at least 20,000 acknowledged points per second with the log.
 *
 * `npm run bench -- vss-wal` (env BENCH_POINTS, BENCH_BATCH, BENCH_IN_FLIGHT, BENCH_ROUNDS;
 * BENCH_HOLD_INDEXING=1 holds indexing in both, to see the log's own cost: the baseline's calls never
 * yield to the event loop, so its indexer gets no turn anyway).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seededRandom } from '../../src/platform/random.js';
import { EmbeddedVectorDb, type PointInput } from '../../src/platform/vectordb/index.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';

const POINTS = Number(process.env.BENCH_POINTS ?? 100_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HOLD_INDEXING = process.env.BENCH_HOLD_INDEXING === '1';
const DIMENSION = 128;

/** Seeded, so every run upserts the same points. */
function batches(): PointInput[][] {
  const next = seededRandom(2463534242);
  const random = () => next() - 0.5;
  const all: PointInput[][] = [];
  for (let start = 0; start < POINTS; start += BATCH) {
    const batch: PointInput[] = [];
    for (let i = start; i < Math.min(POINTS, start + BATCH); i++) {
      const vector = new Float32Array(DIMENSION);
      for (let d = 0; d < DIMENSION; d++) vector[d] = random();
      batch.push({
        id: `candidate-${i}`,
        vector,
        payload: { to_be_indexed_organic: true, category: `c${i % 20}` },
      });
    }
    all.push(batch);
  }
  return all;
}

interface Round {
  stats: RunStats;
  pointsPerSecond: number;
  indexedAtLastAck: number;
}

async function ingest(work: PointInput[][], wal: boolean): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-wal-'));
  const db = await EmbeddedVectorDb.open({ dir, wal, snapshotIntervalMs: 0 });
  try {
    await db.createCollection({ name: 'bench', dimension: DIMENSION, distance: 'COSINE' });
    if (HOLD_INDEXING) db.pauseIndexing('bench');
    const stats = await measure(work.length, IN_FLIGHT, (i) => db.upsert('bench', work[i]!));
    const { indexedPoints } = await db.collectionInfo('bench');
    return { stats, pointsPerSecond: POINTS / stats.seconds, indexedAtLastAck: indexedPoints };
  } finally {
    // Without snapshotting a backlog of unindexed points: only the ingestion is measured.
    db.pauseIndexing('bench');
    await db.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(`${dir}.lock`, { force: true });
  }
}

const work = batches();
const withLog: Round[] = [];
const withoutLog: Round[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const wal of round % 2 === 0 ? [true, false] : [false, true]) {
    const result = await ingest(work, wal);
    (wal ? withLog : withoutLog).push(result);
    console.log(
      `round ${round + 1}, ${wal ? 'write-ahead log' : 'no log (baseline)'}: ${Math.round(result.pointsPerSecond)} acknowledged points/s, call p50 ${result.stats.p50_ms.toFixed(1)} ms p99 ${result.stats.p99_ms.toFixed(1)} ms, ${result.indexedAtLastAck} of ${POINTS} indexed at the last acknowledgement`,
    );
  }
}

const median = (rounds: Round[]) => {
  const stats = medianRun(rounds.map((r) => r.stats));
  return rounds.find((r) => r.stats === stats)!;
};
const product = median(withLog);
const baseline = median(withoutLog);
console.log(
  `${POINTS} points × ${DIMENSION}, calls of ${BATCH}, ${IN_FLIGHT} in flight, median of ${ROUNDS}: ${Math.round(product.pointsPerSecond)} acknowledged points/s with the log, ${Math.round(baseline.pointsPerSecond)} without`,
);
printResult({
  bench: 'vss-wal',
  ratio: round(product.pointsPerSecond / baseline.pointsPerSecond),
  throughput: Math.round(product.pointsPerSecond),
  baseline_throughput: Math.round(baseline.pointsPerSecond),
  p50_ms: round(product.stats.p50_ms),
  p99_ms: round(product.stats.p99_ms),
  acknowledged_points_per_s: Math.round(product.pointsPerSecond),
  baseline_p99_ms: round(baseline.stats.p99_ms),
  indexed_at_last_ack: product.indexedAtLastAck,
});
