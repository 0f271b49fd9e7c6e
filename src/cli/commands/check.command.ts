import type { Command } from 'commander';
import { type CliSession, lazyAction } from '../command-kit.js';

export interface CheckOptions {
  json?: boolean;
}

/** `lattice check`. */
export function defineCheck(program: Command, session: CliSession): void {
  const command = program
    .command('check')
    .summary('report whether every configured adapter is ready, creating nothing')
    .description(
      'Prints one line per port (config store, queue, SQL, cache, vector database): a quick way to ' +
        'verify settings before starting a service. A server adapter, and an embedded one without ' +
        'files, is opened and runs its readiness check. An embedded adapter that owns a data directory ' +
        '(PGlite, the queue journal, the embedded vector database) is never opened, since opening ' +
        'creates and recovers its files: its directory is checked instead, and when a running ' +
        '"lattice up" holds it (its lock), that process\'s /readyz on metrics.port answers for it.',
    )
    .option('--json', 'print a JSON list instead of lines')
    .addHelpText('after', '\nExit status: 0 every port is ready, 1 any failed.');
  lazyAction<CheckOptions>(command, session, async () => (await import('./check.js')).runCheck);
}
