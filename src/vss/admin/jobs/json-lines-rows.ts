/**
 * JSON Lines training files: one JSON object per line (LF or CRLF), read as a stream with
 * node:readline, so memory holds one batch of lines whatever the file's size. Blank lines are
 * skipped; a line that is not a JSON object is a row with an error (a bad row, not a failed job).
 * Rows are numbered by line.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { describeError, LatticeError } from '../../../platform/errors.js';
import type { RowSource, SourceRow } from './row-source.js';

export interface JsonLinesRowsOptions {
  /** Lines per batch. */
  batchRows: number;
}

export function openJsonLinesRows(
  path: string,
  name: string,
  size: number,
  options: JsonLinesRowsOptions,
): RowSource {
  let bytesRead = 0;
  let finished = false;
  let stream: ReturnType<typeof createReadStream> | undefined;
  return {
    columns: undefined,
    fraction: () => (finished || size === 0 ? 1 : Math.min(1, bytesRead / size)),
    async *batches(after) {
      stream = createReadStream(path, { highWaterMark: 256 * 1024 });
      let failure: unknown;
      stream.on('error', (err) => {
        failure = err;
      });
      stream.on('data', () => {
        bytesRead = stream?.bytesRead ?? bytesRead;
      });
      const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
      let line = 0;
      let batch: SourceRow[] = [];
      try {
        for await (const text of lines) {
          line++;
          if (line <= after) continue;
          const row = parseLine(line === 1 ? text.replace(/^\uFEFF/, '') : text, line);
          if (row === undefined) continue;
          batch.push(row);
          if (batch.length >= options.batchRows) {
            yield batch;
            batch = [];
          }
        }
      } catch (err) {
        failure ??= err;
      } finally {
        lines.close();
        stream.destroy();
      }
      if (failure !== undefined) {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `${name} cannot be read after line ${line}: ${describeError(failure)}`,
          { field: 'training_data_path', cause: failure },
        );
      }
      finished = true;
      if (batch.length > 0) yield batch;
    },
    close: () => stream?.destroy(),
  };
}

function parseLine(text: string, line: number): SourceRow | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { row: line, error: `line is not JSON: ${describeError(err)}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { row: line, error: 'line is not a JSON object' };
  }
  return { row: line, fields: value as Record<string, unknown> };
}
