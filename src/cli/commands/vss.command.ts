import { Argument, type Command, InvalidArgumentError, Option } from 'commander';
import { addressOption } from '../address-option.js';
import {
  type CliSession,
  lazyAction,
  portNumber,
  positiveInteger,
  runsWithSubcommands,
} from '../command-kit.js';
import { addDeprecatedAlias } from '../deprecated-alias.js';
import { defineVssAdminCommands } from '../vss-admin/admin-commands.js';

/** Which vss components one process runs. */
export interface VssComponents {
  serving: boolean;
  consumers: boolean;
  admin: boolean;
}

export interface VssComponentOptions {
  port?: number;
  metricsPort?: number;
  partitions?: number[];
  /** `lattice vss --no-admin`: false (serving and the consumers only); undefined elsewhere. */
  admin?: boolean;
}

export interface VssPublishOptions {
  /** The ops server of the process holding the embedded queue. */
  address?: string;
}

export interface VssDeadLettersOptions {
  topic?: string;
  limit?: number;
  json?: boolean;
  /** The ops server of the process holding the embedded queue. */
  address?: string;
}

export interface VssReplayOptions {
  topic?: string;
  limit?: number;
  id?: string;
}

/** `0-3,6` → [0, 1, 2, 3, 6]. */
export function parsePartitions(text: string): number[] {
  const partitions = new Set<number>();
  for (const part of text.split(',')) {
    const range = /^\s*(\d{1,4})\s*(?:-\s*(\d{1,4})\s*)?$/.exec(part);
    const from = Number(range?.[1]);
    const to = range?.[2] === undefined ? from : Number(range[2]);
    if (range === null || to < from) {
      throw new InvalidArgumentError('It must be partition numbers and ranges such as 0-3,6.');
    }
    for (let p = from; p <= to; p++) partitions.add(p);
  }
  return [...partitions].sort((a, b) => a - b);
}

const PORT_HELP = 'the vss.v1.SimilaritySearch gRPC port (default settings vss.servingPort)';
const METRICS_PORT_HELP = 'the HTTP /healthz /readyz /metrics port (default settings metrics.port)';
const PARTITIONS_HELP =
  "this process's share of each topic's partitions, e.g. 0-3 or 0,2,4,6 (default all): processes of one group must split them";
const NO_ADMIN_HELP =
  'serving and the consumers only, no admin: a further process beside one that runs admin, on a vector database server (Qdrant, pgvector)';
const OPS_ADDRESS_HELP =
  'the ops server of the running process holding the embedded queue (default from the settings: host and metrics.port)';
const ALONE =
  ' Alone only with a vector database server (Qdrant, pgvector); on the embedded one (it lives in one process) run "lattice vss".';

/** `--address` of the ops server, with `--ops-url`, its name before, as a deprecated alias. */
function withOpsAddress(command: Command, session: CliSession): Command {
  const address = addressOption('http', OPS_ADDRESS_HELP);
  command.addOption(address);
  return addDeprecatedAlias(command, address, '--ops-url <URL>', session.io);
}

/** `lattice vss` and its subcommands: the components, replay, and the admin API's clients. */
export function defineVss(program: Command, session: CliSession): void {
  const vss = runsWithSubcommands(program.command('vss'))
    .summary('vss serving, consumers and admin; each alone; replay; admin clients')
    .description(
      'vss serving, the vss consumers and vss admin in one process, sharing one SQL client, vector ' +
        'database and queue: how the embedded vector database (it lives in one process) must run. ' +
        'Each component serves /healthz, /readyz and /metrics on --metrics-port.',
    )
    .option('--port <N>', PORT_HELP, portNumber)
    .option('--metrics-port <N>', METRICS_PORT_HELP, portNumber)
    .option('--partitions <LIST>', PARTITIONS_HELP, parsePartitions)
    .option('--no-admin', NO_ADMIN_HELP);
  const components = (which: VssComponents) => async () => {
    const { runVssComponents } = await import('./vss.js');
    return runVssComponents(which);
  };
  lazyAction<VssComponentOptions>(vss, session, components({ serving: true, consumers: true, admin: true }));

  // Each component alone: its own flags, its own share of the parts.
  const alone = (name: keyof VssComponents, summary: string, description: string, flags: string[]) => {
    const command = vss
      .command(name)
      .summary(summary)
      .description(description + ALONE);
    if (flags.includes('port')) command.option('--port <N>', PORT_HELP, portNumber);
    command.option('--metrics-port <N>', METRICS_PORT_HELP, portNumber);
    if (flags.includes('partitions')) command.option('--partitions <LIST>', PARTITIONS_HELP, parsePartitions);
    const which = { serving: false, consumers: false, admin: false, [name]: true };
    lazyAction<VssComponentOptions>(command, session, components(which));
  };
  alone(
    'serving',
    'vss serving alone (serving replicas, with a vector database server)',
    'Serves vss.v1.SimilaritySearch on the configured SQL store, cache and vector database (settings ' +
      'vss.vectorDb: embedded in <dataDir>/vectordb by default). Settings vss.pageTokenSecret ' +
      '(LATTICE_VSS_PAGE_TOKEN_SECRET) sets the page-token key (share it between replicas); ' +
      'vss.recallSampleRate (LATTICE_VSS_RECALL_SAMPLE_RATE, 0..1, default 0.01) the share of queries ' +
      're-run for avg_recall.',
    ['port'],
  );
  alone(
    'consumers',
    'the vss consumers alone (consumer processes splitting the partitions)',
    'Applies embedding events, EOF markers and real-time events from the vss topics (settings ' +
      'vss.consumers: embeddingsTopic, realtimeTopic, group, partitions, batchSize, lingerMs, retries, ' +
      'ackWaitMs) to the SQL store and the vector database, and sweeps expired embedding-store rows.',
    ['partitions'],
  );
  alone(
    'admin',
    'the vss admin HTTP API and its operations engine alone',
    'The admin HTTP API (settings vss.admin.port, default 8090; OpenAPI at /docs; API keys ' +
      'vss.admin.apiKeys) and the operations engine that runs its operations (outbox relay, admin ' +
      'consumers, scheduled resets; ingestion jobs on vss.admin.jobRunner).',
    [],
  );

  const replay = vss
    .command('replay')
    .summary('re-publish dead letters of the vss topics to their origin, then exit')
    .description(
      'Re-publishes dead letters to the topic they came from, once their cause is fixed: all of them, ' +
        'the oldest N, or the one whose dead-letter id (<topic>:<group>:<sequence>, as logged) or original ' +
        'message id is ID. A dead letter leaves <topic>-dlq only once its re-publish is durable. On the ' +
        'embedded queue, stop the process that holds the queue journal first.',
    )
    .option('--topic <T>', 'the topic (default vss.consumers.embeddingsTopic and realtimeTopic)')
    .option('--limit <N>', 'the oldest N dead letters only', positiveInteger)
    .addOption(
      new Option('--id <ID>', 'the one dead letter with this id or original message id').conflicts('limit'),
    );
  lazyAction<VssReplayOptions>(replay, session, async () => (await import('./vss.js')).runVssReplay);

  const publish = vss
    .command('publish')
    .summary('publish real-time or embedding events from a JSON Lines file, then exit')
    .description(
      'Publishes one event per line of FILE to the real-time topic (vss.consumers.realtimeTopic) or ' +
        'the embeddings topic (embeddingsTopic). Every line is first checked as the consumers parse it: ' +
        'one bad line refuses the file, naming each bad line, and nothing is published. Embedding events ' +
        'are keyed by candidate_id, real-time events by their first id. On JetStream it publishes to the ' +
        'queue; on the embedded queue of a running `lattice up` or `lattice vss`, through its ops server ' +
        "(the settings' host and metrics.port, or --address).",
    )
    .addArgument(new Argument('<kind>', 'what the file holds').choices(['realtime', 'embeddings']))
    .argument('<FILE>', 'a JSON Lines file, one event per line');
  lazyAction<VssPublishOptions>(
    withOpsAddress(publish, session),
    session,
    async () => (await import('./vss-events.js')).runVssPublish,
  );

  const deadLetters = vss
    .command('dead-letters')
    .summary('list the dead letters of the vss topics with their reasons, then exit')
    .description(
      "Lists the dead letters waiting for `lattice vss replay`, oldest first: each one's id (what " +
        '`replay --id` takes, and what the dead-lettering was logged with), origin partition, key, ' +
        'attempts, when, the reason and the field at fault, and the start of its payload. Listing ' +
        'leaves them in place. On the embedded queue of a running `lattice up` or `lattice vss` it asks ' +
        "that process (its ops server: the settings' host and metrics.port, or --address).",
    )
    .option('--topic <T>', 'the topic (default vss.consumers.embeddingsTopic and realtimeTopic)')
    .option('--limit <N>', 'the oldest N dead letters of each topic only', positiveInteger)
    .option('--json', 'print the listings as JSON');
  lazyAction<VssDeadLettersOptions>(
    withOpsAddress(deadLetters, session),
    session,
    async () => (await import('./vss-events.js')).runVssDeadLetters,
  );

  defineVssAdminCommands(vss, session);
}
