/**
 * A Parquet file opened for reading with parquet-wasm (every codec: snappy, gzip, zstd, lz4, brotli)
 * as a Blob over the file, so only its footer and the row group being read are ever in memory. Row
 * groups come out as Arrow tables in batches. The feature store's loader and vss's training-data jobs
 * both read files this way; each words its own errors (this module throws what parquet-wasm threw).
 */
import { openAsBlob } from 'node:fs';
import { type Field, type Table, tableFromIPC } from 'apache-arrow';
import { ParquetFile } from 'parquet-wasm';

/** A RecordBatch of parquet-wasm's stream (its typings say `any`). */
interface WasmRecordBatch {
  intoIPCStream(): Uint8Array;
}

export interface OpenParquetFile {
  /** The top-level columns, with their Arrow types. */
  readonly fields: Field[];
  /** Rows in each row group, in file order. */
  readonly groupRows: number[];
  readonly rowCount: number;
  /** Row group `group` from its row `offset` (0-based), in tables of at most `batchRows` rows. */
  readGroup(group: number, batchRows: number, offset?: number): AsyncGenerator<Table>;
  /** Frees parquet-wasm's memory for the file. */
  close(): void;
}

/** Opens `path`; throws parquet-wasm's error when it is not a readable Parquet file. */
export async function openParquetFile(path: string): Promise<OpenParquetFile> {
  const file = await ParquetFile.fromFile(await openAsBlob(path));
  try {
    const fields = tableFromIPC(file.schema().intoIPCStream()).schema.fields;
    const groupRows = file
      .metadata()
      .rowGroups()
      .map((group) => group.numRows());
    return {
      fields,
      groupRows,
      rowCount: groupRows.reduce((sum, rows) => sum + rows, 0),
      async *readGroup(group, batchRows, offset = 0) {
        const stream = (await file.stream({
          rowGroups: [group],
          batchSize: batchRows,
          offset,
        })) as ReadableStream<WasmRecordBatch>;
        for await (const batch of stream) yield tableFromIPC(batch.intoIPCStream());
      },
      close: () => file.free(),
    };
  } catch (err) {
    file.free();
    throw err;
  }
}
