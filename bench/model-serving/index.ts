/**
 * The reference model server against onnxruntime-node called directly, on the same model and inputs
 * in one run: each call scores 256 rows of the demo `ranker` (16 FP32 features → sigmoid score).
 * Product: a KServe v2 ModelInfer over loopback gRPC (client and server in this process, raw
 * contents, default settings: no batching). Baseline: `session.run` on a session created the same
 * way. The ratio is the share of the bare runtime's throughput the server keeps; a second product
 * run with dynamic batching on is reported as `batched_*`. BENCH_ROWS, BENCH_CALLS and
 * BENCH_CONCURRENCY change rows per call (default 256), calls (5,000) and calls in flight (8).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as ort from 'onnxruntime-node';
import { GRPCInferenceServiceClient, ModelInferRequest } from '../../src/gen/inference/grpc_service.js';
import { demoRankerFeatures, writeDemoModels } from '../../src/modelserver/demo-models.js';
import { startModelServer } from '../../src/modelserver/modelserver-server.js';
import { seededWeights } from '../../src/modelserver/onnx-builder.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 256);
const K = demoRankerFeatures;
const CALLS = Number(process.env.BENCH_CALLS ?? 5_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ROUNDS = 3;
const BATCH_WINDOW_MS = 1;

const repository = mkdtempSync(join(tmpdir(), 'lattice-bench-models-'));
const written = writeDemoModels(repository);
const model = written.filter((m) => m.name === 'ranker').sort((a, b) => b.version - a.version)[0]!;
const features = seededWeights(ROWS * K, 7);

// Baseline: the bare runtime, one session, the same file and options as the server uses.
const session = await ort.InferenceSession.create(model.path, { executionProviders: ['cpu'] });
const runDirect = async (): Promise<Float32Array> => {
  const result = await session.run({ features: new ort.Tensor('float32', features, [ROWS, K]) });
  return result.score!.data as Float32Array;
};

const request = ModelInferRequest.fromPartial({
  modelName: 'ranker',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [ROWS, K] }],
  rawInputContents: [Buffer.from(features.buffer, features.byteOffset, features.byteLength)],
});

function inferOver(client: GRPCInferenceServiceClient): () => Promise<Float32Array> {
  return () =>
    new Promise((resolve, reject) =>
      client.modelInfer(request, (err, response) => {
        if (err) return reject(err);
        const raw = response.rawOutputContents[0]!;
        resolve(new Float32Array(Uint8Array.from(raw).buffer));
      }),
    );
}

async function serve(batchWindowMs: number) {
  const server = await startModelServer({
    repository,
    logger: createLogger('bench', { level: 'silent' }),
    batchWindowMs,
    maxBatchRows: ROWS * CONCURRENCY,
  });
  const client = new GRPCInferenceServiceClient(
    `127.0.0.1:${server.port}`,
    grpc.credentials.createInsecure(),
  );
  return { server, client, once: inferOver(client) };
}

async function run(once: () => Promise<unknown>): Promise<RunStats> {
  await measure(500, CONCURRENCY, once); // warm-up
  return measure(CALLS, CONCURRENCY, once);
}

const plain = await serve(0);
const batched = await serve(BATCH_WINDOW_MS);

// The server must answer what the runtime answers before its speed means anything.
const [direct, served] = [await runDirect(), await plain.once()];
const maxDiff = direct.reduce((max, v, i) => Math.max(max, Math.abs(v - served[i]!)), 0);
if (served.length !== ROWS || maxDiff > 0)
  throw new Error(`server and runtime disagree (max diff ${maxDiff})`);

const directRuns: RunStats[] = [];
const serverRuns: RunStats[] = [];
const batchedRuns: RunStats[] = [];
for (let r = 0; r < ROUNDS; r++) {
  directRuns.push(await run(runDirect));
  serverRuns.push(await run(plain.once));
  batchedRuns.push(await run(batched.once));
}
for (const { server, client } of [plain, batched]) {
  client.close();
  await server.stop();
}
await session.release();
rmSync(repository, { recursive: true, force: true });

const d = medianRun(directRuns);
const s = medianRun(serverRuns);
const b = medianRun(batchedRuns);
const line = (name: string, x: RunStats) =>
  console.log(
    `${name.padEnd(28)} ${Math.round(x.throughput)} calls/s (${Math.round(x.throughput * ROWS)} rows/s), p50 ${x.p50_ms.toFixed(3)} ms, p99 ${x.p99_ms.toFixed(3)} ms`,
  );
line('onnxruntime-node direct:', d);
line('model server (gRPC):', s);
line(`model server, batching ${BATCH_WINDOW_MS} ms:`, b);
printResult({
  bench: 'model-serving',
  ratio: round(s.throughput / d.throughput),
  throughput: round(s.throughput, 1),
  baseline_throughput: round(d.throughput, 1),
  p50_ms: round(s.p50_ms),
  p99_ms: round(s.p99_ms),
  baseline_p50_ms: round(d.p50_ms),
  baseline_p99_ms: round(d.p99_ms),
  batched_ratio: round(b.throughput / d.throughput),
  batched_throughput: round(b.throughput, 1),
  batched_p50_ms: round(b.p50_ms),
  batched_p99_ms: round(b.p99_ms),
  rows_per_call: ROWS,
  features: K,
  calls: CALLS,
  concurrency: CONCURRENCY,
});
