import type { ColumnSpec } from '../../matrix/component-matrix.js';
import type { LogTable } from '../log-batch.js';

/** One row read back from a payload: a value per schema entry (defaults filled in) and which were defaulted. */
export interface PayloadRow {
  readonly values: Uint8Array[];
  /** Ascending schema positions whose value is a default, not a real value. */
  readonly defaultedColumns: number[];
}

/**
 * One payload format (`OrchestratorLog.format`), before compression: encodes rows of logged columns
 * and reads them back. Decoding is a boundary: it checks the payload against the record's schema and
 * entity ids and fails with INVALID_ARGUMENT rather than returning rows that do not fit.
 */
export interface PayloadCodec {
  encode(table: LogTable, entityIds: readonly string[]): Uint8Array;
  decode(payload: Uint8Array, schema: readonly ColumnSpec[], entityIds: readonly string[]): PayloadRow[];
}
