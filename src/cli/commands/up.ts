import { startComputePart } from '../../compute/server/index.js';
import { registerConsole, registerVssAdminProxy } from '../../console/index.js';
import { startFeatureStorePart } from '../../featurestore/index.js';
import { startModelServerPart } from '../../modelserver/index.js';
import { registerModelStatusRoute } from '../../orchestrator/api/index.js';
import { registerModelConsoleRoutes } from '../../orchestrator/console/index.js';
import { startOrchestratorPart } from '../../orchestrator/index.js';
import { GrpcServer } from '../../platform/grpc/index.js';
import { ApiAuth, HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { Platform } from '../../platform/platform.js';
import type { RunningPart } from '../../platform/running-part.js';
import {
  apiAuthOptions,
  grpcServerSettings,
  type LoadedSettings,
  loadSettings,
} from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import { startVss } from '../../vss/index.js';
import type { Invocation } from '../command-kit.js';
import {
  seedExampleModel,
  seedRecommenderModel,
  shouldSeedExampleModel,
  writeExampleModels,
} from '../example-model.js';
import { checkExposure, embeddedQueueRoutes } from '../exposure.js';
import { openAllPorts } from '../open-all-ports.js';
import { acceptsConnections, checkPortsFree } from '../port-check.js';
import { registerEmbeddedQueueRoutes } from '../queue-dead-letters-route.js';
import { registerRpcRoutes } from '../rpc-gateway.js';
import { AdminClient } from '../vss-admin/index.js';
import { onboardVssDemo, VSS_DEMO } from '../vss-demo.js';
import type { UpOptions } from './up.command.js';

/**
 * Starts every part that exists on the configured adapters (embedded by default) and prints where
 * each listens. Parts added by later work register themselves here.
 */
export async function runUp({ options, context }: Invocation<UpOptions>): Promise<void> {
  const flags = { seedDemo: options.seedDemo === true };
  const settings = loadSettings({ file: context.settingsFile });
  // The feature store, model server and compute of lattice up take no caller tokens (the orchestrator
  // calls them without); the ops server's embedded-queue routes read and publish queue data.
  checkExposure(settings, [
    { name: 'orchestrator gRPC', auth: 'callerTokens' },
    { name: 'vss serving gRPC', auth: 'callerTokens' },
    { name: 'vss admin HTTP', auth: 'apiKeys' },
    { name: 'feature store gRPC', auth: 'none' },
    { name: 'model server gRPC', auth: 'none' },
    { name: 'compute gRPC', auth: 'none' },
    { name: 'ops HTTP /api (console, HTTP/JSON)', auth: 'callerTokens' },
    ...embeddedQueueRoutes(settings),
  ]);
  // TLS files are checked before anything binds; every server of the process then serves them.
  const tls = tlsOf(settings);
  serveTlsByDefault(tls.server);
  const platform = new Platform(settings);
  const { logger, metrics } = platform;
  await checkPortsFree(settings.host, [
    { setting: 'grpc.port', port: settings.grpc.port },
    { setting: 'metrics.port', port: settings.metrics.port },
    { setting: 'featurestore.port', port: settings.featurestore.port },
    { setting: 'modelserver.port', port: settings.modelserver.port },
    { setting: 'compute.port', port: settings.compute.port },
    { setting: 'orchestrator.port', port: settings.orchestrator.port },
    { setting: 'vss.servingPort', port: settings.vss.servingPort },
    { setting: 'vss.admin.port', port: settings.vss.admin.port },
  ]);
  await openAllPorts(platform);

  const ops = await HttpServer.create({
    name: 'ops',
    openapi: { title: 'Lattice ops API (lattice up)' },
    host: settings.host,
    port: settings.metrics.port,
    logger,
    metrics,
    readiness: platform.readiness(),
    readinessTimeoutMs: settings.metrics.readyTimeoutMs,
    apiAuth: new ApiAuth(apiAuthOptions(settings, true)),
  });
  // The embedded queue lives in this process: `lattice logs decode --from-queue`, `lattice vss
  // publish` and `lattice vss dead-letters` beside it reach it here.
  if (settings.queue.kind === 'memory') registerEmbeddedQueueRoutes(ops.app, () => platform.queue());
  // What each model config serves, for `lattice models` beside this process.
  const modelStatus = registerModelStatusRoute(ops.app);
  // The console's model config API (/api/v1/models…).
  const modelConsole = registerModelConsoleRoutes(ops.app);
  // The HTTP/JSON form of the orchestrator's and vss's gRPC services, served once those listen.
  const orchestratorRpc = registerRpcRoutes(ops.app, settings, 'orchestrator');
  const vssRpc = registerRpcRoutes(ops.app, settings, 'vss');
  // The web console at / with /docs; its vss pages reach the admin API once it runs.
  await registerConsole(ops.app, {
    parts: { orchestrator: true, vss: { admin: true, serving: true }, reference: true },
  });
  const vssAdminProxy = registerVssAdminProxy(ops.app, {
    apiKeys: settings.vss.admin.apiKeys,
    tls: tls.client,
  });
  const grpc = new GrpcServer({
    name: 'platform',
    host: settings.host,
    port: settings.grpc.port,
    logger,
    metrics,
    ...grpcServerSettings(settings),
  });

  const parts: RunningPart[] = [];
  const stopAll = async () => {
    for (const part of parts.reverse()) await part.stop();
    await grpc.stop();
    await ops.stop();
    await platform.close();
  };
  // On a signal: everything drained and closed, locks released; the last line says so.
  const stopOnSignal = async () => {
    await stopAll();
    console.log('Lattice stopped.');
  };
  let grpcPort: number;
  let opsPort: number;
  let seeded: boolean;
  let vssDemo = false;
  try {
    grpcPort = await grpc.start();
    opsPort = await ops.start();
    // The reference servers first, so the orchestrator's first requests find them.
    const featureStore = await startFeatureStorePart(platform);
    parts.push(featureStore);
    writeExampleModels(settings.modelserver.repository);
    const modelServer = await startModelServerPart(platform);
    parts.push(modelServer);
    const compute = await startComputePart(platform);
    parts.push(compute);
    seeded =
      shouldSeedExampleModel(settings, flags) &&
      (await seedExampleModel(platform, {
        modelServer: `${settings.host}:${modelServer.port}`,
        computeServer: `${settings.host}:${compute.port}`,
      }));
    // vss serving and consumers share this process's vector database (embedded: it lives here).
    // Started before the orchestrator, whose retrieval stages search it in process.
    const vss = await startVss(platform, { serving: {}, consumers: {}, admin: {} });
    parts.push(...vss.parts);
    const admin = vss.admin!;
    vssRpc.serve(vss.serving!.port);
    vssAdminProxy.serve(`${tls.server ? 'https' : 'http'}://${settings.host}:${admin.port}`);
    // The orchestrator's feature components call this process's feature store unless told otherwise;
    // its calls to this process's feature store, model server, compute and vss serving skip the
    // network (every loopback crossing would wait on the one event loop behind other work).
    const orchestrator = await startOrchestratorPart(platform, settings.orchestrator.port, {
      featureStoreTarget: settings.orchestrator.featureStoreTarget ?? `${settings.host}:${featureStore.port}`,
      local: [featureStore.local, modelServer.local, compute.local, vss.serving!.local],
    });
    parts.push(orchestrator);
    modelStatus.serve(orchestrator.modelStatus);
    modelConsole.serve(orchestrator.console);
    orchestratorRpc.serve(orchestrator.port);
    // The retrieve-and-rank example names vss serving's address, known now.
    if (seeded)
      await seedRecommenderModel(platform, {
        modelServer: `${settings.host}:${modelServer.port}`,
        computeServer: `${settings.host}:${compute.port}`,
        vss: `${settings.host}:${vss.serving!.port}`,
      });
    // Parts that listened from their start answered UNAVAILABLE until now (the demo's onboarding
    // below goes through the running process).
    for (const part of parts) part.open?.();
    // The vss demo lives in SQL: seeded on the embedded store, into PostgreSQL only when asked.
    if (settings.sql.kind === 'pglite' || flags.seedDemo) {
      vssDemo = await onboardVssDemo(
        new AdminClient({
          url: `${tls.server ? 'https' : 'http'}://${settings.host}:${admin.port}`,
          apiKey: settings.vss.admin.apiKeys[0],
          tls: tls.client,
        }),
        settings.dataDir,
        (line) => console.log(line),
      );
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  // /readyz covers this process's own servers too, not only the adapters they use.
  for (const part of parts) {
    if ('port' in part && typeof part.port === 'number') {
      ops.addReadinessCheck(part.name, acceptsConnections(settings.host, part.port));
    }
    for (const [name, check] of Object.entries(part.readiness ?? {})) ops.addReadinessCheck(name, check);
  }
  ops.addReadinessCheck('grpc', acceptsConnections(settings.host, grpcPort));
  onShutdownSignal(logger, stopOnSignal);

  const rows: [string, string][] = [
    ...parts.flatMap((part) => part.endpoints),
    ['gRPC platform (health)', `${settings.host}:${grpcPort}`],
    [
      'HTTP /healthz /readyz /metrics /models',
      `${ops.secure ? 'https' : 'http'}://${settings.host}:${opsPort}`,
    ],
    ['Web console (API docs at /docs)', `${ops.secure ? 'https' : 'http'}://${settings.host}:${opsPort}/`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(
    `Lattice is up (${settings.configStore.kind} config, ${settings.queue.kind} queue, ${settings.sql.kind} SQL, ${settings.cache.kind} cache, ${settings.vss.vectorDb.kind} vector DB; data in ${settings.dataDir}):`,
  );
  for (const [name, where] of rows) console.log(`  ${name.padEnd(width)}  ${where}`);
  if (seeded) {
    console.log(
      `Seeded the example model "catalog_ranker" (src/cli/catalog-ranker.ts) into ${settings.configStore.kind === 'file' ? settings.configStore.dir : 'the config store'}. Try:`,
    );
    const orchestrator = (parts.find((p) => p.name === 'orchestrator') as { port?: number } | undefined)
      ?.port;
    const address =
      orchestrator === settings.orchestrator.port ? '' : ` --address ${settings.host}:${orchestrator}`;
    console.log(
      `  npx lattice predict --model-config catalog_ranker --context user_id=u1 --target-id c1 --target-id c2${address}`,
    );
    // Retrieval then ranking in one call: no targets, the config finds them in vss (catalog_recommender).
    console.log(
      `  npx lattice predict --model-config catalog_recommender --context user_id=u1 --context item_id=c1${address}`,
    );
  }
  if (!shouldSeedExampleModel(settings, flags)) {
    console.log(
      `The example model was not seeded into ${settings.configStore.kind} (shared config store); --seed-demo seeds it into an empty one.`,
    );
  }
  if (vssDemo) {
    console.log(
      `Onboarded the vss demo: model ${VSS_DEMO.entity}/${VSS_DEMO.model} (${VSS_DEMO.rows} products), variants "all" and "shoes" READY. Try:`,
    );
    for (const command of vssDemoCommands(settings, parts)) console.log(`  ${command}`);
  }
  console.log('Ctrl-C stops it, draining in-flight calls.');
}

/**
 * Commands to try the vss demo, as they work when pasted: the ports a client takes from the settings
 * are named only when this process listens elsewhere (a port configured as 0).
 */
export function vssDemoCommands(settings: LoadedSettings, parts: readonly RunningPart[]): string[] {
  const portOf = (name: string) =>
    (parts.find((p) => p.name === name) as { port?: number } | undefined)?.port;
  const admin = portOf('vss-admin');
  const serving = portOf('vss-serving');
  const scheme = tlsOf(settings).server ? 'https' : 'http';
  const adminAddress =
    admin === settings.vss.admin.port ? '' : ` --address ${scheme}://${settings.host}:${admin}`;
  const servingAddress = serving === settings.vss.servingPort ? '' : ` --address ${settings.host}:${serving}`;
  const { entity, model } = VSS_DEMO;
  return [
    `npx lattice vss models${adminAddress}`,
    `npx lattice vss models --entity ${entity} --model ${model}${adminAddress}`,
    `npx lattice search --entity ${entity} --model ${model} --variant shoes --id c1 --attributes category,brand,price${servingAddress}`,
  ];
}
