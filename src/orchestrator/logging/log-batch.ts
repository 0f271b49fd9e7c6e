import { DataType } from '../../datatypes/data-type.js';
import type { InferencePattern } from '../engine/execution-context.js';
import type { ByteColumn, ColumnSpec } from '../matrix/component-matrix.js';

/**
 * One logged column over the rows of a request's matrix (target rows, or SlateData rows). Encoders
 * read cells through it, so they work the same on a live matrix, on computed columns (the slate
 * target indices) and on cells a decoder read back.
 */
export interface LogColumn {
  readonly spec: ColumnSpec;
  /** The value bytes of `row` (a view; valid as long as the matrix it reads). */
  value(row: number): Uint8Array;
  /** True when the cell holds its type's default rather than a real value. */
  isDefaulted(row: number): boolean;
  /** Fixed-width columns: bytes per value and every row back to back (row r at r × width). */
  readonly fixed?: { readonly width: number; readonly data: Uint8Array };
}

/** Rows `[start, end)` of some columns: what one payload encodes. */
export interface LogTable {
  readonly columns: readonly LogColumn[];
  readonly start: number;
  readonly end: number;
}

/** Which rows of the request a log record carries. */
export type LogRowKind = 'targets' | 'pairs' | 'slates';

/** What every record of one logged request shares. */
export interface LoggedRequest {
  readonly trackingId: string;
  readonly modelConfigId: string;
  readonly configVersion: string;
  readonly userId: string;
  readonly createdAtMs: number;
  readonly pattern: InferencePattern;
  /** Records the request produced (target batches, then pair/slate batches). */
  readonly batchCount: number;
}

/** The rows of one log record before encoding: a slice of the target matrix or of SlateData. */
export interface LogBatch extends LogTable {
  readonly request: LoggedRequest;
  readonly kind: LogRowKind;
  /** Position among the request's records: 0 … batchCount − 1. */
  readonly index: number;
  /** Set when a record too large for the queue was split: the halves' path, e.g. "0.1". */
  readonly part: string | undefined;
  /** Entity id of every row of the matrix (use `[start, end)`). */
  readonly entityIds: readonly string[];
  /** Errors recorded on a row (`Score.error`), empty when clean. */
  rowError(row: number): string;
  /** `log_features` entries that name no column of the request. */
  readonly missingColumns: readonly string[];
}

/** A matrix byte column as a logged column. */
export function byteLogColumn(column: ByteColumn): LogColumn {
  return {
    spec: column.spec,
    value: (row) => column.get(row),
    isDefaulted: (row) => column.isDefaulted(row),
    fixed: column.width === undefined ? undefined : { width: column.width, data: column.data },
  };
}

const utf8 = new TextEncoder();

/** A matrix string column (target ids, legacy entities) as a STRING column; never defaulted. */
export function stringLogColumn(name: string, values: readonly string[]): LogColumn {
  return {
    spec: { name, dataType: DataType.STRING, vectorDim: 0 },
    value: (row) => utf8.encode(values[row] ?? ''),
    isDefaulted: () => false,
  };
}

/** A column of ready cell bytes (computed columns, decoded records). */
export function cellsLogColumn(
  spec: ColumnSpec,
  cells: readonly Uint8Array[],
  defaulted: (row: number) => boolean = () => false,
): LogColumn {
  return { spec, value: (row) => cells[row]!, isDefaulted: defaulted };
}
