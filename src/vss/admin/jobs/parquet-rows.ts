/**
 * Parquet training files, read a row group at a time in batches (platform/parquet: every codec, only
 * the footer and the row group being read in memory). Vector columns (LIST or FIXED_SIZE_LIST of
 * floats or integers) come out as typed arrays over the batch's buffers; other cells as plain
 * values (text, numbers, bigints for INT64, booleans, `Date` for dates and timestamps, lists).
 */
import type { Vector } from 'apache-arrow';
import { describeError, LatticeError } from '../../../platform/errors.js';
import { type OpenParquetFile, openParquetFile, plainValue } from '../../../platform/parquet/index.js';
import type { RowSource, SourceRow } from './row-source.js';

export interface ParquetRowsOptions {
  /** Rows per batch. */
  batchRows: number;
  /** Columns read as vectors (the embedding columns). */
  vectorColumns: readonly string[];
}

/** Opens a Parquet file; FAILED_PRECONDITION naming the file when it is not a readable Parquet file. */
export async function openParquetRows(
  path: string,
  name: string,
  options: ParquetRowsOptions,
): Promise<RowSource> {
  let file: OpenParquetFile;
  try {
    file = await openParquetFile(path);
  } catch (err) {
    throw unreadable(`${name} is not a readable Parquet file: ${describeError(err)}`, err);
  }
  const { fields, groupRows, rowCount: totalRows } = file;
  let rowsDone = 0;
  const vectorColumns = new Set(options.vectorColumns);
  return {
    columns: fields.map((field) => field.name),
    fraction: () => (totalRows === 0 ? 1 : rowsDone / totalRows),
    async *batches(after) {
      let first = 1;
      rowsDone = Math.min(after, totalRows);
      for (let group = 0; group < groupRows.length; group++) {
        const rows = groupRows[group]!;
        const groupEnd = first + rows;
        // Whole groups before the resume point are not read at all.
        if (groupEnd - 1 <= after) {
          first = groupEnd;
          continue;
        }
        const offset = Math.max(0, after - first + 1);
        let row = first + offset;
        try {
          for await (const table of file.readGroup(group, options.batchRows, offset)) {
            const cells = fields.map((field) => {
              const column = table.getChild(field.name);
              if (column === null) return () => null;
              return vectorColumns.has(field.name)
                ? vectorCells(column)
                : (i: number) => plainValue(column.get(i), field.type);
            });
            const out: SourceRow[] = new Array(table.numRows);
            for (let i = 0; i < table.numRows; i++) {
              const record: Record<string, unknown> = {};
              for (let c = 0; c < fields.length; c++) record[fields[c]!.name] = cells[c]!(i);
              out[i] = { row: row + i, fields: record };
            }
            row += table.numRows;
            rowsDone = row - 1;
            yield out;
          }
        } catch (err) {
          if (err instanceof LatticeError) throw err;
          throw unreadable(`${name}: rows ${row}–${groupEnd - 1} cannot be read: ${describeError(err)}`, err);
        }
        first = groupEnd;
      }
    },
    close: () => file.close(),
  };
}

/** A vector column's cells: a typed array per row (null for a null row; NaN where an item is null). */
function vectorCells(column: Vector): (row: number) => unknown {
  return (row) => {
    const cell: unknown = column.get(row);
    if (cell === null || cell === undefined) return null;
    if (typeof cell !== 'object' || !('toArray' in cell)) return cell;
    const items = cell as Vector;
    if (items.nullCount === 0) return items.toArray();
    return Array.from(items, (item) => (item === null ? Number.NaN : item));
  };
}

function unreadable(message: string, cause: unknown): LatticeError {
  return new LatticeError('FAILED_PRECONDITION', message, { field: 'training_data_path', cause });
}
