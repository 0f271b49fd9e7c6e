import { type Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import { defaultValue } from '../../../datatypes/codecs.js';
import { invalidArgument } from '../../../platform/errors.js';
import type { ColumnSpec } from '../../matrix/component-matrix.js';
import { type LogTable, stringLogColumn } from '../log-batch.js';
import { buildArrowTable, cellFromArrow, checkArrowColumn } from './arrow-columns.js';
import type { PayloadCodec, PayloadRow } from './payload-codec.js';

/** Name of the entity id column: `entity_id`, with underscores in front while a logged column has that name. */
export function entityColumnName(names: Iterable<string>): string {
  const taken = new Set(names);
  let name = 'entity_id';
  while (taken.has(name)) name = `_${name}`;
  return name;
}

/**
 * The table a log record's payload holds: column 0 the entity ids (Utf8, never null), then one typed
 * column per schema entry (see arrow-columns.ts for the type mapping), one row per entity id.
 */
export function logArrowTable(table: LogTable, entityIds: readonly string[]): Table {
  const name = entityColumnName(table.columns.map((c) => c.spec.name));
  return buildArrowTable(
    [
      { name, column: stringLogColumn(name, entityIds), nullable: false },
      ...table.columns.map((column) => ({ name: column.spec.name, column })),
    ],
    table.start,
    table.end,
  );
}

/** Rows of a payload table read back, checked against the record's schema and entity ids. */
export function rowsFromArrowTable(
  table: Table,
  schema: readonly ColumnSpec[],
  entityIds: readonly string[],
): PayloadRow[] {
  if (table.numCols !== schema.length + 1) {
    throw invalidArgument(
      `payload has ${table.numCols} columns; expected the entity id and ${schema.length} logged columns`,
      'payload',
    );
  }
  if (table.numRows !== entityIds.length) {
    throw invalidArgument(`payload has ${table.numRows} rows for ${entityIds.length} entity ids`, 'payload');
  }
  const ids = table.getChildAt(0)!;
  const columns = schema.map((spec, c) => checkArrowColumn(table, c + 1, spec));
  const defaults = schema.map((spec) => defaultValue(spec.dataType, spec.vectorDim));
  const rows: PayloadRow[] = [];
  for (let r = 0; r < table.numRows; r++) {
    if (ids.get(r) !== entityIds[r]) {
      throw invalidArgument(`payload row ${r} belongs to "${String(ids.get(r))}", not "${entityIds[r]}"`);
    }
    const values: Uint8Array[] = [];
    const defaultedColumns: number[] = [];
    columns.forEach((vector, c) => {
      const cell = cellFromArrow(schema[c]!, vector, r);
      if (cell === undefined) defaultedColumns.push(c);
      values.push(cell ?? defaults[c]!);
    });
    rows.push({ values, defaultedColumns });
  }
  return rows;
}

/** Reads an Arrow IPC stream; INVALID_ARGUMENT when it is not one. */
export function readArrowStream(payload: Uint8Array): Table {
  try {
    return tableFromIPC(payload);
  } catch (err) {
    throw invalidArgument(`payload is not an Arrow IPC stream: ${(err as Error).message}`, 'payload');
  }
}

/** LOG_FORMAT_ARROW: one Arrow IPC stream per record (entity id column, then the logged columns). */
export const arrowCodec: PayloadCodec = {
  encode(table: LogTable, entityIds: readonly string[]): Uint8Array {
    return tableToIPC(logArrowTable(table, entityIds), 'stream');
  },
  decode(payload: Uint8Array, schema: readonly ColumnSpec[], entityIds: readonly string[]): PayloadRow[] {
    return rowsFromArrowTable(readArrowStream(payload), schema, entityIds);
  },
};
