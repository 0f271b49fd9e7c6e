import { registerConsole } from '../../console/index.js';
import { registerModelStatusRoute } from '../../orchestrator/api/index.js';
import { registerModelConsoleRoutes } from '../../orchestrator/console/index.js';
import { startOrchestratorPart } from '../../orchestrator/index.js';
import { ApiAuth, HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { Platform } from '../../platform/platform.js';
import { apiAuthOptions, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { Invocation } from '../command-kit.js';
import { checkExposure } from '../exposure.js';
import { acceptsConnections } from '../port-check.js';
import { registerRpcRoutes } from '../rpc-gateway.js';
import type { OrchestratorOptions } from './orchestrator.command.js';

/** `lattice orchestrator`: the orchestrator service alone, with its ops HTTP server (/healthz, /readyz, /metrics, /models). */
export async function runOrchestrator({ options, context }: Invocation<OrchestratorOptions>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  checkExposure(settings, [
    { name: 'orchestrator gRPC', auth: 'callerTokens' },
    { name: 'ops HTTP /api (console, HTTP/JSON)', auth: 'callerTokens' },
  ]);
  serveTlsByDefault(tlsOf(settings).server);
  const platform = new Platform(settings);
  const part = await startOrchestratorPart(platform, options.port);
  const ops = await HttpServer.create({
    name: 'orchestrator-ops',
    openapi: { title: 'Lattice ops API (lattice orchestrator)' },
    host: settings.host,
    port: options.metricsPort ?? settings.metrics.port,
    logger: platform.logger,
    metrics: platform.metrics,
    readiness: platform.readiness(),
    readinessTimeoutMs: settings.metrics.readyTimeoutMs,
    apiAuth: new ApiAuth(apiAuthOptions(settings, false)),
  });
  registerModelStatusRoute(ops.app).serve(part.modelStatus);
  registerModelConsoleRoutes(ops.app).serve(part.console);
  registerRpcRoutes(ops.app, settings, 'orchestrator').serve(part.port);
  await registerConsole(ops.app, {
    parts: { orchestrator: true, vss: { admin: false, serving: false }, reference: false },
  });
  // /readyz covers this process's own gRPC server too, not only the adapters it uses.
  ops.addReadinessCheck(part.name, acceptsConnections(settings.host, part.port));
  const opsPort = await ops.start();
  part.open?.();
  onShutdownSignal(platform.logger, async () => {
    await part.stop();
    await ops.stop();
    await platform.close();
  });
  for (const [what, where] of part.endpoints) console.log(`${what}  ${where}`);
  console.log(
    `HTTP /healthz /readyz /metrics /models  ${ops.secure ? 'https' : 'http'}://${settings.host}:${opsPort}`,
  );
  console.log(
    `Web console (API docs at /docs)  ${ops.secure ? 'https' : 'http'}://${settings.host}:${opsPort}/`,
  );
}
