import { encodeValue, joinStrings } from '../../datatypes/codecs.js';
import { DataType } from '../../datatypes/data-type.js';
import { formatValue } from '../../datatypes/value-text.js';
import type { OrchestratorLog } from '../../gen/orchestrator/v1/log.js';
import type { DataType as WireType } from '../../gen/orchestrator/v1/types.js';
import type { ModelConfig } from '../config/index.js';
import type { ExecutionContext, InferencePattern } from '../engine/execution-context.js';
import type { ComponentMatrix, SlateData } from '../matrix/component-matrix.js';
import { compressPayload, LOG_COMPRESSIONS, LOG_FORMATS, payloadCodec } from './encoders/index.js';
import {
  byteLogColumn,
  cellsLogColumn,
  type LogBatch,
  type LogColumn,
  type LoggedRequest,
  type LogRowKind,
  stringLogColumn,
} from './log-batch.js';

/** A model's logging settings (`logging` in its config). */
export type LoggingConfig = ModelConfig['logging'];

/** Name of the request column whose first value becomes `OrchestratorLog.user_id`. */
export const USER_ID_COLUMN = 'user_id';
/** Computed columns of pair/slate records: each row's target indices, and those targets' ids. */
export const SLATE_TARGET_INDICES = 'slate_target_indices';
export const SLATE_TARGET_IDS = 'slate_target_ids';
/** Longest `component_errors` metadata value; the summary is cut there. */
const MAX_ERROR_SUMMARY = 2000;

/**
 * Whether this request is logged: `logging_perc` percent of requests, decided per request with
 * `random` (uniform in [0, 1)). 0 never logs, 100 always does.
 */
export function sampleRequest(loggingPerc: number, random: () => number = Math.random): boolean {
  return loggingPerc > 0 && random() * 100 < loggingPerc;
}

export interface LogRequestInfo {
  /** Overrides the context's pattern (recorded in metadata). */
  readonly pattern?: InferencePattern;
  /** When the request was served (epoch ms); default now. */
  readonly createdAtMs?: number;
  /** Overrides the context's tracking id (the logger fills in one for requests that carry none). */
  readonly trackingId?: string;
}

/**
 * Splits one served request into its log records, before encoding: the target rows in groups of
 * `log_batch_size`, then (pair and slate requests) the SlateData rows likewise, with the columns
 * `log_features` selects. Reads the matrices in place; nothing is copied until encoding.
 *
 * Columns: `log_features` empty logs every byte column of the target matrix (request inputs,
 * fetched features, scores) and every string column but the target id (legacy entities); otherwise
 * the named columns, in that order, from the target matrix, or for pair/slate records from SlateData.
 * Names found in neither are listed in the records' `missing_columns` metadata. Pair/slate records
 * always carry `slate_target_indices` (INT32_VECTOR) and `slate_target_ids` (STRING_VECTOR); their
 * entity ids are the pair/slate positions in the request ("0", "1", …).
 */
export function planLogBatches(context: ExecutionContext, info: LogRequestInfo = {}): LogBatch[] {
  const { snapshot, matrix, slate } = context;
  const config = snapshot.model.config;
  const logging = config.logging;
  const features = logging.log_features;
  const idColumn = config.target_id_column;
  const targetIds = matrix.hasStringColumn(idColumn)
    ? matrix.stringColumn(idColumn)
    : Array.from({ length: matrix.rowCount }, (_, r) => String(r));

  const missing: string[] = [];
  const targetColumns: LogColumn[] = [];
  const slateColumns: LogColumn[] = [];
  if (features.length === 0) {
    for (const column of matrix.byteColumns) targetColumns.push(byteLogColumn(column));
    matrix.layout.stringColumns.forEach((name, i) => {
      if (name !== idColumn) targetColumns.push(stringLogColumn(name, matrix.stringColumns[i]!));
    });
    if (slate) for (const column of slate.byteColumns) slateColumns.push(byteLogColumn(column));
  } else {
    for (const name of features) {
      if (matrix.hasByteColumn(name)) targetColumns.push(byteLogColumn(matrix.byteColumn(name)));
      else if (matrix.hasStringColumn(name))
        targetColumns.push(stringLogColumn(name, matrix.stringColumn(name)));
      else if (slate?.hasByteColumn(name)) slateColumns.push(byteLogColumn(slate.byteColumn(name)));
      else missing.push(name);
    }
  }

  const pattern: InferencePattern = info.pattern ?? context.pattern;
  const size = logging.log_batch_size;
  const targetBatches = Math.ceil(matrix.rowCount / size);
  const slateBatches = slate ? Math.ceil(slate.rowCount / size) : 0;
  const request: LoggedRequest = {
    trackingId: info.trackingId ?? context.trackingId,
    modelConfigId: snapshot.id,
    configVersion: snapshot.version,
    userId: userIdOf(matrix),
    createdAtMs: info.createdAtMs ?? Date.now(),
    pattern,
    batchCount: targetBatches + slateBatches,
  };

  const batches: LogBatch[] = [];
  const addBatches = (
    kind: LogRowKind,
    source: ComponentMatrix,
    columns: LogColumn[],
    entityIds: readonly string[],
  ) => {
    for (let start = 0; start < source.rowCount; start += size) {
      batches.push({
        request,
        kind,
        index: batches.length,
        part: undefined,
        start,
        end: Math.min(start + size, source.rowCount),
        columns,
        entityIds,
        rowError: (row) => source.rowError(row),
        missingColumns: missing,
      });
    }
  };
  addBatches('targets', matrix, targetColumns, targetIds);
  if (slate) {
    const taken = new Set(slateColumns.map((c) => c.spec.name));
    const computed = slateTargetColumns(slate, targetIds).filter((c) => !taken.has(c.spec.name));
    const positions = Array.from({ length: slate.rowCount }, (_, r) => String(r));
    addBatches(pattern === 'pair' ? 'pairs' : 'slates', slate, [...computed, ...slateColumns], positions);
  }
  return batches;
}

/** The first value of the request's `user_id` column (byte or string), as text; empty without one. */
function userIdOf(matrix: ComponentMatrix): string {
  if (matrix.rowCount === 0) return '';
  if (matrix.hasStringColumn(USER_ID_COLUMN)) return matrix.stringColumn(USER_ID_COLUMN)[0] ?? '';
  if (!matrix.hasByteColumn(USER_ID_COLUMN)) return '';
  const column = matrix.byteColumn(USER_ID_COLUMN);
  if (column.isDefaulted(0)) return '';
  try {
    return formatValue(column.spec.dataType, column.get(0), column.spec.vectorDim, USER_ID_COLUMN);
  } catch {
    return '';
  }
}

const utf8 = new TextEncoder();

/** Each pair/slate row's target indices and ids, as computed columns. */
function slateTargetColumns(slate: SlateData, targetIds: readonly string[]): LogColumn[] {
  const indices = slate.slateTargetIndices.map((list) => encodeValue(DataType.INT32_VECTOR, list));
  const ids = slate.slateTargetIndices.map((list) => {
    const parts = Array.from(list, (index) => utf8.encode(targetIds[index] ?? ''));
    return joinStrings(
      parts,
      parts.reduce((total, part) => total + 4 + part.length, 0),
    );
  });
  return [
    cellsLogColumn({ name: SLATE_TARGET_INDICES, dataType: DataType.INT32_VECTOR, vectorDim: 0 }, indices),
    cellsLogColumn({ name: SLATE_TARGET_IDS, dataType: DataType.STRING_VECTOR, vectorDim: 0 }, ids),
  ];
}

/**
 * The metadata of a record: `pattern`, `rows` (targets | pairs | slates), `batch_index` and
 * `batch_count` (over all records of the request), `row_offset` (first row's position in the
 * request), and when present `part` (a split record's path), `rows_with_errors` with
 * `component_errors` (each distinct row error and how many rows carry it) and `missing_columns`.
 */
export function batchMetadata(batch: LogBatch): Record<string, string> {
  const metadata: Record<string, string> = {
    pattern: batch.request.pattern,
    rows: batch.kind,
    batch_index: String(batch.index),
    batch_count: String(batch.request.batchCount),
    row_offset: String(batch.start),
  };
  if (batch.part !== undefined) metadata['part'] = batch.part;
  const errors = new Map<string, number>();
  let rowsWithErrors = 0;
  for (let row = batch.start; row < batch.end; row++) {
    const error = batch.rowError(row);
    if (error === '') continue;
    rowsWithErrors++;
    errors.set(error, (errors.get(error) ?? 0) + 1);
  }
  if (rowsWithErrors > 0) {
    metadata['rows_with_errors'] = String(rowsWithErrors);
    let summary = [...errors].map(([error, rows]) => `${error} (${rows} rows)`).join(' | ');
    if (summary.length > MAX_ERROR_SUMMARY) summary = `${summary.slice(0, MAX_ERROR_SUMMARY - 1)}…`;
    metadata['component_errors'] = summary;
  }
  if (batch.missingColumns.length > 0) metadata['missing_columns'] = batch.missingColumns.join(',');
  return metadata;
}

/** A batch split in two halves (for a record the queue refuses as too large); undefined for one row. */
export function splitBatch(batch: LogBatch): [LogBatch, LogBatch] | undefined {
  if (batch.end - batch.start < 2) return undefined;
  const middle = batch.start + Math.floor((batch.end - batch.start) / 2);
  const prefix = batch.part === undefined ? '' : `${batch.part}.`;
  return [
    { ...batch, end: middle, part: `${prefix}0` },
    { ...batch, start: middle, part: `${prefix}1` },
  ];
}

/** Encodes one batch into its `OrchestratorLog`: header, schema, metadata, and the compressed payload. */
export async function encodeLogBatch(batch: LogBatch, logging: LoggingConfig): Promise<OrchestratorLog> {
  const format = LOG_FORMATS[logging.format];
  const compression = LOG_COMPRESSIONS[logging.compression];
  const entityIds = batch.entityIds.slice(batch.start, batch.end);
  const encoded = payloadCodec(format).encode(batch, batch.entityIds);
  const payload = await compressPayload(compression, encoded);
  const { request } = batch;
  return {
    userId: request.userId,
    trackingId: request.trackingId,
    modelConfigId: request.modelConfigId,
    configVersion: request.configVersion,
    createdAtMs: BigInt(Math.trunc(request.createdAtMs)),
    entityIds,
    schema: batch.columns.map(({ spec }) => ({
      name: spec.name,
      dataType: spec.dataType as number as WireType,
      vectorDim: spec.vectorDim,
    })),
    format,
    compression,
    payload: Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
    metadata: batchMetadata(batch),
  };
}

/**
 * Every log record of one served request, encoded as the model's `logging` settings say. (The
 * logger does the same in the background; this is the one-call form for tools and tests.)
 */
export async function buildLogRecords(
  context: ExecutionContext,
  info: LogRequestInfo = {},
): Promise<OrchestratorLog[]> {
  const logging = context.snapshot.model.config.logging;
  const records: OrchestratorLog[] = [];
  for (const batch of planLogBatches(context, info)) records.push(await encodeLogBatch(batch, logging));
  return records;
}
