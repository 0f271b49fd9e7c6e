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
import { describeError, invalidArgument, LatticeError } from '../../platform/errors.js';
import { createLogger } from '../../platform/logging/index.js';
import { Platform } from '../../platform/platform.js';
import {
  type Queue,
  type ReadMessage,
  readMessages,
  TopicNotFoundError,
} from '../../platform/queue/index.js';
import { type LoadedSettings, loadSettings } from '../../platform/settings/index.js';
import { type CliContext, type Invocation, UsageError } from '../command-kit.js';
import { opsBaseUrl } from '../ops-url.js';
import { heldByAnotherProcess } from '../queue-access.js';
import {
  MAX_READ_IDLE_MS,
  MAX_READ_MESSAGES,
  QUEUE_READ_PATH,
  type QueueReadAnswer,
} from '../queue-read-route.js';
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
 * arrived for `idleMs`. Each message is acknowledged once taken; one that is not an OrchestratorLog
 * is reported and skipped. An embedded queue held by a running `lattice up` (its journal is locked)
 * is read through that process's ops server instead (queue-read-route.ts), as the same group.
 */
async function readFromQueue(
  context: CliContext,
  topic: string,
  options: DecodeOptions,
  onSkipped: () => void,
): Promise<OrchestratorLog[]> {
  const settings = loadSettings({ file: context.settingsFile });
  const platform = new Platform(settings, { logger: createLogger('lattice', { level: 'silent' }) });
  let messages: ReadMessage[];
  try {
    let queue: Queue | undefined;
    try {
      queue = await platform.queue();
    } catch (err) {
      if (!heldByAnotherProcess(err)) throw err;
    }
    messages =
      queue === undefined
        ? await readThroughRunningPlatform(settings, topic, options)
        : await readMessages(queue, topic, options);
  } catch (err) {
    if (err instanceof TopicNotFoundError) throw invalidArgument(`queue topic "${topic}" does not exist`);
    throw err;
  } finally {
    await platform.close();
  }
  const records: OrchestratorLog[] = [];
  for (const message of messages) {
    try {
      records.push(parseLogRecord(message.payload, `message ${message.sequence}`));
    } catch (err) {
      onSkipped();
      console.error(`lattice logs decode: skipping ${describeError(err)}`);
    }
  }
  return records;
}

/** The same read, done by the running `lattice up` on its embedded queue (its ops server's /queue route). */
async function readThroughRunningPlatform(
  settings: LoadedSettings,
  topic: string,
  options: DecodeOptions,
): Promise<ReadMessage[]> {
  const base = opsBaseUrl(settings);
  const url = `${base}${QUEUE_READ_PATH.replace(':topic', encodeURIComponent(topic))}`;
  const messages: ReadMessage[] = [];
  // The route takes at most MAX_READ_MESSAGES a call: read again until the group has no more or max is reached.
  while (messages.length < options.max) {
    const max = Math.min(MAX_READ_MESSAGES, options.max - messages.length);
    const idleMs = Math.min(options.idleMs, MAX_READ_IDLE_MS);
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ group: options.group, max, idle_ms: idleMs }),
        signal: AbortSignal.timeout(idleMs + 60_000),
      });
    } catch (err) {
      throw new LatticeError(
        'UNAVAILABLE',
        `the queue journal is in use by a running lattice up, whose ops server at ${base} did not answer (${describeError(err)}); point metrics.port (LATTICE_METRICS_PORT) at it`,
      );
    }
    const body = (await response.json()) as QueueReadAnswer & { error?: { code: string; message: string } };
    if (response.status === 404 && body.error) throw new TopicNotFoundError(topic);
    if (!response.ok) {
      throw new LatticeError(
        'UNAVAILABLE',
        `the running lattice up at ${base} could not read ${topic}: ${body.error?.message ?? response.statusText}`,
      );
    }
    for (const m of body.messages)
      messages.push({ sequence: m.sequence, payload: Buffer.from(m.payload_base64, 'base64') });
    if (body.messages.length < max) break;
  }
  return messages;
}
