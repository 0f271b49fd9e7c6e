import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { OrchestratorLog } from '../../gen/orchestrator/v1/log.js';
import {
  arrowToParquet,
  type DecodedLog,
  decodedLogsToTable,
  decodeLogRecord,
  logRowObjects,
  parseLogRecord,
  readLogFile,
} from '../../orchestrator/logging/index.js';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { createLogger } from '../../platform/logging/index.js';
import { Platform } from '../../platform/platform.js';
import { TopicNotFoundError } from '../../platform/queue/index.js';
import { loadSettings } from '../../platform/settings/index.js';
import type { CliContext } from '../main.js';

export const logsUsage = `Usage: lattice logs decode (--file FILE | --from-queue TOPIC [--group G] [--max N] [--idle-ms MS])
                          [--format jsonl|parquet] [--out FILE]

Reads inference log records (orchestrator.v1.OrchestratorLog) and writes their rows as a table:
  --file FILE         a log file of length-delimited records (the logger's file sink, writeLogFile)
  --from-queue TOPIC  records from a queue topic (the queue of the settings), as consumer group G
                      (default lattice-logs-decode; the group's position advances as it reads)
  --max N             stop after N records (queue only; default: until the topic is idle)
  --idle-ms MS        stop once no record arrived for MS milliseconds (queue only; default 2000)
  --format            jsonl (default): one JSON object per logged row (tracking_id, model_config_id,
                      config_version, user_id, created_at_ms, rows, batch_index, entity_id, features,
                      defaulted); parquet: one Parquet file with a column per logged column
  --out FILE          where to write (default stdout for jsonl; required for parquet)`;

interface DecodeOptions {
  file: string | undefined;
  topic: string | undefined;
  group: string;
  max: number;
  idleMs: number;
  format: 'jsonl' | 'parquet';
  out: string | undefined;
}

function positiveInteger(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw invalidArgument(`--${name} must be a whole number > 0, got "${value}"`);
  return n;
}

function parseDecodeOptions(args: string[]): DecodeOptions {
  let parsed: ReturnType<typeof parseDecodeArgs>;
  try {
    parsed = parseDecodeArgs(args);
  } catch (err) {
    throw invalidArgument(`${describeError(err)}\n\n${logsUsage}`);
  }
  const { values } = parsed;
  const file = values.file;
  const topic = values['from-queue'];
  if ((file === undefined) === (topic === undefined)) {
    throw invalidArgument(`give exactly one of --file and --from-queue\n\n${logsUsage}`);
  }
  const format = values.format ?? 'jsonl';
  if (format !== 'jsonl' && format !== 'parquet') {
    throw invalidArgument(`--format must be jsonl or parquet, got "${format}"`);
  }
  if (format === 'parquet' && values.out === undefined)
    throw invalidArgument('--format parquet needs --out FILE');
  return {
    file,
    topic,
    group: values.group ?? 'lattice-logs-decode',
    max: positiveInteger(values.max, 'max', Number.POSITIVE_INFINITY),
    idleMs: positiveInteger(values['idle-ms'], 'idle-ms', 2000),
    format,
    out: values.out,
  };
}

function parseDecodeArgs(args: string[]) {
  return parseArgs({
    args,
    options: {
      file: { type: 'string' },
      'from-queue': { type: 'string' },
      group: { type: 'string' },
      max: { type: 'string' },
      'idle-ms': { type: 'string' },
      format: { type: 'string' },
      out: { type: 'string' },
    },
    allowPositionals: false,
    strict: true,
  });
}

/** `lattice logs <subcommand>`: today only `decode`. */
export async function runLogs(context: CliContext): Promise<void> {
  const [sub, ...args] = context.argv;
  if (sub !== 'decode') {
    if (sub === undefined || sub === 'help') {
      console.log(logsUsage);
      return;
    }
    throw invalidArgument(`unknown logs subcommand "${sub}"\n\n${logsUsage}`);
  }
  const options = parseDecodeOptions(args);
  const records = options.file
    ? await readLogFile(options.file)
    : await readFromQueue(context, options.topic!, options);
  const decoded: DecodedLog[] = [];
  for (const [i, record] of records.entries()) {
    try {
      decoded.push(await decodeLogRecord(record));
    } catch (err) {
      throw invalidArgument(`record ${i} (tracking_id "${record.trackingId}"): ${describeError(err)}`);
    }
  }
  const rows = decoded.reduce((n, d) => n + d.rows.length, 0);
  if (records.length === 0 && !options.file) {
    // A consumer group reads each record once: an empty answer usually means this group already did.
    console.error(
      `lattice logs decode: no new records on ${options.topic} for group ${options.group} (a group reads each record once; --group <another name> reads the topic from its oldest retained record)`,
    );
  }
  if (options.format === 'parquet') {
    await writeFile(options.out!, arrowToParquet(decodedLogsToTable(decoded), 'zstd'));
  } else {
    await writeJsonLines(decoded, options.out);
  }
  console.error(
    `lattice logs decode: ${decoded.length} records, ${rows} rows${options.out ? ` written to ${options.out}` : ''}`,
  );
}

async function writeJsonLines(decoded: readonly DecodedLog[], out: string | undefined): Promise<void> {
  const stream = out === undefined ? process.stdout : createWriteStream(out);
  for (const log of decoded) {
    let chunk = '';
    for (const row of logRowObjects(log)) chunk += `${JSON.stringify(row)}\n`;
    if (!stream.write(chunk)) await once(stream, 'drain');
  }
  if (out !== undefined) {
    stream.end();
    await once(stream, 'finish');
  }
}

/**
 * Reads records from a queue topic as consumer group `group`: until `max` records, or until none
 * arrived for `idleMs`. Each message is acknowledged once parsed; one that is not an
 * OrchestratorLog is reported and skipped.
 */
async function readFromQueue(
  context: CliContext,
  topic: string,
  options: DecodeOptions,
): Promise<OrchestratorLog[]> {
  const settings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings, { logger: createLogger('lattice', { level: 'silent' }) });
  const records: OrchestratorLog[] = [];
  try {
    const queue = await platform.queue();
    try {
      await queue.describeTopic(topic);
    } catch (err) {
      if (err instanceof TopicNotFoundError) throw invalidArgument(`queue topic "${topic}" does not exist`);
      throw err;
    }
    let taken = 0;
    let skipped = 0;
    let finish: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let idle = setTimeout(finish, options.idleMs);
    const consumer = await queue.subscribe(topic, options.group, async (message) => {
      if (taken >= options.max) {
        await message.nak(); // not ours to take: the group sees it again next time
        return;
      }
      taken++;
      clearTimeout(idle);
      if (taken >= options.max) finish();
      else idle = setTimeout(finish, options.idleMs);
      try {
        records.push(parseLogRecord(message.payload, `message ${message.sequence}`));
      } catch (err) {
        skipped++;
        console.error(`lattice logs decode: skipping ${describeError(err)}`);
      }
      await message.ack();
    });
    await done;
    clearTimeout(idle);
    await consumer.close();
    if (skipped > 0) process.exitCode = 1;
  } finally {
    await platform.close();
  }
  return records;
}
