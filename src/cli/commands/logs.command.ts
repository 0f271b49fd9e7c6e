import { type Command, Option } from 'commander';
import { type CliSession, lazyAction, positiveInteger, settingsOption } from '../command-kit.js';

export interface LogsDecodeOptions {
  file?: string;
  fromQueue?: string;
  group: string;
  max?: number;
  idleMs: number;
  format: 'jsonl' | 'parquet';
  out?: string;
}

/** `lattice logs decode`. */
export function defineLogs(program: Command, session: CliSession): void {
  const logs = program
    .command('logs')
    .summary('inference logs: "logs decode" to JSON Lines or Parquet')
    .description('Inference logs (orchestrator.v1.OrchestratorLog) of the orchestrator.')
    .addOption(settingsOption());
  const decode = logs
    .command('decode')
    .summary('inference log records from a file or a queue topic, as JSON Lines or Parquet')
    .description(
      'Reads inference log records (orchestrator.v1.OrchestratorLog) and writes their rows as a table. ' +
        'jsonl: one JSON object per logged row (tracking_id, model_config_id, config_version, user_id, ' +
        'created_at_ms, rows, batch_index, entity_id, features, defaulted); parquet: one Parquet file ' +
        'with a column per logged column. Give exactly one of --file and --from-queue.',
    )
    .option('--file <FILE>', "a log file of length-delimited records (the logger's file sink)")
    .option(
      '--from-queue <TOPIC>',
      "records from a queue topic (the settings' queue), read as consumer group --group (its position advances as it reads)",
    )
    .option('--group <G>', 'the consumer group reading --from-queue', 'lattice-logs-decode')
    .option(
      '--max <N>',
      'stop after N records (queue only; default: until the topic is idle)',
      positiveInteger,
    )
    .option(
      '--idle-ms <MS>',
      'stop once no record arrived for MS milliseconds (queue only)',
      positiveInteger,
      2000,
    )
    .addOption(new Option('--format <F>', 'what to write').choices(['jsonl', 'parquet']).default('jsonl'))
    .option('--out <FILE>', 'where to write (default stdout for jsonl; required for parquet)');
  lazyAction<LogsDecodeOptions>(decode, session, async () => (await import('./logs.js')).runLogsDecode);
}
