import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
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
import { type CliContext, type Invocation, UsageError } from '../command-kit.js';
import type { LogsDecodeOptions } from './logs.command.js';

interface DecodeOptions {
  file: string | undefined;
  topic: string | undefined;
  group: string;
  max: number;
  idleMs: number;
  format: 'jsonl' | 'parquet';
  out: string | undefined;
}

function decodeOptions(values: LogsDecodeOptions): DecodeOptions {
  if ((values.file === undefined) === (values.fromQueue === undefined)) {
    throw new UsageError('give exactly one of --file and --from-queue');
  }
  if (values.format === 'parquet' && values.out === undefined) {
    throw new UsageError('--format parquet needs --out FILE');
  }
  return {
    file: values.file,
    topic: values.fromQueue,
    group: values.group,
    max: values.max ?? Number.POSITIVE_INFINITY,
    idleMs: values.idleMs,
    format: values.format,
    out: values.out,
  };
}

/** `lattice logs decode`; exit status 1 when a queue message was not a log record (it is skipped). */
export async function runLogsDecode({
  options: values,
  context,
}: Invocation<LogsDecodeOptions>): Promise<number> {
  const options = decodeOptions(values);
  let skipped = 0;
  const records = options.file
    ? await readLogFile(options.file)
    : await readFromQueue(context, options.topic!, options, () => skipped++);
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
  return skipped > 0 ? 1 : 0;
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
  onSkipped: () => void,
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
        onSkipped();
        console.error(`lattice logs decode: skipping ${describeError(err)}`);
      }
      await message.ack();
    });
    await done;
    clearTimeout(idle);
    await consumer.close();
  } finally {
    await platform.close();
  }
  return records;
}
