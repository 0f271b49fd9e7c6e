/**
 * Parquet training files, read with parquet-wasm a row group at a time in batches (every codec:
 * snappy, gzip, zstd, lz4, brotli). The file is opened as a Blob, so only its footer and the row
 * group being read are in memory, never the whole file. Vector columns (LIST or FIXED_SIZE_LIST of
 * floats or integers) come out as typed arrays over the batch's buffers; other cells as plain
 * values (text, numbers, bigints for INT64, booleans, `Date` for dates and timestamps, lists).
 */
import { openAsBlob } from 'node:fs';
import { DataType, type Field, tableFromIPC, util, type Vector } from 'apache-arrow';
import { ParquetFile } from 'parquet-wasm';
import { describeError, LatticeError } from '../../../platform/errors.js';
import type { RowSource, SourceRow } from './row-source.js';

/** A RecordBatch of parquet-wasm's stream (its typings say `any`). */
interface WasmRecordBatch {
  intoIPCStream(): Uint8Array;
}

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
  let file: ParquetFile;
  let fields: Field[];
  let groupRows: number[];
  try {
    file = await ParquetFile.fromFile(await openAsBlob(path));
    fields = tableFromIPC(file.schema().intoIPCStream()).schema.fields;
    groupRows = file
      .metadata()
      .rowGroups()
      .map((group) => group.numRows());
  } catch (err) {
    throw unreadable(`${name} is not a readable Parquet file: ${describeError(err)}`, err);
  }
  const totalRows = groupRows.reduce((sum, rows) => sum + rows, 0);
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
          const stream = (await file.stream({
            rowGroups: [group],
            batchSize: options.batchRows,
            offset,
          })) as ReadableStream<WasmRecordBatch>;
          for await (const batch of stream) {
            const table = tableFromIPC(batch.intoIPCStream());
            const cells = fields.map((field) => {
              const column = table.getChild(field.name);
              if (column === null) return () => null;
              return vectorColumns.has(field.name) ? vectorCells(column) : plainCells(column, field.type);
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
    close: () => file.free(),
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

function plainCells(column: Vector, type: DataType): (row: number) => unknown {
  return (row) => plainValue(column.get(row), type);
}

/** An Arrow cell as a plain JavaScript value. */
function plainValue(value: unknown, type: DataType): unknown {
  if (value === null || value === undefined) return null;
  if (DataType.isDictionary(type)) return plainValue(value, type.dictionary);
  if (DataType.isList(type) || DataType.isFixedSizeList(type) || DataType.isLargeList(type)) {
    const childType = type.children[0]!.type;
    return Array.from(value as Vector, (item) => plainValue(item, childType));
  }
  if (DataType.isTimestamp(type) || DataType.isDate(type)) return new Date(Number(value));
  if (DataType.isDecimal(type)) {
    return util.bigNumToNumber(value as Parameters<typeof util.bigNumToNumber>[0], type.scale);
  }
  if (DataType.isStruct(type) || DataType.isMap(type)) return (value as { toJSON(): unknown }).toJSON();
  return value;
}

function unreadable(message: string, cause: unknown): LatticeError {
  return new LatticeError('FAILED_PRECONDITION', message, { field: 'training_data_path', cause });
}
