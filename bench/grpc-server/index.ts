/**
 * The platform gRPC server (metrics and caller-auth interceptors, promise handlers with deadline
 * signals, one error mapping) against a bare grpc-js server answering the same echo, in one run.
 * The ratio is the share of bare throughput the helper keeps; every Lattice service pays this overhead.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { GrpcServer, listen } from '../../src/platform/grpc/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { measure, medianRun, printResult, type RunStats, round } from '../support/stats.js';

const echoProto = fileURLToPath(new URL('../../test/fixtures/proto/echo.proto', import.meta.url));
const pkg = grpc.loadPackageDefinition(loadSync(echoProto)) as unknown as {
  lattice: { test: { Echo: grpc.ServiceClientConstructor } };
};
const Echo = pkg.lattice.test.Echo;
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = 3;
const text = 'x'.repeat(256);

type Say = (
  req: object,
  md: grpc.Metadata,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;

async function startBare(): Promise<{ port: number; stop: () => void }> {
  const server = new grpc.Server();
  server.addService(Echo.service, {
    Say: (call: grpc.ServerUnaryCall<{ text: string }, unknown>, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, { text: call.request.text }),
  });
  return { port: await listen(server), stop: () => server.forceShutdown() };
}

async function startPlatform(): Promise<{ port: number; stop: () => Promise<void> }> {
  const server = new GrpcServer({
    name: 'bench',
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('bench', { level: 'silent' }),
    metrics: new Metrics(),
    auth: { tokens: { bench: 'token' }, idHeader: 'caller-id', tokenHeader: 'caller-token' },
  });
  server.addUnaryService(Echo.service, {
    Say: async (request: { text: string }) => ({ text: request.text }),
  });
  return { port: await server.start(), stop: () => server.stop(1000) };
}

async function run(port: number): Promise<RunStats> {
  const client = new Echo(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set('caller-id', 'bench');
  md.set('caller-token', 'token');
  const say = (client as unknown as { Say: Say }).Say.bind(client);
  const once = () =>
    new Promise((resolve, reject) => say({ text }, md, (e, r) => (e ? reject(e) : resolve(r))));
  await measure(2000, CONCURRENCY, once); // warm-up
  const stats = await measure(CALLS, CONCURRENCY, once);
  client.close();
  return stats;
}

const bare = await startBare();
const platform = await startPlatform();
const bareRuns: RunStats[] = [];
const platformRuns: RunStats[] = [];
for (let round_ = 0; round_ < ROUNDS; round_++) {
  bareRuns.push(await run(bare.port));
  platformRuns.push(await run(platform.port));
}
bare.stop();
await platform.stop();
const b = medianRun(bareRuns);
const p = medianRun(platformRuns);
console.log(
  `bare grpc-js:    ${Math.round(b.throughput)} calls/s, p50 ${b.p50_ms.toFixed(3)} ms, p99 ${b.p99_ms.toFixed(3)} ms`,
);
console.log(
  `platform server: ${Math.round(p.throughput)} calls/s, p50 ${p.p50_ms.toFixed(3)} ms, p99 ${p.p99_ms.toFixed(3)} ms`,
);
printResult({
  bench: 'grpc-server',
  ratio: round(p.throughput / b.throughput),
  throughput: round(p.throughput, 1),
  baseline_throughput: round(b.throughput, 1),
  p50_ms: round(p.p50_ms),
  p99_ms: round(p.p99_ms),
  baseline_p50_ms: round(b.p50_ms),
  baseline_p99_ms: round(b.p99_ms),
  calls: CALLS,
  concurrency: CONCURRENCY,
});
