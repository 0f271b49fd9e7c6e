import { parseArgs } from 'node:util';
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import { HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { Platform } from '../../platform/platform.js';
import { TopicNotFoundError } from '../../platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import { replayDeadLetters, vssTopics } from '../../vss/consumers/index.js';
import type { CliContext } from '../main.js';
import { type RunningPart, startVssConsumersPart, startVssServingPart } from '../parts.js';
import { acceptsConnections, checkPortsFree } from '../port-check.js';
import { runVssAdminCommand, VSS_ADMIN_SUBCOMMANDS, VSS_ADMIN_USAGE } from '../vss-admin/index.js';
import { startVssAdminPart } from '../vss-admin-part.js';
import { describePorts } from './ports.js';

/** Port of `lattice vss serving` when `--port` is not given. */
export const DEFAULT_VSS_SERVING_PORT = 50055;

const usage = `Usage:
  lattice vss [--port N] [--metrics-port N] [--partitions LIST]
      vss serving, the vss consumers and vss admin in one process, sharing one SQL client, vector
      database and queue: how the embedded vector database (it lives in one process) must run.
  lattice vss serving [--port N] [--metrics-port N]
      serve vss.v1.SimilaritySearch (default port ${DEFAULT_VSS_SERVING_PORT}) on the configured SQL store,
      cache and vector database (settings vss.vectorDb: embedded in <dataDir>/vectordb by default).
      Settings vss.pageTokenSecret (LATTICE_VSS_PAGE_TOKEN_SECRET) sets the page-token key (share it
      between replicas); vss.recallSampleRate (LATTICE_VSS_RECALL_SAMPLE_RATE, 0..1, default 0.01) the
      share of queries re-run for avg_recall.
  lattice vss consumers [--metrics-port N] [--partitions LIST]
      apply embedding events, EOF markers and real-time events from the vss topics (settings
      vss.consumers: embeddingsTopic, realtimeTopic, group, partitions, batchSize, lingerMs, retries,
      ackWaitMs) to the SQL store and the vector database, and sweep expired embedding-store rows.
      Alone only with a vector database server (Qdrant); on the embedded one run "lattice vss".
      --partitions (e.g. 0-3 or 0,2,4,6; default all) is the share of each topic this process
      consumes: processes of one group must split the partitions between them.
  lattice vss admin [--metrics-port N]
      the admin HTTP API (settings vss.admin.port, default 8090; OpenAPI at /docs; API keys
      vss.admin.apiKeys) and the operations engine that runs its operations (outbox relay, admin
      consumers, scheduled resets; ingestion jobs on vss.admin.jobRunner). Alone only with a vector
      database server (Qdrant); on the embedded one run "lattice vss".
  Each serves /healthz, /readyz and /metrics on --metrics-port (default settings metrics.port).
  lattice vss replay [--topic T] [--limit N] [--id ID]
      re-publish dead letters to the topic they came from, once their cause is fixed: all of them,
      the oldest N, or the one whose dead-letter id (<topic>:<group>:<sequence>, as logged) or original
      message id is ID. Default topics: vss.consumers.embeddingsTopic and realtimeTopic. A dead letter
      leaves <topic>-dlq only once its re-publish is durable. On the embedded queue, stop the process
      that holds the queue journal first.
${VSS_ADMIN_USAGE}`;

function parsePort(text: string, flag: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw invalidArgument(`${flag} must be a port number from 0 to 65535, got ${JSON.stringify(text)}`, flag);
  }
  return port;
}

/** `0-3,6` → [0, 1, 2, 3, 6]. */
function parsePartitions(text: string): number[] {
  const partitions = new Set<number>();
  for (const part of text.split(',')) {
    const range = /^\s*(\d{1,4})\s*(?:-\s*(\d{1,4})\s*)?$/.exec(part);
    const from = Number(range?.[1]);
    const to = range?.[2] === undefined ? from : Number(range[2]);
    if (range === null || to < from) {
      throw invalidArgument(
        `--partitions must be partition numbers and ranges such as 0-3,6, got ${JSON.stringify(text)}`,
        'partitions',
      );
    }
    for (let p = from; p <= to; p++) partitions.add(p);
  }
  return [...partitions].sort((a, b) => a - b);
}

function parseLimit(text: string): number {
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1 || !Number.isSafeInteger(limit)) {
    throw invalidArgument(`--limit must be a positive integer, got ${JSON.stringify(text)}`, 'limit');
  }
  return limit;
}

interface VssArgs {
  positionals: string[];
  port: string | undefined;
  metricsPort: string | undefined;
  partitions: string | undefined;
  topic: string | undefined;
  limit: string | undefined;
  id: string | undefined;
  help: boolean;
}

/** Which vss components one process runs. */
interface Components {
  serving: boolean;
  consumers: boolean;
  admin: boolean;
}

const ALL: Components = { serving: true, consumers: true, admin: true };
const ALONE = new Map<string | undefined, Components>([
  ['serving', { serving: true, consumers: false, admin: false }],
  ['consumers', { serving: false, consumers: true, admin: false }],
  ['admin', { serving: false, consumers: false, admin: true }],
]);

/** `lattice vss` (serving and consumers together), `vss serving`, `vss consumers` and `vss replay`. */
export async function runVss(context: CliContext): Promise<void> {
  // The admin clients parse their own flags (one set per subcommand).
  const [first, ...rest] = context.argv;
  if (first !== undefined && VSS_ADMIN_SUBCOMMANDS.has(first)) {
    const settings = loadSettings({ file: context.settingsFile });
    const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
    const tls = tlsOf(settings);
    process.exitCode = await runVssAdminCommand(first, rest, {
      adminUrl: `${tls.client ? 'https' : 'http'}://${host}:${settings.vss.admin.port}`,
      apiKey: settings.vss.admin.apiKeys[0],
      tls: tls.client,
    });
    return;
  }
  let parsed: VssArgs;
  try {
    const { values, positionals } = parseArgs({
      args: context.argv,
      options: {
        port: { type: 'string' },
        'metrics-port': { type: 'string' },
        partitions: { type: 'string' },
        topic: { type: 'string' },
        limit: { type: 'string' },
        id: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    parsed = {
      positionals,
      port: values.port,
      metricsPort: values['metrics-port'],
      partitions: values.partitions,
      topic: values.topic,
      limit: values.limit,
      id: values.id,
      help: values.help === true,
    };
  } catch (err) {
    throw invalidArgument(`${describeError(err)}\n\n${usage}`);
  }
  if (parsed.help) {
    console.log(usage);
    return;
  }
  const [subcommand, ...extra] = parsed.positionals;
  if (extra.length > 0) throw invalidArgument(`unexpected argument "${extra[0]}"\n\n${usage}`);
  const components = subcommand === undefined ? ALL : ALONE.get(subcommand);
  if (components !== undefined) {
    if (parsed.topic !== undefined || parsed.limit !== undefined || parsed.id !== undefined) {
      throw invalidArgument(`--topic, --limit and --id belong to "vss replay"\n\n${usage}`);
    }
    if (!components.consumers && parsed.partitions !== undefined) {
      throw invalidArgument(`--partitions belongs to "vss consumers" and "vss"\n\n${usage}`, 'partitions');
    }
    if (!components.serving && parsed.port !== undefined) {
      throw invalidArgument(
        `--port belongs to "vss serving" and "vss"; the consumers serve no port\n\n${usage}`,
      );
    }
    await runComponents(context, components, {
      port: parsed.port === undefined ? undefined : parsePort(parsed.port, '--port'),
      partitions: parsed.partitions === undefined ? undefined : parsePartitions(parsed.partitions),
      metricsPort:
        parsed.metricsPort === undefined ? undefined : parsePort(parsed.metricsPort, '--metrics-port'),
    });
    return;
  }
  if (subcommand === 'replay') {
    if (parsed.port !== undefined || parsed.metricsPort !== undefined || parsed.partitions !== undefined) {
      throw invalidArgument(
        `--port belongs to "vss serving" and "vss", --metrics-port and --partitions to them and "vss consumers"\n\n${usage}`,
      );
    }
    if (parsed.id !== undefined && parsed.limit !== undefined) {
      throw invalidArgument('--id replays one dead letter; it cannot be combined with --limit', 'limit');
    }
    const limit = parsed.limit === undefined ? undefined : parseLimit(parsed.limit);
    await runReplay(loadSettings({ file: context.settingsFile }), {
      topic: parsed.topic,
      limit,
      id: parsed.id,
    });
    return;
  }
  throw invalidArgument(`unknown vss subcommand "${subcommand ?? ''}"\n\n${usage}`);
}

/**
 * Starts the chosen components on one Platform (one SQL client, vector database and queue), with an
 * ops HTTP server. SIGTERM stops serving (draining calls), then the consumers (the batches being
 * applied settle, the rest goes back to the queue), then closes the adapters: the vector database
 * takes its snapshot, SQL and the queue close.
 */
async function runComponents(
  context: CliContext,
  components: Components,
  ports: { port: number | undefined; metricsPort: number | undefined; partitions: number[] | undefined },
): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
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
  const parts: RunningPart[] = [];
  let ops: HttpServer | undefined;
  const stopAll = async () => {
    // Serving first: no call is answered by a half-stopped process; then admin (no new operation,
    // jobs checkpoint); then the consumers drain. A part that fails to stop does not keep the others,
    // or the adapters, from closing.
    const order = ['vss-serving', 'vss-admin', 'vss-consumers'];
    const stopping = parts.splice(0).sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    for (const part of stopping) {
      await part
        .stop()
        .catch((err: unknown) => platform.logger.error({ err, part: part.name }, 'stopping failed'));
    }
    await ops
      ?.stop()
      .catch((err: unknown) => platform.logger.error({ err }, 'stopping the ops server failed'));
    await platform.close();
  };
  let servingPort: number | undefined;
  let opsPort: number;
  try {
    if (components.serving) {
      const serving = await startVssServingPart(platform, ports.port ?? settings.vss.servingPort);
      servingPort = serving.port;
      parts.push(serving);
    }
    if (components.consumers) {
      parts.push(
        await startVssConsumersPart(
          platform,
          ports.partitions === undefined ? {} : { partitions: ports.partitions },
        ),
      );
    }
    // Admin after the consumers: the operations it resumes wait on what they apply.
    if (components.admin) parts.push(await startVssAdminPart(platform));
    ops = new HttpServer({
      name: 'vss-ops',
      host: settings.host,
      port: ports.metricsPort ?? settings.metrics.port,
      logger: platform.logger,
      metrics: platform.metrics,
      readiness: platform.readiness(),
      readinessTimeoutMs: settings.metrics.readyTimeoutMs,
    });
    // /readyz covers this process's own servers too, not only the adapters they use.
    for (const part of parts) {
      if ('port' in part && typeof part.port === 'number') {
        ops.addReadinessCheck(part.name, acceptsConnections(settings.host, part.port));
      }
    }
    opsPort = await ops.start();
  } catch (err) {
    await stopAll();
    throw err;
  }
  onShutdownSignal(platform.logger, stopAll);

  const adapters = describePorts(platform);
  const what =
    components.serving && components.consumers
      ? 'vss'
      : components.serving
        ? 'vss serving'
        : components.consumers
          ? 'vss consumers'
          : 'vss admin';
  console.log(
    `Lattice ${what} is up (${adapters.sql}; ${adapters.queue}; ${adapters.cache}; vector DB ${adapters.vectorDb}):`,
  );
  if (servingPort !== undefined) {
    console.log(`  vss.v1.SimilaritySearch gRPC (health, reflection)  ${settings.host}:${servingPort}`);
  }
  for (const part of parts) {
    if (part.name === 'vss-serving') continue;
    for (const [name, where] of part.endpoints) console.log(`  ${name}  ${where}`);
  }
  console.log(
    `  HTTP /healthz /readyz /metrics  ${ops?.secure ? 'https' : 'http'}://${settings.host}:${opsPort}`,
  );
  console.log('Ctrl-C stops it, draining in-flight calls and batches.');
}

/** Replays dead letters of each topic in turn; with --limit, N across them; with --id, the first match. */
async function runReplay(
  settings: LoadedSettings,
  options: { topic: string | undefined; limit: number | undefined; id: string | undefined },
): Promise<void> {
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
