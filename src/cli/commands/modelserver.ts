import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeDemoModels } from '../../modelserver/demo-models.js';
import { startModelServer } from '../../modelserver/modelserver-server.js';
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import { serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { callerAuth, loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { CliContext } from '../main.js';

/** Triton's gRPC port, which model-serving components point at by default (`ranker-a:8001`). */
const defaultPort = 8001;

const options = {
  settings: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  repository: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'batch-window-ms': { type: 'string' },
  'max-batch-rows': { type: 'string' },
} as const;

function integerOption(
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw invalidArgument(`--${name} must be an integer from ${min} to ${max}, not "${value}"`, name);
  }
  return n;
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true });
  } catch (err) {
    throw invalidArgument(`modelserver: ${describeError(err)}`);
  }
}

/**
 * `lattice modelserver [--repository DIR] [--host H] [--port N] [--batch-window-ms MS]
 * [--max-batch-rows N]` serves a Triton-layout ONNX model repository over KServe v2 gRPC;
 * `lattice modelserver demo-models [--repository DIR]` writes the tiny demo models there.
 * The repository defaults to `<dataDir>/models`.
 *
 * main.ts parses leniently and hands over positionals only, which loses option values; this
 * command reads the whole command line again with its own options.
 */
export async function runModelserver(context: CliContext, argv = process.argv.slice(2)): Promise<void> {
  const { values, positionals } = parseCommandLine(argv);
  const subcommand = positionals[positionals.indexOf('modelserver') + 1];
  const settings = loadSettings({ file: context.settingsFile });
  const repository = resolve(values.repository ?? join(settings.dataDir, 'models'));

  if (subcommand === 'demo-models') {
    for (const model of writeDemoModels(repository)) {
      console.log(`wrote ${model.path}\n  ${model.name} v${model.version}: ${model.description}`);
    }
    console.log(`Serve them with: lattice modelserver --repository ${repository}`);
    return;
  }
  if (subcommand !== undefined) {
    throw invalidArgument(`modelserver: unknown subcommand "${subcommand}" (known: demo-models)`);
  }
  if (!existsSync(repository)) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `model repository ${repository} does not exist; create it (<model>/<version>/model.onnx) or run: lattice modelserver demo-models --repository ${repository}`,
    );
  }

  const logger = createLogger('modelserver', { level: settings.logLevel });
  serveTlsByDefault(tlsOf(settings).server);
  const server = await startModelServer({
    repository,
    host: values.host ?? settings.host,
    port: integerOption('port', values.port, 0, 65535) ?? defaultPort,
    batchWindowMs: integerOption('batch-window-ms', values['batch-window-ms'], 0, 60_000),
    maxBatchRows: integerOption('max-batch-rows', values['max-batch-rows'], 1, 1 << 24),
    logger,
    metrics: new Metrics(),
    auth: callerAuth(settings),
    maxMessageBytes: settings.grpc.maxMessageBytes,
    shutdownGraceMs: settings.grpc.shutdownGraceMs,
    defaultDeadlineMs: settings.grpc.defaultDeadlineMs,
    maxInFlightCalls: settings.grpc.maxInFlightCalls,
  });
  process.on('SIGHUP', () => {
    server.reload().then(
      () => logger.info({ models: server.repository.all().map((m) => `${m.name}/${m.version}`) }, 'reloaded'),
      (err: unknown) => logger.error({ err }, 'reload failed; the previous models keep serving'),
    );
  });
  onShutdownSignal(logger, () => server.stop());

  const host = values.host ?? settings.host;
  console.log(`Model server (KServe v2 gRPC) listening on ${host}:${server.port}, repository ${repository}:`);
  for (const model of server.repository.all()) {
    const io = (specs: typeof model.inputs) =>
      specs.map((s) => `${s.name} ${s.type.kserve} [${s.shape.join(', ')}]`).join(', ');
    console.log(`  ${model.name} v${model.version}: ${io(model.inputs)} → ${io(model.outputs)}`);
  }
  console.log('Ctrl-C stops it, draining in-flight calls; SIGHUP reloads the repository.');
}
