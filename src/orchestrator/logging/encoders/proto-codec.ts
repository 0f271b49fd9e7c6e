import { checkValueLength, defaultValue } from '../../../datatypes/codecs.js';
import { LogRows } from '../../../gen/orchestrator/v1/log.js';
import { invalidArgument } from '../../../platform/errors.js';
import { copyCell, fieldSize, varintSize, writeVarint } from '../../../platform/protobuf/wire.js';
import type { ColumnSpec } from '../../matrix/component-matrix.js';
import type { LogTable } from '../log-batch.js';
import type { PayloadCodec, PayloadRow } from './payload-codec.js';

/**
 * LOG_FORMAT_PROTO: a LogRows message, one LogRow per target with every value as its column's
 * encoded bytes; a defaulted cell holds its type's default bytes (zeros, or empty when variable) and
 * is listed in `defaulted_columns`. Other bytes are exactly the served ones, invalid UTF-8 and NaN
 * payloads included.
 *
 * Encoding writes the wire format directly (sizes first, then one buffer), byte for byte what the
 * generated `LogRows.encode` writes (the tests compare them), without a message object, a Buffer
 * per cell or the generic writer's fork/join per row: it runs for every logged request.
 */
export const protoCodec: PayloadCodec = {
  encode(table: LogTable): Uint8Array {
    return encodeLogRows(table);
  },

  decode(payload: Uint8Array, schema: readonly ColumnSpec[], entityIds: readonly string[]): PayloadRow[] {
    let decoded: LogRows;
    try {
      decoded = LogRows.decode(payload);
    } catch (err) {
      throw invalidArgument(`payload is not a LogRows message: ${(err as Error).message}`, 'payload');
    }
    if (decoded.rows.length !== entityIds.length) {
      throw invalidArgument(
        `payload has ${decoded.rows.length} rows for ${entityIds.length} entity ids`,
        'payload',
      );
    }
    return decoded.rows.map((row, r) => {
      if (row.values.length !== schema.length) {
        throw invalidArgument(
          `payload row ${r} has ${row.values.length} values for ${schema.length} schema entries`,
          'payload',
        );
      }
      const values = row.values.map((value, c) => {
        const spec = schema[c]!;
        checkValueLength(spec.dataType, spec.vectorDim, value, `payload row ${r} "${spec.name}"`);
        return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
      });
      let previous = -1;
      for (const c of row.defaultedColumns) {
        if (c <= previous || c >= schema.length) {
          throw invalidArgument(
            `payload row ${r}: defaulted_columns must ascend within the schema`,
            'payload',
          );
        }
        previous = c;
      }
      return { values, defaultedColumns: [...row.defaultedColumns] };
    });
  },
};

/** LogRows.rows, LogRow.values: field 1, length-delimited. */
const FIELD_1_BYTES = 0x0a;
/** LogRow.defaulted_columns: field 2, packed. */
const FIELD_2_PACKED = 0x12;

function encodeLogRows(table: LogTable): Uint8Array {
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
