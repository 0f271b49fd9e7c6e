import { type Command, InvalidArgumentError, Option } from 'commander';
import { allDataTypes, DataType, lookupDataType } from '../../datatypes/data-type.js';
import { addressOption } from '../address-option.js';
import { addClientFlags, type ClientFlags } from '../client-flags.js';
import { type CliSession, lazyAction, positiveInteger, repeatable } from '../command-kit.js';
import { addDeprecatedAlias } from '../deprecated-alias.js';

export interface PredictOptions extends ClientFlags {
  modelConfig: string;
  kind: 'point' | 'pair' | 'slate';
  context?: string[];
  /** `--target-id`: target ids, each with optional features. */
  targetId?: string[];
  targets?: string;
  pairs?: string[];
  slates?: string[];
  trackingId?: string;
  schema?: string[];
  deadlineMs: number;
  /** The orchestrator. */
  address?: string;
  json?: boolean;
  /** Ask for per-component timings and print them after the scores. */
  timings?: boolean;
}

const DATA_TYPE_NAMES = allDataTypes.map((type) => DataType[type]);

/** A value parser: `--schema name=TYPE`, repeatable, where TYPE names a data type. */
function schemaEntry(text: string, previous: string[] | undefined): string[] {
  const at = text.indexOf('=');
  if (at <= 0 || lookupDataType(text.slice(at + 1)) === undefined) {
    throw new InvalidArgumentError(`It must be name=TYPE, TYPE one of ${DATA_TYPE_NAMES.join(', ')}.`);
  }
  return repeatable(text, previous);
}

/** `lattice predict`. */
export function definePredict(program: Command, session: CliSession): void {
  const targetId = new Option(
    '--target-id <ID[:k=v;…]>',
    'a target id with optional features, repeatable (c1, c2:price=12.5)',
  ).argParser(repeatable);
  const command = program
    .command('predict')
    .summary('one Predict from the shell, scores decoded per row')
    .description(
      'One Predict call to the orchestrator (<host>:<orchestrator.port>, or --address) and its scores, ' +
        "decoded per row with each row's error. Give targets with --target-id ID ... or --targets FILE.",
    )
    .requiredOption('--model-config <ID>', 'the model config to score with (e.g. catalog_ranker)')
    .addOption(
      new Option('--kind <K>', 'the kind of request').choices(['point', 'pair', 'slate']).default('point'),
    )
    .option(
      '--context <k=v>',
      'a context feature, repeatable (user_id=u1); values are JSON when they parse (12.5, true, [1,2]), text otherwise',
      repeatable,
    )
    .addOption(targetId)
    .option(
      '--targets <FILE>',
      'targets from a JSON file ([{"id": "c1", "features": {...}}] or ["c1", ...]) or a CSV file (an "id" column, every other column a feature)',
    )
    .option('--pairs <0-1,1-2>', 'pair-wise: pairs of target indexes, repeatable', repeatable)
    .option('--slates <0.1.2,3.4>', 'slate-wise: slates of target indexes, repeatable', repeatable)
    .option(
      '--schema <name=TYPE>',
      `the data type of a feature, repeatable (price=FP32); TYPE one of ${DATA_TYPE_NAMES.join(', ')}`,
      schemaEntry,
    )
    .option('--deadline-ms <N>', "the call's deadline", positiveInteger, 5000)
    .option('--tracking-id <ID>', "the request's tracking id (echoed in the answer and the inference log)")
    .addOption(
      addressOption('grpc', 'the orchestrator (default <host>:<orchestrator.port> from the settings)'),
    )
    .option('--json', 'print the decoded answer as JSON')
    .option(
      '--timings',
      "print each component's start, duration and state after the scores (the lattice-timings trailer)",
    );
  // `--target` was the target id's name; in `search` it was the server's address (now `--address`).
  addDeprecatedAlias(command, targetId, '--target <ID[:k=v;…]>', session.io);
  addClientFlags(command).addHelpText(
    'after',
    '\nExit status: 0 scored (rows may carry errors, shown per row), 1 the call failed or the server is\ndown, 2 bad usage.',
  );
  lazyAction<PredictOptions>(command, session, async () => (await import('./predict.js')).runPredict);
}
