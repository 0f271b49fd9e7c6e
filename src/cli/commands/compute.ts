import { parseArgs } from 'node:util';
import type { CompiledExpression } from '../../compute/index.js';
import {
  compileExpressionDocument,
  EXPRESSIONS_PREFIX,
  type ExpressionDocument,
  expressionKey,
  startComputeServer,
} from '../../compute/server/index.js';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { Platform } from '../../platform/platform.js';
import { callerAuth, type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { CliContext } from '../main.js';
import { describePorts } from './ports.js';

/** Port of `lattice compute` when `--port` is not given; the platform gRPC server has 50050. */
export const DEFAULT_COMPUTE_PORT = 50053;

const usage = `Usage:
  lattice compute [--port N] [--metrics-port N]
      serve numerix.Numerix/Compute (default port ${DEFAULT_COMPUTE_PORT}) over the expressions stored
      under ${EXPRESSIONS_PREFIX}<compute_id> in the configured config store, reloading them live;
      --metrics-port also serves /healthz /readyz /metrics over HTTP
  lattice compute put <compute_id> "<expression>" [--data-type fp32|fp64]
      check an RPN expression (e.g. "a b +") and store it for <compute_id>`;

interface ComputeArgs {
  positionals: string[];
  port: string | undefined;
  metricsPort: string | undefined;
  dataType: string | undefined;
}

/** Reads this command's own options, strictly, from the arguments after the command name. */
function parseComputeArgs(context: CliContext): ComputeArgs {
  const parse = (args: string[]) =>
    parseArgs({
      args,
      options: {
        help: { type: 'boolean', short: 'h' },
        port: { type: 'string' },
        'metrics-port': { type: 'string' },
        'data-type': { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(context.argv);
  } catch (err) {
    throw invalidArgument(`${describeError(err)}\n\n${usage}`);
  }
  return {
    positionals: parsed.positionals,
    port: parsed.values.port,
    metricsPort: parsed.values['metrics-port'],
    dataType: parsed.values['data-type'],
  };
}

function parsePort(text: string, option: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw invalidArgument(`${option} must be a port number from 0 to 65535, got ${JSON.stringify(text)}`);
  }
  return port;
}

/** `lattice compute` (serve) and `lattice compute put` (store an expression). */
export async function runCompute(context: CliContext): Promise<void> {
  const args = parseComputeArgs(context);
  const [subcommand, ...rest] = args.positionals;
  if (subcommand === undefined) return serve(context, args);
  if (subcommand === 'put') {
    if (args.port !== undefined || args.metricsPort !== undefined) {
      throw invalidArgument(
        `--port and --metrics-port belong to "compute" (serve), not "compute put"\n\n${usage}`,
      );
    }
    return put(context, rest, args.dataType);
  }
  throw invalidArgument(`unknown compute subcommand "${subcommand}"\n\n${usage}`);
}

async function serve(context: CliContext, args: ComputeArgs): Promise<void> {
  if (args.dataType !== undefined) throw invalidArgument(`--data-type belongs to "compute put"\n\n${usage}`);
  const port = args.port === undefined ? DEFAULT_COMPUTE_PORT : parsePort(args.port, '--port');
  const metricsPort =
    args.metricsPort === undefined ? undefined : parsePort(args.metricsPort, '--metrics-port');
  const settings = loadSettings({ file: context.settingsFile });
  serveTlsByDefault(tlsOf(settings).server);
  const platform = new Platform(settings);
  const { logger, metrics } = platform;
  let stopServer: (() => Promise<void>) | undefined;
  let stopOps: (() => Promise<void>) | undefined;
  try {
    const store = await platform.configStore();
    const server = await startComputeServer({
      store,
      host: settings.host,
      port,
      logger,
      metrics,
      auth: callerAuth(settings),
      maxMessageBytes: settings.grpc.maxMessageBytes,
      shutdownGraceMs: settings.grpc.shutdownGraceMs,
      defaultDeadlineMs: settings.grpc.defaultDeadlineMs,
      maxInFlightCalls: settings.grpc.maxInFlightCalls,
    });
    stopServer = () => server.stop();
    const rows: [string, string][] = [
      ['numerix.Numerix gRPC (health, reflection)', `${settings.host}:${server.port}`],
    ];
    if (metricsPort !== undefined) {
      const ops = new HttpServer({
        name: 'compute-ops',
        host: settings.host,
        port: metricsPort,
        logger,
        metrics,
        readiness: platform.readiness(),
        readinessTimeoutMs: settings.metrics.readyTimeoutMs,
      });
      const opsPort = await ops.start();
      stopOps = () => ops.stop();
      rows.push([
        'HTTP /healthz /readyz /metrics',
        `${ops.secure ? 'https' : 'http'}://${settings.host}:${opsPort}`,
      ]);
    }
    const ids = server.registry.ids();
    const rejected = server.registry.status().filter((s) => s.lastError !== undefined).length;
    console.log(
      `Lattice compute is up (${describePorts(platform).configStore}; ${ids.length} expression${
        ids.length === 1 ? '' : 's'
      } under ${EXPRESSIONS_PREFIX}${rejected > 0 ? `, ${rejected} rejected (see the log)` : ''}):`,
    );
    const width = Math.max(...rows.map(([name]) => name.length));
    for (const [name, where] of rows) console.log(`  ${name.padEnd(width)}  ${where}`);
    console.log('Ctrl-C stops it, draining in-flight calls.');
  } catch (err) {
    await stopServer?.();
    await platform.close();
    throw err;
  }
  onShutdownSignal(logger, async () => {
    await stopServer?.();
    await stopOps?.();
    await platform.close();
  });
}

async function put(context: CliContext, rest: string[], dataType: string | undefined): Promise<void> {
  const [computeId, ...tokens] = rest;
  // Accept the expression quoted as one argument or as separate tokens.
  const expression = tokens.join(' ').trim();
  if (computeId === undefined || expression === '') {
    throw invalidArgument(`compute put needs a compute_id and an expression\n\n${usage}`);
  }
  const key = expressionKey(computeId);
  const document: ExpressionDocument =
    dataType === undefined ? { expression } : { expression, data_type: dataType };
  // Check before storing, so a typo is reported here rather than by every running server.
  let compiled: CompiledExpression;
  try {
    compiled = compileExpressionDocument(document).expression;
  } catch (err) {
    throw invalidArgument(`not stored: compute_id ${computeId}: ${describeError(err)}`);
  }
  const settings: LoadedSettings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings, {
    logger: createLogger('lattice', { level: 'silent' }),
    metrics: new Metrics(),
  });
  try {
    const store = await platform.configStore();
    const revision = await store.put(key, document);
    const variables = compiled.variables.length > 0 ? compiled.variables.join(', ') : 'none';
    console.log(
      `stored ${key} (revision ${revision}) in ${describePorts(platform).configStore}: ${expression} (variables: ${variables})`,
    );
  } finally {
    await platform.close();
  }
}
