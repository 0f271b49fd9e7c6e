import { openAsBlob } from 'node:fs';
import { DataType, type Field, tableFromIPC, util, type Vector } from 'apache-arrow';
import { ParquetFile } from 'parquet-wasm';
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

/** A RecordBatch of parquet-wasm, as its stream yields them (the typings say `any`). */
interface WasmRecordBatch {
  intoIPCStream(): Uint8Array;
}

/**
 * Opens a Parquet file for reading row by row with parquet-wasm (every codec: snappy, gzip, zstd,
 * lz4, brotli). The file is read lazily (a Blob over the file: only the footer and the row group being
 * read are in memory). Values come as plain JavaScript: numbers, bigints (INT64), strings (UTF8),
 * booleans, arrays (LIST), `Uint8Array` (plain BYTE_ARRAY), `Date` (DATE, TIMESTAMP), `null`.
 */
export async function openParquet(file: string): Promise<ParquetSource> {
  let parquet: ParquetFile;
  let columns: Field[];
  let groupRows: number[];
  try {
    parquet = await ParquetFile.fromFile(await openAsBlob(file));
    columns = tableFromIPC(parquet.schema().intoIPCStream()).schema.fields;
    groupRows = parquet
      .metadata()
      .rowGroups()
      .map((group) => group.numRows());
  } catch (err) {
    throw invalidArgument(`${file} is not a readable Parquet file: ${describeError(err)}`, file);
  }
  return {
    columns: columns.map((field) => field.name),
    rowCount: groupRows.reduce((sum, rows) => sum + rows, 0),
    async *batches(batchRows = 10_000) {
      let line = 1;
      for (let group = 0; group < groupRows.length; group++) {
        const groupEnd = line + groupRows[group]!;
        try {
          const stream = (await parquet.stream({
            rowGroups: [group],
            batchSize: batchRows,
          })) as ReadableStream<WasmRecordBatch>;
          for await (const batch of stream) {
            const table = tableFromIPC(batch.intoIPCStream());
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

/** An Arrow cell as the plain JavaScript value the loader's decoders take. */
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
