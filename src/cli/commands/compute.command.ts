import type { Command } from 'commander';
import { type CliSession, lazyAction, portNumber, runsWithSubcommands } from '../command-kit.js';

/** Port of `lattice compute` when `--port` is not given; the platform gRPC server has 50050. */
export const DEFAULT_COMPUTE_PORT = 50053;

export interface ComputeServeOptions {
  port?: number;
  metricsPort?: number;
}

export interface ComputePutOptions {
  dataType?: string;
}

/** `lattice compute` (serve) and `lattice compute put`. */
export function defineCompute(program: Command, session: CliSession): void {
  const compute = runsWithSubcommands(program.command('compute'))
    .summary('the numerix compute server; "compute put" stores an expression')
    .description(
      'Serves numerix.Numerix/Compute over the expressions stored under compute/<compute_id> in the ' +
        'configured config store, reloading them live.',
    )
    .option(
      '--port <N>',
      `the gRPC port (default settings compute.port, ${DEFAULT_COMPUTE_PORT})`,
      portNumber,
    )
    .option('--metrics-port <N>', 'also serve /healthz /readyz /metrics over HTTP on this port', portNumber);
  lazyAction<ComputeServeOptions>(
    compute,
    session,
    async () => (await import('./compute.js')).runComputeServe,
  );

  const put = compute
    .command('put')
    .summary('check an RPN expression and store it for <compute_id>')
    .description(
      'Checks an RPN expression (e.g. "a b +") and stores it under compute/<compute_id> in the config ' +
        'store, where running compute servers pick it up live.',
    )
    .argument('<compute_id>', 'the id compute components name')
    .argument('<expression...>', 'the expression, quoted as one argument or as separate words')
    .option('--data-type <T>', 'fp32 or fp64: the precision it computes in');
  lazyAction<ComputePutOptions>(put, session, async () => (await import('./compute.js')).runComputePut);
}
