import type { CompiledExpression } from '../../compute/index.js';
import {
  compileExpressionDocument,
  EXPRESSIONS_PREFIX,
  type ExpressionDocument,
  expressionKey,
  startComputePart,
} from '../../compute/server/index.js';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { Platform } from '../../platform/platform.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import { type Invocation, UsageError } from '../command-kit.js';
import { checkExposure } from '../exposure.js';
import { acceptsConnections } from '../port-check.js';
import type { ComputePutOptions, ComputeServeOptions } from './compute.command.js';
import { describePorts } from './ports.js';

/** `lattice compute`: the numerix server over the stored expressions. */
export async function runComputeServe({ options, context }: Invocation<ComputeServeOptions>): Promise<void> {
  const { metricsPort } = options;
  const settings = loadSettings({ file: context.settingsFile });
  checkExposure(settings, [{ name: 'compute gRPC', auth: 'callerTokens' }]);
  const port = options.port ?? settings.compute.port;
  serveTlsByDefault(tlsOf(settings).server);
  const platform = new Platform(settings);
  const { logger, metrics } = platform;
  let stopServer: (() => Promise<void>) | undefined;
  let stopOps: (() => Promise<void>) | undefined;
  try {
    const server = await startComputePart(platform, port, { ownProcess: true });
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
      // /readyz covers this process's own server too, not only the config store it reads.
      ops.addReadinessCheck('compute', acceptsConnections(settings.host, server.port));
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

/** `lattice compute put <compute_id> <expression...>`: checks the expression, then stores it. */
export async function runComputePut({
  options,
  args,
  context,
}: Invocation<ComputePutOptions>): Promise<void> {
  const computeId = args[0] as string;
  const dataType = options.dataType;
  // Accept the expression quoted as one argument or as separate tokens.
  const expression = (args[1] as string[]).join(' ').trim();
  if (expression === '') throw new UsageError('compute put needs an expression, e.g. "a b +"');
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
