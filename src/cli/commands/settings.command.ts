import type { Command } from 'commander';
import { type CliSession, lazyAction } from '../command-kit.js';

/** `lattice settings`. */
export function defineSettings(program: Command, session: CliSession): void {
  const command = program
    .command('settings')
    .summary('print the effective settings (secrets redacted) and their variables')
    .description(
      'Prints the effective settings as JSON (caller tokens, keys and secrets redacted), then every ' +
        'environment variable and the setting it sets.',
    );
  lazyAction(command, session, async () => (await import('./settings.js')).runSettings);
}
