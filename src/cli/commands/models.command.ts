import type { Command } from 'commander';
import { addressOption } from '../address-option.js';
import { type CliSession, lazyAction, runsWithSubcommands } from '../command-kit.js';
import { addDeprecatedAlias } from '../deprecated-alias.js';

export interface ModelsOptions {
  json?: boolean;
  /** The running orchestrator's ops server. */
  address?: string;
}

export interface ModelsCompareOptions {
  json?: boolean;
  address?: string;
  callerToken?: string;
}

export interface ModelsApplyOptions {
  dryRun?: boolean;
  comment?: string;
}

/** `lattice models`. */
export function defineModels(program: Command, session: CliSession): void {
  const address = addressOption(
    'http',
    "the running orchestrator's ops server (default http://<host>:<metrics.port> from the settings)",
  );
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
        'which).\n\n' +
        'LOADED is what the running orchestrator serves: when it loaded the version it serves now (its ' +
        'last reload) and the latest change it rejected, from GET /models on its ops server (the ' +
        'settings\' host and metrics.port, or --address); "?" when none answered.',
    )
    .option('--json', 'print a JSON list instead of a table')
    .addOption(address)
    .addHelpText(
      'after',
      '\nExit status: 0 listed (invalid configs included), 1 the config store could not be read.',
    );
  addDeprecatedAlias(command, address, '--ops-url <URL>', session.io);
  runsWithSubcommands(command);
  lazyAction<ModelsOptions>(command, session, async () => (await import('./models.js')).runModels);

  const apply = command
    .command('apply')
    .summary('validate model config files and write them to the config store')
    .description(
      'Validates each model config document (JSON, or YAML by its .yaml/.yml name) the way the ' +
        'orchestrator does and writes each valid one to models/<model_config_id> in the configured ' +
        "config store (the file store's directory, or etcd), where a running orchestrator loads it " +
        'within a second. A document that does not validate is reported with every problem and is ' +
        "not written. Each write is recorded in the config's revision history (model-revisions/ in the " +
        'same store, shown by the console) with the OS user as its author and --comment as why.',
    )
    .argument('<files...>', 'the model config documents')
    .option('--dry-run', 'validate only')
    .option('--comment <text>', 'why: recorded with each revision written', '')
    .addHelpText(
      'after',
      '\nExit status: 0 every document valid (and written), 1 any invalid or unreadable.',
    );
  lazyAction<ModelsApplyOptions>(apply, session, async () => (await import('./models.js')).runModelsApply);

  const compare = command
    .command('compare')
    .summary("how a shadow config's answers compare with its primary's")
    .description(
      "Prints the running orchestrator's figures for a primary model config and the shadow config its " +
        '`shadow` block mirrors requests to (docs/orchestrator.md "Shadow configs"): requests sampled, ' +
        "compared, failed and dropped, then over the recent comparisons the overlap of the two answers' " +
        "top k targets, Kendall's tau-b over the targets both scored, the mean and max absolute score " +
        'difference, and the shadow-minus-primary latency per component. Read from GET ' +
        '/api/v1/models/PRIMARY/shadows/SHADOW on its ops server.',
    )
    .argument('<primary>', "the primary's model_config_id")
    .argument('<shadow>', "the shadow's model_config_id")
    .option('--json', 'print the figures as JSON')
    .addOption(
      addressOption('http', "the running orchestrator's ops server (default http://<host>:<metrics.port>)"),
    )
    .option(
      '--caller-token <TOKEN>',
      'token for an ops server with caller tokens on (default: LATTICE_CALLER_TOKEN)',
    )
    .addHelpText(
      'after',
      '\nExit status: 0 printed, 1 no orchestrator answered or the primary has no such shadow.',
    );
  lazyAction<ModelsCompareOptions>(
    compare,
    session,
    async () => (await import('./models-compare.js')).runModelsCompare,
  );
}
