import { parseArgs } from 'node:util';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { HttpServer, serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { Platform } from '../../platform/platform.js';
import { loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { CliContext } from '../main.js';
import { startOrchestratorPart } from '../parts.js';

const usage = `lattice orchestrator [--port N] [--metrics-port N]

Serves orchestrator.v1.Predict and the legacy Orchestrator API over the model configs in the
config store (models/<model_config_id>), reloading them live. Feature components call the feature
store at LATTICE_FEATURE_STORE_TARGET; model and compute endpoints come from each model config.`;

function portOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw invalidArgument(`${flag} must be a port number, got "${value}"`, flag);
  return port;
}

/** `lattice orchestrator`: the orchestrator service alone, with its ops HTTP server (/healthz, /readyz, /metrics). */
export async function runOrchestrator(context: CliContext): Promise<void> {
  let values: { port?: string; 'metrics-port'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: context.argv,
      options: {
        port: { type: 'string' },
        'metrics-port': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    throw invalidArgument(`orchestrator: ${describeError(err)}\n\n${usage}`);
  }
  if (values.help) {
    console.log(usage);
    return;
  }
  const settings = loadSettings({ file: context.settingsFile });
  serveTlsByDefault(tlsOf(settings).server);
  const platform = new Platform(settings);
  const part = await startOrchestratorPart(platform, portOption(values.port, '--port'));
  const ops = new HttpServer({
    name: 'orchestrator-ops',
    host: settings.host,
    port: portOption(values['metrics-port'], '--metrics-port') ?? settings.metrics.port,
    logger: platform.logger,
    metrics: platform.metrics,
    readiness: platform.readiness(),
    readinessTimeoutMs: settings.metrics.readyTimeoutMs,
  });
  const opsPort = await ops.start();
  onShutdownSignal(platform.logger, async () => {
    await part.stop();
    await ops.stop();
    await platform.close();
  });
  for (const [what, where] of part.endpoints) console.log(`${what}  ${where}`);
  console.log(
    `HTTP /healthz /readyz /metrics  ${ops.secure ? 'https' : 'http'}://${settings.host}:${opsPort}`,
  );
}
