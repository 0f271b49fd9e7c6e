import type { Command } from 'commander';
import { type CliSession, lazyAction } from '../command-kit.js';

export interface CheckOptions {
  json?: boolean;
}

/** `lattice check`. */
export function defineCheck(program: Command, session: CliSession): void {
  const command = program
    .command('check')
    .summary('open every configured adapter and report whether it is ready')
    .description(
      'Opens each configured adapter (config store, queue, SQL, cache, vector database), runs its ' +
        'readiness check and prints one line per port: a quick way to verify settings before starting a ' +
        'service. An embedded adapter held by a running "lattice up" (its data directory locked) is ' +
        "reported from that process's /readyz on metrics.port.",
    )
    .option('--json', 'print a JSON list instead of lines')
    .addHelpText('after', '\nExit status: 0 every port is ready, 1 any failed.');
  lazyAction<CheckOptions>(command, session, async () => (await import('./check.js')).runCheck);
}
