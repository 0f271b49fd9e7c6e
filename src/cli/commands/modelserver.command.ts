import type { Command } from 'commander';
import { type CliSession, integerIn, lazyAction, portNumber, runsWithSubcommands } from '../command-kit.js';

/** Triton's gRPC port, which model-serving components point at by default (`ranker-a:8001`). */
export const DEFAULT_MODELSERVER_PORT = 8001;

export interface ModelServerOptions {
  repository?: string;
  host?: string;
  port?: number;
  batchWindowMs?: number;
  maxBatchRows?: number;
}

export interface DemoModelsOptions {
  repository?: string;
}

const REPOSITORY_HELP =
  'the model repository, <repo>/<model>/<version>/model.onnx (default settings modelserver.repository, <dataDir>/models)';

/** `lattice modelserver` and `lattice modelserver demo-models`. */
export function defineModelServer(program: Command, session: CliSession): void {
  const modelserver = runsWithSubcommands(program.command('modelserver'))
    .summary('the reference KServe v2 model server; "demo-models" writes some')
    .description(
      'Serves a Triton-layout ONNX model repository over KServe v2 gRPC (the reference model server). ' +
        'SIGHUP reloads the repository.',
    )
    .option('--repository <DIR>', REPOSITORY_HELP)
    .option('--host <H>', "the address to bind (default the settings' host)")
    .option(
      '--port <N>',
      `the gRPC port, 0 picks a free one (default settings modelserver.port, ${DEFAULT_MODELSERVER_PORT})`,
      portNumber,
    )
    .option(
      '--batch-window-ms <MS>',
      'how long a request waits for others to batch with',
      integerIn(0, 60_000),
    )
    .option('--max-batch-rows <N>', 'rows of one batch at most', integerIn(1, 1 << 24));
  lazyAction<ModelServerOptions>(
    modelserver,
    session,
    async () => (await import('./modelserver.js')).runModelServer,
  );

  const demo = modelserver
    .command('demo-models')
    .summary('write the tiny demo ONNX models into the repository')
    .description('Writes the tiny demo ONNX models into the repository, ready to serve.')
    .option('--repository <DIR>', REPOSITORY_HELP);
  lazyAction<DemoModelsOptions>(demo, session, async () => (await import('./modelserver.js')).runDemoModels);
}
