/**
 * `lattice vss` (serving, consumers and admin together), `vss serving`, `vss consumers`, `vss admin`
 * and `vss replay`. The admin API's clients are in ../vss-admin.
 */
import { registerConsole, registerVssAdminProxy } from '../../console/index.js';
import { LatticeError } from '../../platform/errors.js';
import { ApiAuth, HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { Platform } from '../../platform/platform.js';
import { TopicNotFoundError } from '../../platform/queue/index.js';
import { apiAuthOptions, type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import { replayDeadLetters, vssTopics } from '../../vss/consumers/index.js';
import { type RunningVss, startVss } from '../../vss/index.js';
import type { CliContext, Invocation, Runner } from '../command-kit.js';
import { checkExposure, embeddedQueueRoutes } from '../exposure.js';
import { acceptsConnections, checkPortsFree } from '../port-check.js';
import { registerEmbeddedQueueRoutes } from '../queue-dead-letters-route.js';
import { registerRpcRoutes } from '../rpc-gateway.js';
import { describePorts } from './ports.js';
import type { VssComponentOptions, VssComponents, VssReplayOptions } from './vss.command.js';

/** The runner of `lattice vss`, `vss serving`, `vss consumers` or `vss admin`. */
export function runVssComponents(components: VssComponents): Runner<VssComponentOptions> {
  // `lattice vss --no-admin`: serving and consumers beside a process that runs admin.
  return ({ options, context }) =>
    runComponents(context, { ...components, admin: components.admin && options.admin !== false }, options);
}

/** `lattice vss replay`. */
export async function runVssReplay({ options, context }: Invocation<VssReplayOptions>): Promise<void> {
  await runReplay(loadSettings({ file: context.settingsFile }), options);
}

/**
 * Starts the chosen components on one Platform (one SQL client, vector database and queue), with an
 * ops HTTP server. SIGTERM stops serving (draining calls), then the consumers (the batches being
 * applied settle, the rest goes back to the queue), then closes the adapters: the vector database
 * takes its snapshot, SQL and the queue close.
 */
async function runComponents(
  context: CliContext,
  components: VssComponents,
  ports: VssComponentOptions,
): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  checkExposure(settings, [
    ...(components.serving ? [{ name: 'vss serving gRPC', auth: 'callerTokens' } as const] : []),
    ...(components.admin ? [{ name: 'vss admin HTTP', auth: 'apiKeys' } as const] : []),
    // Its /api routes take the admin API's keys where it runs admin, caller tokens everywhere.
    { name: 'ops HTTP /api (console, HTTP/JSON)', auth: components.admin ? 'apiKeys' : 'callerTokens' },
    ...embeddedQueueRoutes(settings),
  ]);
  serveTlsByDefault(tlsOf(settings).server);
  await checkPortsFree(settings.host, [
    ...(components.serving
      ? [
          ports.port === undefined
            ? { setting: 'vss.servingPort', port: settings.vss.servingPort }
            : { setting: '--port', port: ports.port },
        ]
      : []),
    ...(components.admin ? [{ setting: 'vss.admin.port', port: settings.vss.admin.port }] : []),
    ports.metricsPort === undefined
      ? { setting: 'metrics.port', port: settings.metrics.port }
      : { setting: '--metrics-port', port: ports.metricsPort },
  ]);
  const platform = new Platform(settings);
  let vss: RunningVss | undefined;
  let ops: HttpServer | undefined;
  const stopAll = async () => {
    // The vss parts in their stop order (serving, admin, consumers), then the ops server; a part that
    // fails to stop does not keep the adapters from closing.
    await vss?.stop();
    await ops
      ?.stop()
      .catch((err: unknown) => platform.logger.error({ err }, 'stopping the ops server failed'));
    await platform.close();
  };
  let opsPort: number;
  try {
    vss = await startVss(platform, {
      ...(components.serving ? { serving: { port: ports.port ?? settings.vss.servingPort } } : {}),
      ...(components.consumers
        ? { consumers: ports.partitions === undefined ? {} : { partitions: ports.partitions } }
        : {}),
      ...(components.admin ? { admin: {} } : {}),
    });
    ops = await HttpServer.create({
      name: 'vss-ops',
      openapi: { title: 'Lattice ops API (lattice vss)' },
      host: settings.host,
      port: ports.metricsPort ?? settings.metrics.port,
      logger: platform.logger,
      metrics: platform.metrics,
      readiness: platform.readiness(),
      readinessTimeoutMs: settings.metrics.readyTimeoutMs,
      apiAuth: new ApiAuth(apiAuthOptions(settings, components.admin === true)),
    });
    // The embedded queue lives in this process: `lattice vss publish`, `lattice vss dead-letters` and
    // `lattice logs decode --from-queue` beside it reach it here.
    if (settings.queue.kind === 'memory') registerEmbeddedQueueRoutes(ops.app, () => platform.queue());
    // The HTTP/JSON form of SimilaritySearch, beside the serving part that answers it.
    if (vss.serving !== undefined) registerRpcRoutes(ops.app, settings, 'vss').serve(vss.serving.port);
    await registerConsole(ops.app, {
      parts: {
        orchestrator: false,
        vss: { admin: vss.admin !== undefined, serving: vss.serving !== undefined },
        reference: false,
      },
    });
    if (vss.admin !== undefined) {
      const scheme = tlsOf(settings).server ? 'https' : 'http';
      registerVssAdminProxy(ops.app, {
        apiKeys: settings.vss.admin.apiKeys,
        tls: tlsOf(settings).client,
      }).serve(`${scheme}://${settings.host}:${vss.admin.port}`);
    }
    // /readyz covers this process's own servers too, not only the adapters they use.
    for (const part of vss.parts) {
      if ('port' in part && typeof part.port === 'number') {
        ops.addReadinessCheck(part.name, acceptsConnections(settings.host, part.port));
      }
      for (const [name, check] of Object.entries(part.readiness ?? {})) ops.addReadinessCheck(name, check);
    }
    // Every part is up: those that listened from their start (answering UNAVAILABLE) now serve.
    vss.open();
    opsPort = await ops.start();
  } catch (err) {
    await stopAll();
    throw err;
  }
  onShutdownSignal(platform.logger, stopAll);

  const adapters = describePorts(platform);
  const what =
    components.serving && components.consumers
      ? components.admin
        ? 'vss'
        : 'vss serving and consumers'
      : components.serving
        ? 'vss serving'
        : components.consumers
          ? 'vss consumers'
          : 'vss admin';
  console.log(
    `Lattice ${what} is up (${adapters.sql}; ${adapters.queue}; ${adapters.cache}; vector DB ${adapters.vectorDb}):`,
  );
  if (vss.serving !== undefined) {
    console.log(`  vss.v1.SimilaritySearch gRPC (health, reflection)  ${settings.host}:${vss.serving.port}`);
  }
  for (const part of vss.parts) {
    if (part.name === 'vss-serving') continue;
    for (const [name, where] of part.endpoints) console.log(`  ${name}  ${where}`);
  }
  console.log(
    `  HTTP /healthz /readyz /metrics  ${ops?.secure ? 'https' : 'http'}://${settings.host}:${opsPort}`,
  );
  console.log(
    `  Web console (API docs at /docs)  ${ops?.secure ? 'https' : 'http'}://${settings.host}:${opsPort}/`,
  );
  console.log('Ctrl-C stops it, draining in-flight calls and batches.');
}

/** Replays dead letters of each topic in turn; with --limit, N across them; with --id, the first match. */
async function runReplay(settings: LoadedSettings, options: VssReplayOptions): Promise<void> {
  const platform = new Platform(settings);
  try {
    const queue = await platform.queue();
    const topics = options.topic === undefined ? vssTopics(settings.vss.consumers) : [options.topic];
    let budget = options.limit;
    let replayed = 0;
    for (const topic of topics) {
      if (budget === 0 || (options.id !== undefined && replayed > 0)) break;
      try {
        const report = await replayDeadLetters({
          queue,
          topic,
          ...(budget === undefined ? {} : { limit: budget }),
          ...(options.id === undefined ? {} : { id: options.id }),
          logger: platform.logger,
        });
        replayed += report.replayed;
        if (budget !== undefined) budget -= report.replayed;
        const skipped =
          report.unreplayable > 0 ? `, ${report.unreplayable} without an origin left in place` : '';
        console.log(
          `${topic}: replayed ${report.replayed} dead letter(s) from ${report.deadLetterTopic}${skipped}; ${report.remaining} remain`,
        );
      } catch (err) {
        if (!(err instanceof TopicNotFoundError)) throw err;
        console.log(`${topic}: no such topic, nothing to replay`);
      }
    }
    if (options.id !== undefined && replayed === 0) {
      throw new LatticeError('NOT_FOUND', `no dead letter with id "${options.id}" in ${topics.join(', ')}`, {
        field: 'id',
      });
    }
  } finally {
    await platform.close();
  }
}
