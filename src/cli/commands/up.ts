import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { GrpcServer, protoRoot } from '../../platform/grpc/index.js';
import { HttpServer } from '../../platform/http/index.js';
import { Platform } from '../../platform/platform.js';
import { loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { CliContext } from '../main.js';
import { openAllPorts } from './ports.js';

function protoFiles(dir = protoRoot): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return protoFiles(path);
    return entry.name.endsWith('.proto') ? [relative(protoRoot, path)] : [];
  });
}

/**
 * Starts every part that exists on the configured adapters (embedded by default) and prints where
 * each listens. Parts added by later work register themselves here.
 */
export async function runUp(context: CliContext): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings);
  const { logger, metrics } = platform;
  await openAllPorts(platform);

  const ops = new HttpServer({
    name: 'ops',
    host: settings.host,
    port: settings.metrics.port,
    logger,
    metrics,
    readiness: platform.readiness(),
  });
  const grpc = new GrpcServer({
    name: 'platform',
    host: settings.host,
    port: settings.grpc.port,
    logger,
    metrics,
    auth: {
      tokens: settings.auth.callerTokens,
      idHeader: settings.auth.callerIdHeader,
      tokenHeader: settings.auth.callerTokenHeader,
    },
    maxMessageBytes: settings.grpc.maxMessageBytes,
    reflectionProtos: protoFiles(),
    shutdownGraceMs: settings.grpc.shutdownGraceMs,
  });

  const grpcPort = await grpc.start();
  const opsPort = await ops.start();
  onShutdownSignal(logger, async () => {
    await grpc.stop();
    await ops.stop();
    await platform.close();
  });

  const rows: [string, string][] = [
    ['gRPC (health, reflection)', `${settings.host}:${grpcPort}`],
    ['HTTP /healthz /readyz /metrics', `http://${settings.host}:${opsPort}`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(
    `Lattice is up (${settings.configStore.kind} config, ${settings.queue.kind} queue, ${settings.sql.kind} SQL, ${settings.cache.kind} cache; data in ${settings.dataDir}):`,
  );
  for (const [name, where] of rows) console.log(`  ${name.padEnd(width)}  ${where}`);
  console.log('Ctrl-C stops it, draining in-flight calls.');
}
