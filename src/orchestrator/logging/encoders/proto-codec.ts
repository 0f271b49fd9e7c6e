import { checkValueLength } from '../../../datatypes/codecs.js';
import { LogRows } from '../../../gen/orchestrator/v1/log.js';
import { invalidArgument } from '../../../platform/errors.js';
import type { ColumnSpec } from '../../matrix/component-matrix.js';
import { encodeLogRows } from '../../wire/log-rows-encoder.js';
import type { LogTable } from '../log-batch.js';
import type { PayloadCodec, PayloadRow } from './payload-codec.js';

/**
 * LOG_FORMAT_PROTO: a LogRows message, one LogRow per target with every value as its column's
 * encoded bytes; a defaulted cell holds its type's default bytes (zeros, or empty when variable) and
 * is listed in `defaulted_columns`. Other bytes are exactly the served ones, invalid UTF-8 and NaN
 * payloads included.
 *
 * Encoding is hand-written (orchestrator/wire/log-rows-encoder.ts); decoding is the generated one.
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
