/**
 * bench/vss-onboard (issue 15): the whole model lifecycle, reset-model → READY, for 100,000 × 128-d
 * embeddings from a Parquet directory on embedded defaults, against the raw index library building
 * the same vectors single-threaded in the same run.
 *
 * The stack is what `lattice vss` starts (src/vss/start-vss.ts: the consumers and admin: HTTP API,
 * operations engine, file job runner) on one Platform over a temporary data directory (journaled
 * in-process queue, PGlite, embedded vector DB). The model and two variants (one admitting all
 * candidates, one a third of them) are registered over HTTP, then the clock runs from `POST
 * /reset-model` until `GET /operations/{id}` says SUCCEEDED: the job reads the Parquet files and
 * publishes, the consumers write the store and the collection, indexing reaches 95 %, both variants
 * flip. `ratio` = raw build seconds ÷ reset-to-READY seconds (goal ≥ 0.6: the lifecycle costs at
 * most two thirds more than the index build alone); `throughput` = embeddings ÷ reset-to-READY
 * seconds, `baseline_throughput` = the raw library's adds per second. Step durations come from the
 * operation's step changes, polled every 100 ms.
 *
 * `npm run bench -- vss-onboard`; env BENCH_ROWS (100000), BENCH_DIMENSION (128), BENCH_FILES (10).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/platform/logging/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { startVss } from '../../src/vss/index.js';
import { adminCall } from '../../test/support/admin-http.js';
import { writeParquetFile } from '../../test/vss/admin/jobs/training-data.js';
import { printResult, round } from '../support/stats.js';
import { buildRawIndex } from '../vss-ingest/raw-index.js';
import { vectorOf } from '../vss-ingest/workload.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const DIMENSION = Number(process.env.BENCH_DIMENSION ?? 128);
const FILES = Number(process.env.BENCH_FILES ?? 10);
const load = () => loadavg().map((x) => Number(x.toFixed(2)));

/** An admin API call that must succeed: its body. */
async function api(base: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  const { status, json } = await adminCall(base, method, path, body);
  if (status >= 300) throw new Error(`${method} ${path}: ${status} ${JSON.stringify(json)}`);
  return json;
}

console.log(
  `vss-onboard: ${ROWS} × ${DIMENSION}-d in ${FILES} Parquet files; load average ${load().join(' ')}`,
);
const vectors = Array.from({ length: ROWS }, (_, i) => vectorOf(i, DIMENSION).vector);
const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-onboard-'));
const training = join(dir, 'training');
const per = Math.ceil(ROWS / FILES);
for (let f = 0; f < FILES; f++) {
  const rows = [];
  for (let n = f * per; n < Math.min(ROWS, (f + 1) * per); n++) {
    rows.push({ id: `c${n}`, emb: Array.from(vectors[n]!), flag: true, brand: ['a', 'b', 'c'][n % 3]! });
  }
  writeParquetFile(join(training, `part-${String(f).padStart(3, '0')}.parquet`), rows, {
    rowGroupSize: 8192,
  });
}

const baseline = buildRawIndex(vectors, DIMENSION);
console.log(`baseline: hnswlib adds ${ROWS} vectors in ${baseline.build_s} s (${baseline.per_s}/s)`);

const settings = loadSettings({
  env: { LATTICE_DATA_DIR: join(dir, 'data') },
  // The admin API reads training data only under its roots: the bench's Parquet files are one.
  overrides: { vss: { admin: { port: 0, pollIntervalMs: 100, trainingDataRoots: [training] } } },
});
const platform = new Platform(settings, { logger: createLogger('bench', { level: 'warn' }) });
const vss = await startVss(platform, { consumers: {}, admin: { port: 0 } });
const base = `http://127.0.0.1:${vss.admin!.port}`;
let readySeconds: number;
const steps: Record<string, number> = {};
try {
  await api(base, 'POST', '/register-store', {
    store_id: 1,
    entity: 'bench',
    db_conf_id: 'main',
    embeddings_table: 'bench_embeddings',
    aggregator_table: 'bench_attributes',
  });
  await api(base, 'POST', '/register-model', {
    entity: 'bench',
    model_name: 'm',
    ingestion_column_mapping: { id_column: 'id', embedding_column: 'emb', to_be_indexed_column: 'flag' },
    embedding_store_enabled: true,
    embedding_store_ttl: 0,
    mq_id: 1,
    model_config: { distance_function: 'COSINE', vector_dimension: DIMENSION },
    store_id: 1,
    training_data_path: training,
  });
  for (const [variant, criteria] of [
    ['all', []],
    ['brand_a', [{ column_name: 'brand', filter_value: 'a', default_value: '' }]],
  ] as const) {
    await api(base, 'POST', '/register-variant', {
      entity: 'bench',
      model_name: 'm',
      variant,
      vss_filter: { criteria },
      vectordb_type: 'EMBEDDED',
      vectordb_config: {},
      job_frequency: 'FREQ_1W',
    });
  }
  const started = performance.now();
  const reset = await api(base, 'POST', '/reset-model', { entity: 'bench', model_name: 'm' });
  let step = '';
  let stepStarted = started;
  let jobDone: number | undefined;
  for (;;) {
    const op = await api(base, 'GET', `/operations/${String(reset.operation_id)}`);
    const now = performance.now();
    const job = (op.result as { job?: { state?: string } } | null)?.job;
    if (jobDone === undefined && job?.state === 'SUCCEEDED') {
      jobDone = (now - started) / 1000;
      steps.job_published_all_at = round(jobDone);
    }
    if (op.step !== step) {
      if (step) steps[step] = round((now - stepStarted) / 1000);
      step = String(op.step);
      stepStarted = now;
    }
    if (op.status === 'FAILED') throw new Error(`reset failed: ${String(op.last_error)}`);
    if (op.status === 'SUCCEEDED') {
      readySeconds = (now - started) / 1000;
      steps[step] = round((now - stepStarted) / 1000);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const model = (await api(base, 'GET', '/models/bench/m')) as {
    variants: { variant: string; state: string }[];
  };
  const states = model.variants.map((v) => `${v.variant} ${v.state}`).join(', ');
  console.log(`reset → READY in ${readySeconds.toFixed(2)} s (${states}); steps ${JSON.stringify(steps)}`);
} finally {
  await vss.stop();
  await platform.close();
  rmSync(dir, { recursive: true, force: true });
}

const baselineEnd = buildRawIndex(vectors, DIMENSION);
console.log(`baseline again: ${baselineEnd.build_s} s (${baselineEnd.per_s}/s)`);
const ratio = baseline.build_s / readySeconds;
console.log(`ratio ${ratio.toFixed(3)} (goal ≥ 0.6)`);
printResult({
  bench: 'vss-onboard',
  ratio: round(ratio),
  throughput: Math.round(ROWS / readySeconds),
  baseline_throughput: baseline.per_s,
  p50_ms: round(readySeconds * 1000),
  p99_ms: round(readySeconds * 1000),
  reset_to_ready_s: round(readySeconds),
  baseline_build_s: baseline.build_s,
  baseline_build_s_end: baselineEnd.build_s,
  steps_s: steps,
  goal_met: ratio >= 0.6,
  rows: ROWS,
  dimension: DIMENSION,
  files: FILES,
  load_average: load(),
});
