import type { Command } from 'commander';
import { type CliSession, lazyAction } from '../command-kit.js';

export interface ModelsOptions {
  json?: boolean;
}

/** `lattice models`. */
export function defineModels(program: Command, session: CliSession): void {
  const command = program
    .command('models')
    .summary('every orchestrator model config, its validation state and version')
    .description(
      'Lists every model config in the configured config store (models/<model_config_id>: a file ' +
        '<configStore.dir>/models/<id>.json or .yaml, or an etcd key) and validates and builds each the ' +
        'way the orchestrator does when it loads one. It only reads the store, so it works while ' +
        '"lattice up" or "lattice orchestrator" runs.\n\n' +
        "CHANGED is when the document last changed: its file's modification time (file store), or its " +
        'etcd revision (etcd keeps no times; the revision is the config_version a running orchestrator ' +
        'logs for that version). A running orchestrator reloads a change within a second: a valid ' +
        'document is served from then on; an invalid one is rejected and the last valid version it ' +
        'loaded keeps serving (its log and orchestrator_model_config_reloads_total on its /metrics say ' +
        'which).',
    )
    .option('--json', 'print a JSON list instead of a table')
    .addHelpText(
      'after',
      '\nExit status: 0 listed (invalid configs included), 1 the config store could not be read.',
    );
  lazyAction<ModelsOptions>(command, session, async () => (await import('./models.js')).runModels);
}
