/**
 * LogRows (LOG_FORMAT_PROTO payloads) in protobuf wire format, written straight from the logged
 * columns (sizes first, then one buffer): byte for byte what the generated `LogRows.encode` writes
 * (test/platform/protobuf/hand-written-codecs.test.ts), without a message object, a Buffer per cell
 * or the generic writer's fork/join per row. It runs for every logged request.
 */
import { defaultValue } from '../../datatypes/codecs.js';
import { copyCell, fieldSize, varintSize, writeVarint } from '../../platform/protobuf/wire.js';
import type { LogTable } from '../logging/log-batch.js';

/** LogRows.rows, LogRow.values: field 1, length-delimited. */
const FIELD_1_BYTES = 0x0a;
/** LogRow.defaulted_columns: field 2, packed. */
const FIELD_2_PACKED = 0x12;

export function encodeLogRows(table: LogTable): Uint8Array {
  const { columns, start, end } = table;
  const width = columns.length;
  const defaults = columns.map(({ spec }) => defaultValue(spec.dataType, spec.vectorDim));
  const rows = end - start;
  // Pass 1: sizes. Fixed-width cells are copied straight from their column in pass 2; only
  // variable-width values (strings, string vectors) are kept here, as views.
  const variable: (Uint8Array | undefined)[] = new Array(rows * width);
  const rowSizes = new Int32Array(rows);
  const packedSizes = new Int32Array(rows);
  let total = 0;
  for (let r = 0; r < rows; r++) {
    const row = start + r;
    let size = 0;
    let packed = 0;
    for (let c = 0; c < width; c++) {
      const column = columns[c]!;
      let length: number;
      if (column.isDefaulted(row)) {
        length = defaults[c]!.length;
        packed += varintSize(c);
      } else if (column.fixed !== undefined) {
        length = column.fixed.width;
      } else {
        const value = column.value(row);
        variable[r * width + c] = value;
        length = value.length;
      }
      size += fieldSize(length);
    }
    if (packed > 0) size += fieldSize(packed);
    rowSizes[r] = size;
    packedSizes[r] = packed;
    total += fieldSize(size);
  }
  // Pass 2: write.
  const out = new Uint8Array(total);
  let at = 0;
  for (let r = 0; r < rows; r++) {
    const row = start + r;
    out[at++] = FIELD_1_BYTES;
    at = writeVarint(out, at, rowSizes[r]!);
    for (let c = 0; c < width; c++) {
      const column = columns[c]!;
      out[at++] = FIELD_1_BYTES;
      if (column.isDefaulted(row)) {
        const value = defaults[c]!;
        at = writeVarint(out, at, value.length);
        out.set(value, at);
        at += value.length;
      } else if (column.fixed !== undefined) {
        const { data, width: bytes } = column.fixed;
        at = writeVarint(out, at, bytes);
        at = copyCell(out, at, data, row * bytes, bytes);
      } else {
        const value = variable[r * width + c]!;
        at = writeVarint(out, at, value.length);
        out.set(value, at);
        at += value.length;
      }
    }
    const packed = packedSizes[r]!;
    if (packed > 0) {
      out[at++] = FIELD_2_PACKED;
      at = writeVarint(out, at, packed);
      for (let c = 0; c < width; c++) if (columns[c]!.isDefaulted(row)) at = writeVarint(out, at, c);
    }
  }
  return out;
}
