import { type Command, InvalidArgumentError, Option } from 'commander';
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

const PRECISIONS = ['fp32', 'fp64'] as const;

/**
 * A value parser: a precision, as the expression document's data_type takes it (any case, and the
 * short f32 / f64), written the canonical way. It replaces the parser `choices` sets, which keeps
 * the choices for the help.
 */
function precision(text: string): string {
  const canonical = text
    .trim()
    .toLowerCase()
    .replace(/^f(32|64)$/, 'fp$1');
  if (!(PRECISIONS as readonly string[]).includes(canonical)) {
    throw new InvalidArgumentError(`Allowed choices are ${PRECISIONS.join(', ')}.`);
  }
  return canonical;
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
    .addOption(
      new Option('--data-type <T>', 'the precision it computes in (default fp64)')
        .choices(PRECISIONS)
        .argParser(precision),
    );
  lazyAction<ComputePutOptions>(put, session, async () => (await import('./compute.js')).runComputePut);
}
