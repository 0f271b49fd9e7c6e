import { type Command, Option } from 'commander';
import { addClientFlags, type ClientFlags } from '../client-flags.js';
import { type CliSession, lazyAction, positiveInteger, repeatable } from '../command-kit.js';

export interface PredictOptions extends ClientFlags {
  modelConfig: string;
  kind: 'point' | 'pair' | 'slate';
  context?: string[];
  target?: string[];
  targets?: string;
  pairs?: string[];
  slates?: string[];
  trackingId?: string;
  schema?: string[];
  deadlineMs: number;
  address?: string;
  json?: boolean;
}

/** `lattice predict`. */
export function definePredict(program: Command, session: CliSession): void {
  const command = program
    .command('predict')
    .summary('one Predict from the shell, scores decoded per row')
    .description(
      'One Predict call to the orchestrator (<host>:<orchestrator.port>, or --address) and its scores, ' +
        "decoded per row with each row's error. Give targets with --target ID ... or --targets FILE.",
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
    .option(
      '--target <ID[:k=v;…]>',
      'a target id with optional features, repeatable (c1, c2:price=12.5)',
      repeatable,
    )
    .option(
      '--targets <FILE>',
      'targets from a JSON file ([{"id": "c1", "features": {...}}] or ["c1", ...]) or a CSV file (an "id" column, every other column a feature)',
    )
    .option('--pairs <0-1,1-2>', 'pair-wise: pairs of target indexes, repeatable', repeatable)
    .option('--slates <0.1.2,3.4>', 'slate-wise: slates of target indexes, repeatable', repeatable)
    .option(
      '--schema <name=TYPE>',
      'the data type of a feature (FP32, INT64, STRING, FP32_VECTOR, ...), repeatable',
      repeatable,
    )
    .option('--deadline-ms <N>', "the call's deadline", positiveInteger, 5000)
    .option('--tracking-id <ID>', "the request's tracking id (echoed in the answer and the inference log)")
    .option('--address <HOST:PORT>', 'the orchestrator (default from the settings; https:// dials TLS)')
    .option('--json', 'print the decoded answer as JSON');
  addClientFlags(command).addHelpText(
    'after',
    '\nExit status: 0 scored (rows may carry errors, shown per row), 1 the call failed or the server is\ndown, 2 bad usage.',
  );
  lazyAction<PredictOptions>(command, session, async () => (await import('./predict.js')).runPredict);
}
