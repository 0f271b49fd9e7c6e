import {
  asyncBufferFromFile,
  type FileMetaData,
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
} from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { describeError, invalidArgument } from '../platform/errors.js';

/** One Parquet row: its 1-based row number and its values by top-level column name. */
export interface ParquetRecord {
  line: number;
  record: Record<string, unknown>;
}

export interface ParquetSource {
  /** Top-level column names. */
  columns: string[];
  rowCount: number;
  /** The rows in batches (at most `batchRows` each, never across a row group). */
  batches(batchRows?: number): AsyncGenerator<ParquetRecord[]>;
}

/**
 * Opens a Parquet file for reading row by row with hyparquet (every codec of hyparquet-compressors).
 * Values come as hyparquet decodes them: numbers, bigints (INT64), strings (UTF8), booleans, arrays
 * (LIST), `Uint8Array` (plain BYTE_ARRAY), `null`.
 */
export async function openParquet(file: string): Promise<ParquetSource> {
  let metadata: FileMetaData;
  const buffer = await asyncBufferFromFile(file);
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (err) {
    throw invalidArgument(`${file} is not a readable Parquet file: ${describeError(err)}`, file);
  }
  const columns = parquetSchema(metadata).children.map((child) => child.element.name);
  return {
    columns,
    rowCount: Number(metadata.num_rows),
    async *batches(batchRows = 10_000) {
      let groupStart = 0;
      for (const group of metadata.row_groups) {
        const groupEnd = groupStart + Number(group.num_rows);
        for (let start = groupStart; start < groupEnd; start += batchRows) {
          const end = Math.min(groupEnd, start + batchRows);
          let rows: Record<string, unknown>[];
          try {
            rows = await parquetReadObjects({
              file: buffer,
              metadata,
              rowStart: start,
              rowEnd: end,
              compressors,
            });
          } catch (err) {
            throw invalidArgument(
              `${file}: rows ${start + 1}–${end} cannot be read: ${describeError(err)}`,
              file,
            );
          }
          yield rows.map((record, i) => ({ line: start + i + 1, record }));
        }
        groupStart = groupEnd;
      }
    },
  };
}
