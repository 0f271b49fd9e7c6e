import type { Table } from 'apache-arrow';
import { decodeValue, encodeValue } from '../../datatypes/codecs.js';
import { DataType, dataTypeInfo } from '../../datatypes/data-type.js';
import { formatValue } from '../../datatypes/value-text.js';
import type { OrchestratorLog } from '../../gen/orchestrator/v1/log.js';
import { invalidArgument } from '../../platform/errors.js';
import type { ColumnSpec } from '../matrix/component-matrix.js';
import { buildArrowTable, decompressPayload, type NamedLogColumn, payloadCodec } from './encoders/index.js';
import { cellsLogColumn } from './log-batch.js';

/** One logged row read back: its entity id, a value per schema entry (defaults filled in), which were defaulted. */
export interface DecodedLogRow {
  readonly entityId: string;
  readonly values: Uint8Array[];
  /** Ascending schema positions whose value is a default, not a real value. */
  readonly defaultedColumns: number[];
}

/** A record with its payload decompressed and decoded. */
export interface DecodedLog {
  readonly record: OrchestratorLog;
  readonly schema: readonly ColumnSpec[];
  readonly rows: readonly DecodedLogRow[];
}

/** The record's schema as typed columns; INVALID_ARGUMENT on an unknown type, bad dimension or repeated name. */
function recordSchema(record: OrchestratorLog): ColumnSpec[] {
  const names = new Set<string>();
  return record.schema.map((entry, i) => {
    const field = `schema[${i}]`;
    const dataType = entry.dataType as number as DataType;
    if (dataType === DataType.UNSPECIFIED || DataType[dataType] === undefined) {
      throw invalidArgument(`${field}.data_type ${entry.dataType} is not a known data type`, field);
    }
    if (entry.name === '' || names.has(entry.name)) {
      throw invalidArgument(`${field}.name "${entry.name}" is empty or repeated`, field);
    }
    names.add(entry.name);
    const isVector = dataTypeInfo(dataType).isVector;
    if (!Number.isInteger(entry.vectorDim) || entry.vectorDim < 0 || (!isVector && entry.vectorDim !== 0)) {
      throw invalidArgument(
        `${field}.vector_dim ${entry.vectorDim} does not fit ${DataType[dataType]}`,
        field,
      );
    }
    return { name: entry.name, dataType, vectorDim: entry.vectorDim };
  });
}

/**
 * Decompresses and decodes a record's payload into rows, checked against its schema and entity ids.
 * INVALID_ARGUMENT (naming the field) for UNSPECIFIED format or compression, a payload that does not
 * decompress or decode, or rows that do not fit the schema.
 */
export async function decodeLogRecord(record: OrchestratorLog): Promise<DecodedLog> {
  const schema = recordSchema(record);
  const codec = payloadCodec(record.format);
  const payload = await decompressPayload(record.compression, record.payload);
  const rows = codec.decode(payload, schema, record.entityIds);
  return {
    record,
    schema,
    rows: rows.map((row, r) => ({
      entityId: record.entityIds[r]!,
      values: row.values,
      defaultedColumns: row.defaultedColumns,
    })),
  };
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A float element as JSON: the shortest text that reads back to it; NaN and ±Infinity as strings. */
function floatJson(text: string): number | string {
  return text === 'NaN' || text === 'Infinity' || text === '-Infinity' ? text : Number(text);
}

/**
 * A cell as a JSON value: numbers (floats in the shortest form that reads back to the logged value,
 * NaN/±Infinity as strings), INT64/UINT64 as decimal strings (JSON numbers lose digits past 2^53),
 * booleans, strings; vectors as arrays of those.
 */
export function cellToJson(spec: ColumnSpec, bytes: Uint8Array): JsonValue {
  const info = dataTypeInfo(spec.dataType);
  if (info.kind === 'float') {
    const text = formatValue(spec.dataType, bytes, spec.vectorDim, spec.name);
    if (!info.isVector) return floatJson(text);
    return text === '' ? [] : text.split(',').map(floatJson);
  }
  const value = decodeValue(spec.dataType, bytes, spec.vectorDim, spec.name);
  if (typeof value === 'bigint') return String(value);
  if (typeof value !== 'object') return value;
  if (value instanceof BigInt64Array || value instanceof BigUint64Array) return Array.from(value, String);
  return Array.from(value as ArrayLike<number | boolean | string>);
}

/** One logged row as `lattice logs decode` writes it (a JSON Lines object). */
export interface LogRowObject {
  [key: string]: JsonValue;
  tracking_id: string;
  model_config_id: string;
  config_version: string;
  user_id: string;
  created_at_ms: number;
  /** targets, pairs or slates. */
  rows: string;
  batch_index: number;
  entity_id: string;
  /** Logged column name → value. */
  features: { [name: string]: JsonValue };
  /** Names of the columns whose value is a default, not a real value. */
  defaulted: string[];
}

/** The rows of a decoded record as JSON objects. */
export function logRowObjects(decoded: DecodedLog): LogRowObject[] {
  const { record, schema } = decoded;
  return decoded.rows.map((row) => {
    const features: { [name: string]: JsonValue } = {};
    schema.forEach((spec, c) => {
      features[spec.name] = cellToJson(spec, row.values[c]!);
    });
    return {
      tracking_id: record.trackingId,
      model_config_id: record.modelConfigId,
      config_version: record.configVersion,
      user_id: record.userId,
      created_at_ms: Number(record.createdAtMs),
      rows: record.metadata['rows'] ?? 'targets',
      batch_index: Number(record.metadata['batch_index'] ?? 0),
      entity_id: row.entityId,
      features,
      defaulted: row.defaultedColumns.map((c) => schema[c]!.name),
    };
  });
}

const STRING: ColumnSpec = { name: '', dataType: DataType.STRING, vectorDim: 0 };
const utf8 = new TextEncoder();

/** Columns of the table form besides the logged ones; a logged column with one of these names becomes `features.<name>`. */
const HEADER_COLUMNS: readonly {
  name: string;
  dataType: DataType;
  cell: (log: DecodedLog, row: number) => Uint8Array;
}[] = [
  { name: 'tracking_id', dataType: DataType.STRING, cell: (d) => utf8.encode(d.record.trackingId) },
  { name: 'model_config_id', dataType: DataType.STRING, cell: (d) => utf8.encode(d.record.modelConfigId) },
  { name: 'config_version', dataType: DataType.STRING, cell: (d) => utf8.encode(d.record.configVersion) },
  { name: 'user_id', dataType: DataType.STRING, cell: (d) => utf8.encode(d.record.userId) },
  {
    name: 'created_at_ms',
    dataType: DataType.INT64,
    cell: (d) => encodeValue(DataType.INT64, d.record.createdAtMs),
  },
  {
    name: 'rows',
    dataType: DataType.STRING,
    cell: (d) => utf8.encode(d.record.metadata['rows'] ?? 'targets'),
  },
  {
    name: 'batch_index',
    dataType: DataType.INT32,
    cell: (d) => encodeValue(DataType.INT32, Number(d.record.metadata['batch_index'] ?? 0) | 0),
  },
  { name: 'entity_id', dataType: DataType.STRING, cell: (d, row) => utf8.encode(d.rows[row]!.entityId) },
];

/**
 * Decoded records as one Arrow table (for a Parquet file): the header columns above, one column per
 * logged column name across all records (typed as in the payload formats; a name logged with
 * different types in different records becomes text, with different dimensions a List), null where
 * a record did not log it or the value was defaulted, and `defaulted` (the defaulted column names).
 */
export function decodedLogsToTable(logs: readonly DecodedLog[]): Table {
  const refs: { log: DecodedLog; row: number }[] = [];
  for (const log of logs) for (let row = 0; row < log.rows.length; row++) refs.push({ log, row });

  const specs = new Map<string, ColumnSpec>();
  for (const log of logs) {
    for (const spec of log.schema) {
      const seen = specs.get(spec.name);
      if (!seen) specs.set(spec.name, spec);
      else if (seen.dataType !== spec.dataType) specs.set(spec.name, { ...STRING, name: spec.name });
      else if (seen.vectorDim !== spec.vectorDim) specs.set(spec.name, { ...seen, vectorDim: 0 });
    }
  }

  const columns: NamedLogColumn[] = HEADER_COLUMNS.map(({ name, dataType, cell }) => ({
    name,
    nullable: false,
    column: cellsLogColumn(
      { name, dataType, vectorDim: 0 },
      refs.map(({ log, row }) => cell(log, row)),
    ),
  }));
  const headerNames = new Set(HEADER_COLUMNS.map((h) => h.name).concat('defaulted'));
  for (const spec of specs.values()) {
    const positions = new Map(logs.map((log) => [log, log.schema.findIndex((s) => s.name === spec.name)]));
    const cells: Uint8Array[] = [];
    const absent: boolean[] = [];
    for (const { log, row } of refs) {
      const c = positions.get(log)!;
      const decodedRow = log.rows[row]!;
      if (c < 0 || decodedRow.defaultedColumns.includes(c)) {
        cells.push(new Uint8Array(0));
        absent.push(true);
        continue;
      }
      const own = log.schema[c]!;
      const value = decodedRow.values[c]!;
      cells.push(
        own.dataType === spec.dataType ? value : utf8.encode(formatValue(own.dataType, value, own.vectorDim)),
      );
      absent.push(false);
    }
    const name = headerNames.has(spec.name) ? `features.${spec.name}` : spec.name;
    columns.push({ name, column: cellsLogColumn(spec, cells, (r) => absent[r]!) });
  }
  const defaulted = refs.map(({ log, row }) => {
    const names = log.rows[row]!.defaultedColumns.map((c) => log.schema[c]!.name);
    return encodeValue(DataType.STRING_VECTOR, names);
  });
  columns.push({
    name: 'defaulted',
    nullable: false,
    column: cellsLogColumn({ name: 'defaulted', dataType: DataType.STRING_VECTOR, vectorDim: 0 }, defaulted),
  });
  return buildArrowTable(columns, 0, refs.length);
}
