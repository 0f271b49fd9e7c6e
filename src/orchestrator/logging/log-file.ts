import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { OrchestratorLog } from '../../gen/orchestrator/v1/log.js';
import { invalidArgument } from '../../platform/errors.js';

/**
 * The log file format: `OrchestratorLog` records back to back, each preceded by its length as a
 * protobuf varint (the "length-delimited" framing of protobuf's writeDelimitedTo), so any protobuf
 * library reads it. `lattice logs decode --file` reads it; FileLogSink and writeLogFile write it.
 */

/** Largest record a reader accepts. */
const MAX_RECORD_BYTES = 1024 * 1024 * 1024;

/** One serialized record with its length prefix. */
export function frameRecord(record: Uint8Array): Uint8Array {
  const prefix: number[] = [];
  let length = record.length;
  while (length > 0x7f) {
    prefix.push((length & 0x7f) | 0x80);
    length = Math.floor(length / 128);
  }
  prefix.push(length);
  const out = new Uint8Array(prefix.length + record.length);
  out.set(prefix, 0);
  out.set(record, prefix.length);
  return out;
}

/** The serialized records of a log file's bytes; INVALID_ARGUMENT naming the offset of a cut-off record. */
export function* splitRecords(bytes: Uint8Array): Generator<Uint8Array> {
  let offset = 0;
  while (offset < bytes.length) {
    const start = offset;
    let length = 0;
    let scale = 1;
    for (;;) {
      if (offset >= bytes.length || scale > 2 ** 35) {
        throw invalidArgument(`log file: the length prefix at byte ${start} is cut off or malformed`);
      }
      const byte = bytes[offset++]!;
      length += (byte & 0x7f) * scale;
      scale *= 128;
      if (byte < 0x80) break;
    }
    if (length > MAX_RECORD_BYTES || offset + length > bytes.length) {
      throw invalidArgument(
        `log file: the record at byte ${start} declares ${length} bytes but ${bytes.length - offset} remain`,
      );
    }
    yield bytes.subarray(offset, offset + length);
    offset += length;
  }
}

/** Parses one serialized record; INVALID_ARGUMENT when it is not an OrchestratorLog. */
export function parseLogRecord(bytes: Uint8Array, where = 'record'): OrchestratorLog {
  try {
    return OrchestratorLog.decode(bytes);
  } catch (err) {
    throw invalidArgument(`${where} is not an OrchestratorLog message: ${(err as Error).message}`);
  }
}

/** Every record of a log file. */
export async function readLogFile(path: string): Promise<OrchestratorLog[]> {
  const bytes = await readFile(path);
  let index = 0;
  const records: OrchestratorLog[] = [];
  for (const record of splitRecords(bytes))
    records.push(parseLogRecord(record, `${path}: record ${index++}`));
  return records;
}

/** Writes records to a log file, replacing it, or appending with `append`. */
export async function writeLogFile(
  path: string,
  records: readonly OrchestratorLog[],
  options: { append?: boolean } = {},
): Promise<void> {
  const framed = Buffer.concat(records.map((r) => frameRecord(OrchestratorLog.encode(r).finish())));
  if (options.append) await appendFile(path, framed);
  else await writeFile(path, framed);
}
