import { type Table, tableToIPC } from 'apache-arrow';
import {
  Compression,
  readParquet,
  Table as WasmTable,
  WriterPropertiesBuilder,
  writeParquet,
} from 'parquet-wasm';
import { invalidArgument } from '../../../platform/errors.js';
import type { ColumnSpec } from '../../matrix/component-matrix.js';
import type { LogTable } from '../log-batch.js';
import { logArrowTable, readArrowStream, rowsFromArrowTable } from './arrow-codec.js';
import type { PayloadCodec, PayloadRow } from './payload-codec.js';

/**
 * An Arrow table as a Parquet file (parquet-wasm). `compression` is Parquet's own page compression:
 * log records write uncompressed pages because the record's `compression` applies to the whole
 * payload afterwards (compressing twice gains nothing); files for people (`lattice logs decode
 * --format parquet`) use ZSTD pages.
 */
export function arrowToParquet(table: Table, compression: 'none' | 'zstd' = 'none'): Uint8Array {
  const wasmTable = WasmTable.fromIPCStream(tableToIPC(table, 'stream'));
  const properties = new WriterPropertiesBuilder()
    .setCompression(compression === 'zstd' ? Compression.ZSTD : Compression.UNCOMPRESSED)
    .build();
  return writeParquet(wasmTable, properties);
}

/** Reads a Parquet file into an Arrow table; INVALID_ARGUMENT when it is not one. */
export function parquetToArrow(bytes: Uint8Array): Table {
  let ipc: Uint8Array;
  try {
    ipc = readParquet(bytes).intoIPCStream();
  } catch (err) {
    throw invalidArgument(`payload is not a Parquet file: ${String(err)}`, 'payload');
  }
  return readArrowStream(ipc);
}

/** LOG_FORMAT_PARQUET: the table of the arrow format, written as one Parquet file per record. */
export const parquetCodec: PayloadCodec = {
  encode(table: LogTable, entityIds: readonly string[]): Uint8Array {
    return arrowToParquet(logArrowTable(table, entityIds));
  },
  decode(payload: Uint8Array, schema: readonly ColumnSpec[], entityIds: readonly string[]): PayloadRow[] {
    return rowsFromArrowTable(parquetToArrow(payload), schema, entityIds);
  },
};
