import type { Command } from 'commander';
import { type CliSession, lazyAction, portNumber } from '../command-kit.js';

export interface OrchestratorOptions {
  port?: number;
  metricsPort?: number;
}

/** `lattice orchestrator`. */
export function defineOrchestrator(program: Command, session: CliSession): void {
  const command = program
    .command('orchestrator')
    .summary('the orchestrator alone (Predict and the legacy Orchestrator API)')
    .description(
      'Serves orchestrator.v1.Predict and the legacy Orchestrator API over the model configs in the ' +
        'config store (models/<model_config_id>), reloading them live, with /healthz, /readyz and ' +
        '/metrics over HTTP. Feature components call the feature store at LATTICE_FEATURE_STORE_TARGET; ' +
        'model and compute endpoints come from each model config.',
    )
    .option('--port <N>', 'the gRPC port (default settings orchestrator.port)', portNumber)
    .option(
      '--metrics-port <N>',
      'the HTTP /healthz /readyz /metrics port (default settings metrics.port)',
      portNumber,
    );
  lazyAction<OrchestratorOptions>(
    command,
    session,
    async () => (await import('./orchestrator.js')).runOrchestrator,
  );
}
