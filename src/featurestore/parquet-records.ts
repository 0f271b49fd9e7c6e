import { describeError, invalidArgument } from '../platform/errors.js';
import { type OpenParquetFile, openParquetFile, plainValue } from '../platform/parquet/index.js';

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
 * Opens a Parquet file for reading row by row, lazily (platform/parquet). Values come as plain
 * JavaScript: numbers, bigints (INT64), strings (UTF8), booleans, arrays (LIST), `Uint8Array` (plain
 * BYTE_ARRAY), `Date` (DATE, TIMESTAMP), `null`.
 */
export async function openParquet(file: string): Promise<ParquetSource> {
  let parquet: OpenParquetFile;
  try {
    parquet = await openParquetFile(file);
  } catch (err) {
    throw invalidArgument(`${file} is not a readable Parquet file: ${describeError(err)}`, file);
  }
  const columns = parquet.fields;
  return {
    columns: columns.map((field) => field.name),
    rowCount: parquet.rowCount,
    async *batches(batchRows = 10_000) {
      let line = 1;
      for (let group = 0; group < parquet.groupRows.length; group++) {
        const groupEnd = line + parquet.groupRows[group]!;
        try {
          for await (const table of parquet.readGroup(group, batchRows)) {
            const vectors = columns.map((field) => table.getChild(field.name));
            const rows: ParquetRecord[] = new Array(table.numRows);
            for (let row = 0; row < table.numRows; row++) {
              const record: Record<string, unknown> = {};
              for (let c = 0; c < columns.length; c++) {
                const field = columns[c]!;
                record[field.name] = plainValue(vectors[c]?.get(row), field.type);
              }
              rows[row] = { line: line + row, record };
            }
            line += table.numRows;
            yield rows;
          }
        } catch (err) {
          throw invalidArgument(
            `${file}: rows ${line}–${groupEnd - 1} cannot be read: ${describeError(err)}`,
            file,
          );
        }
        line = groupEnd;
      }
    },
  };
}
