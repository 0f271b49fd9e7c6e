import { isUtf8 } from 'node:buffer';
import { checkValueLength } from '../../datatypes/codecs.js';
import { DataType, dataTypeInfo } from '../../datatypes/data-type.js';
import type { OrchestratorRequestProto } from '../../gen/orchestrator/v1/orchestrator.js';
import type { PredictRequest } from '../../gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../gen/orchestrator/v1/types.js';
import { invalidArgument } from '../../platform/errors.js';
import { inChunks } from '../../platform/scheduling/index.js';
import { type ModelSnapshot, quote } from '../config/index.js';
import {
  type ColumnSpec,
  ComponentMatrix,
  type MatrixLayout,
  SlateData,
} from '../matrix/component-matrix.js';
import type { ExecutionContext, InferencePattern } from './execution-context.js';
import { checkModelInputWidths, requireRequestFeatures } from './request-features.js';
import { checkLimit, REQUEST_LIMITS } from './request-limits.js';
import { type ColumnarPredictRequest, predictRows, type ValueRows } from './request-rows.js';

export { REQUEST_LIMITS } from './request-limits.js';

export interface RequestMatrices {
  matrix: ComponentMatrix;
  slate: SlateData | undefined;
}

/** Request schema entries as typed columns; INVALID_ARGUMENT naming the entry on a bad type, duplicate or clash. */
function schemaColumns(schema: readonly FeatureSchema[], field: string, taken: Set<string>): ColumnSpec[] {
  return schema.map((entry, i) => schemaColumn(entry, `${field}[${i}]`, taken));
}

function schemaColumn(entry: FeatureSchema, at: string, taken: Set<string>): ColumnSpec {
  if (entry.name === '') throw invalidArgument(`${at}.name must not be empty`, `${at}.name`);
  if (taken.has(entry.name))
    throw invalidArgument(
      `${at}.name ${quote(entry.name)} is used twice in the request or by the model`,
      `${at}.name`,
    );
  taken.add(entry.name);
  const dataType = entry.dataType as number as DataType;
  if (dataType === DataType.UNSPECIFIED || DataType[dataType] === undefined) {
    throw invalidArgument(`${at}.data_type ${entry.dataType} is not a known data type`, `${at}.data_type`);
  }
  if (entry.vectorDim < 0) throw invalidArgument(`${at}.vector_dim must be ≥ 0`, `${at}.vector_dim`);
  if (entry.vectorDim > 0 && !dataTypeInfo(dataType).isVector) {
    throw invalidArgument(
      `${at}.vector_dim is ${entry.vectorDim} but ${DataType[dataType]} is a scalar type`,
      `${at}.vector_dim`,
    );
  }
  return { name: entry.name, dataType, vectorDim: entry.vectorDim };
}

/** A STRING value, or every element of a STRING_VECTOR (already checked well-formed), must be UTF-8. */
function checkUtf8(spec: ColumnSpec, value: Uint8Array, field: string): void {
  if (spec.dataType === DataType.STRING) {
    if (!isUtf8(value)) throw invalidArgument(`${field} is not valid UTF-8`, field);
    return;
  }
  if (spec.dataType !== DataType.STRING_VECTOR) return;
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  for (let at = 0, k = 0; at + 4 <= value.length; k++) {
    const length = view.getUint32(at, true);
    if (!isUtf8(value.subarray(at + 4, at + 4 + length)))
      throw invalidArgument(`${field}: element ${k} is not valid UTF-8`, field);
    at += 4 + length;
  }
}

const isText = (spec: ColumnSpec) =>
  spec.dataType === DataType.STRING || spec.dataType === DataType.STRING_VECTOR;

/**
 * Checks every row's value count, every value's length and every string's encoding against
 * `columns`, before anything is allocated; returns the bytes the variable-width values take.
 */
async function checkRows(
  columns: readonly ColumnSpec[],
  widths: readonly (number | undefined)[],
  rows: ValueRows,
  field: string,
  slices: Slices,
): Promise<number> {
  let variableBytes = 0;
  const text = columns.map(isText);
  await inChunks(rows.count, slices.signal, slices.deadline, (from, to) => {
    for (let r = from; r < to; r++) {
      const count = rows.valueCount(r);
      if (count !== columns.length) {
        throw invalidArgument(
          `${field}[${r}].feature_values has ${count} values but the schema has ${columns.length}`,
          `${field}[${r}].feature_values`,
        );
      }
      for (let c = 0; c < count; c++) {
        const spec = columns[c]!;
        const width = widths[c];
        const length = rows.valueLength(r, c);
        // A fixed-width value of its column's width is well-formed: no field name (or view) is built for it.
        if (width === undefined || length !== width) {
          checkValueLength(
            spec.dataType,
            spec.vectorDim,
            rows.value(r, c),
            `${field}[${r}].feature_values[${c}]`,
          );
        }
        if (text[c]) checkUtf8(spec, rows.value(r, c), `${field}[${r}].feature_values[${c}]`);
        if (width === undefined) variableBytes += length;
      }
    }
  });
  return variableBytes;
}

/** Writes per-row values (aligned with `columns`, already checked by {@link checkRows}) into the matrix. */
async function fillRows(
  matrix: ComponentMatrix,
  columns: readonly ColumnSpec[],
  rows: ValueRows,
  slices: Slices,
): Promise<void> {
  const targets = columns.map((c) => matrix.byteColumn(c.name));
  await inChunks(rows.count, slices.signal, slices.deadline, (from, to) => {
    for (let r = from; r < to; r++) {
      for (let c = 0; c < targets.length; c++)
        targets[c]!.setFrom(r, rows.valueSource(r, c), rows.valueFrom(r, c), rows.valueLength(r, c));
    }
  });
}

/** Cells of a matrix of `rows` rows: every byte and string column, the model's own included. */
function cells(layout: MatrixLayout, rows: number): number {
  return rows * (layout.columns.length + layout.stringColumns.length);
}

/**
 * INVALID_ARGUMENT naming the limit when the matrices would hold too many cells or bytes: fixed-width
 * columns take their arena, variable-width values (and legacy texts) `variableBytes`, both counted
 * once per row a value lands in.
 */
function checkMatrixSize(field: string, cellCount: number, fixedBytes: number, variableBytes: number): void {
  checkLimit('matrixCells', cellCount, field, 'matrix cells (rows × columns)');
  checkLimit('matrixBytes', fixedBytes + variableBytes, field, 'bytes of matrix values');
}

function checkIndex(index: number, targets: number, field: string): void {
  if (!Number.isInteger(index) || index < 0 || index >= targets) {
    throw invalidArgument(`${field} is ${index}, outside the ${targets} targets`, field);
  }
}

/** The request's schema entries, checked together against the limit; the field named is the schema that passes it. */
function checkSchemaEntries(schemas: readonly [string, number][]): void {
  let total = 0;
  for (const [field, count] of schemas) {
    total += count;
    checkLimit('features', total, field, 'schema entries in the request');
  }
}

/**
 * FeatureInit for the Predict patterns: one row per target (its id in the model's target id column),
 * target input features and broadcast context features as typed columns, and for pair and slate
 * requests the SlateData (one row per pair or slate with its target indices and its own inputs).
 * Every limit is checked on counts first, then every value, all before anything is allocated.
 */
async function initPredict(
  snapshot: ModelSnapshot<ExecutionContext>,
  request: PredictRequest | ColumnarPredictRequest,
  pattern: 'point' | 'pair' | 'slate',
  slices: Slices,
): Promise<RequestMatrices> {
  const { targets, pairs, slates } = predictRows(request);
  const rows = targets.count;
  if (rows === 0) throw invalidArgument('targets: at least one target is required', 'targets');
  checkLimit('targets', rows, 'targets', 'entries');
  const grouped = pattern !== 'point';
  const groupRows: ValueRows = pattern === 'pair' ? pairs : slates;
  const groupCount = grouped ? groupRows.count : 0;
  const groupField = pattern === 'pair' ? 'pairs' : 'slates';
  const groupSchema = !grouped ? [] : pattern === 'pair' ? request.pairInputSchema : request.slateInputSchema;
  const groupSchemaField = pattern === 'pair' ? 'pair_input_schema' : 'slate_input_schema';
  if (grouped) {
    if (groupCount === 0)
      throw invalidArgument(`${groupField}: at least one ${pattern} is required`, groupField);
    checkLimit('groups', groupCount, groupField, 'entries');
  }
  checkSchemaEntries([
    ['context_features', request.contextFeatures.length],
    ['target_input_schema', request.targetInputSchema.length],
    [groupSchemaField, groupSchema.length],
  ]);
  checkLimit(
    'values',
    rows * request.targetInputSchema.length + groupCount * groupSchema.length,
    // Named as the byte pre-check names it: targets come first, then the groups that pass the limit.
    rows * request.targetInputSchema.length > REQUEST_LIMITS.values ? 'targets' : groupField,
    'feature values (rows × schema entries)',
  );

  const taken = new Set<string>([
    snapshot.model.config.target_id_column,
    ...snapshot.layout.columns.map((c) => c.name),
  ]);
  const targetColumns = schemaColumns(request.targetInputSchema, 'target_input_schema', taken);
  const contextColumns = request.contextFeatures.map((feature, i) =>
    schemaColumn(feature, `context_features[${i}]`, taken),
  );
  const layout = snapshot.layout.extend([...targetColumns, ...contextColumns]);
  checkLimit('matrixCells', cells(layout, rows), 'targets', 'matrix cells (rows × columns)');
  // Every value is checked before the matrix is allocated: a schema entry's vector_dim alone must
  // never size an allocation.
  const targetWidths = targetColumns.map((_, c) => layout.widths[snapshot.layout.columns.length + c]);
  let variableBytes = await checkRows(targetColumns, targetWidths, targets, 'targets', slices);
  request.contextFeatures.forEach((feature, i) => {
    const spec = contextColumns[i]!;
    const at = `context_features[${i}].value`;
    checkValueLength(spec.dataType, spec.vectorDim, feature.value, at);
    if (isText(spec)) checkUtf8(spec, feature.value, at);
    if (layout.widths[snapshot.layout.columns.length + targetColumns.length + i] === undefined)
      variableBytes += rows * feature.value.length;
  });
  checkMatrixSize('targets', cells(layout, rows), layout.arenaBytes(rows), variableBytes);

  let slate: SlateData | undefined;
  if (grouped) {
    // Every pair's or slate's target rows go into one array (SlateTargets), none into an array of its own.
    const starts = new Int32Array(groupCount + 1);
    let targetRows: Int32Array;
    if (pattern === 'pair') {
      targetRows = new Int32Array(2 * groupCount);
      await inChunks(groupCount, slices.signal, slices.deadline, (from, to) => {
        for (let i = from; i < to; i++) {
          const first = pairs.first(i);
          const second = pairs.second(i);
          checkIndex(first, rows, `pairs[${i}].first_target_index`);
          checkIndex(second, rows, `pairs[${i}].second_target_index`);
          targetRows[2 * i] = first;
          targetRows[2 * i + 1] = second;
          starts[i + 1] = 2 * i + 2;
        }
      });
    } else {
      let indexCount = 0;
      await inChunks(groupCount, slices.signal, slices.deadline, (from, to) => {
        for (let i = from; i < to; i++) {
          const slateIndices = slates.indices(i);
          const at = `slates[${i}].slate_target_indices`;
          const size = slateIndices.length;
          if (size === 0) throw invalidArgument(`${at} must not be empty`, at);
          checkLimit('slateSize', size, at, 'entries');
          indexCount += size;
          checkLimit('slateIndices', indexCount, 'slates', 'target indices in all slates');
          for (let k = 0; k < size; k++) checkIndex(slateIndices[k]!, rows, `${at}[${k}]`);
          starts[i + 1] = indexCount;
        }
      });
      const flat = new Int32Array(indexCount);
      await inChunks(groupCount, slices.signal, slices.deadline, (from, to) => {
        for (let i = from; i < to; i++) flat.set(slates.indices(i), starts[i]!);
      });
      targetRows = flat;
    }
    const groupColumns = schemaColumns(
      groupSchema,
      groupSchemaField,
      new Set(snapshot.slateLayout.columns.map((c) => c.name)),
    );
    const slateLayout = snapshot.slateLayout.extend(groupColumns);
    const groupCells = cells(slateLayout, groupCount);
    checkLimit('matrixCells', cells(layout, rows) + groupCells, groupField, 'matrix cells (rows × columns)');
    const groupWidths = groupColumns.map(
      (_, c) => slateLayout.widths[snapshot.slateLayout.columns.length + c],
    );
    const groupBytes = await checkRows(groupColumns, groupWidths, groupRows, groupField, slices);
    checkMatrixSize(
      groupField,
      cells(layout, rows) + groupCells,
      layout.arenaBytes(rows) + slateLayout.arenaBytes(groupCount),
      variableBytes + groupBytes,
    );
    slate = new SlateData(slateLayout, { starts, rows: targetRows });
    await fillRows(slate, groupColumns, groupRows, slices);
  }

  const matrix = new ComponentMatrix(layout, rows);
  const ids = matrix.stringColumn(snapshot.model.config.target_id_column);
  await inChunks(rows, slices.signal, slices.deadline, (from, to) => {
    for (let r = from; r < to; r++) ids[r] = targets.id(r);
  });
  await fillRows(matrix, targetColumns, targets, slices);
  request.contextFeatures.forEach((feature, i) => {
    matrix.byteColumn(contextColumns[i]!.name).broadcast(feature.value);
  });
  requireRequestFeatures(snapshot, matrix, slate);
  checkModelInputWidths(snapshot, matrix);
  return { matrix, slate };
}

/**
 * FeatureInit for the legacy entity API: the row count is the largest id list; an entity with a
 * single id is broadcast to every row; every entity and every inline feature becomes a string column.
 * A name may not be one the model produces (its scores would be overwritten in the answer).
 */
async function initLegacy(
  snapshot: ModelSnapshot<ExecutionContext>,
  request: OrchestratorRequestProto,
  slices: Slices,
): Promise<RequestMatrices> {
  const { entities } = request;
  if (entities.length === 0) throw invalidArgument('entities: at least one entity is required', 'entities');
  // Counts first, in loops (a spread of a request array into Math.max overflows the stack).
  let names = 0;
  let values = 0;
  let rows = 0;
  let longest = 0;
  for (let i = 0; i < entities.length; i++) {
    const entity = entities[i]!;
    names += 1 + entity.features.length;
    values += entity.ids.length;
    for (const feature of entity.features) values += feature.idsFeatureValue.length;
    if (entity.ids.length > rows) {
      rows = entity.ids.length;
      longest = i;
    }
  }
  checkLimit('features', names, 'entities', 'entities and features in the request');
  if (rows === 0) throw invalidArgument('entities: every entity has an empty ids list', 'entities');
  checkLimit('targets', rows, `entities[${longest}].ids`, 'ids');
  checkLimit('values', values, 'entities', 'ids and feature values in the request');

  const produced = new Set([
    ...snapshot.layout.columns.map((c) => c.name),
    ...snapshot.slateLayout.columns.map((c) => c.name),
  ]);
  const columnNames: string[] = [];
  const columnValues: (readonly string[])[] = [];
  const seen = new Set<string>();
  const add = (name: string, list: readonly string[], field: string) => {
    if (name === '') throw invalidArgument(`${field} must not be empty`, field);
    if (seen.has(name)) throw invalidArgument(`${field} ${quote(name)} appears twice`, field);
    if (produced.has(name))
      throw invalidArgument(
        `${field} ${quote(name)} is a column the model ${quote(snapshot.id)} produces; a request cannot supply it`,
        field,
      );
    if (list.length !== 1 && list.length !== rows) {
      throw invalidArgument(
        `${field} ${quote(name)} has ${list.length} values; expected 1 (broadcast) or ${rows}`,
        field,
      );
    }
    seen.add(name);
    columnNames.push(name);
    columnValues.push(list);
  };
  entities.forEach((entity, i) => {
    add(entity.entity, entity.ids, `entities[${i}].entity`);
    entity.features.forEach((feature, k) => {
      add(feature.name, feature.idsFeatureValue, `entities[${i}].features[${k}].name`);
    });
  });
  const idColumn = snapshot.model.config.target_id_column;
  const idSource =
    columnNames.indexOf(idColumn) >= 0
      ? columnNames.indexOf(idColumn)
      : columnValues.findIndex((v) => v.length === rows);
  const extra = columnNames.filter((n) => n !== idColumn && !snapshot.layout.stringColumns.includes(n));
  const layout = snapshot.layout.extend([], extra);
  // Texts are held as JavaScript strings (two bytes a character); a single id is one per row.
  let textBytes = 0;
  for (const list of columnValues) {
    if (list.length === 1) textBytes += rows * list[0]!.length * 2;
    else for (const text of list) textBytes += text.length * 2;
  }
  checkMatrixSize('entities', cells(layout, rows), layout.arenaBytes(rows), textBytes);

  const matrix = new ComponentMatrix(layout, rows);
  const copy = (column: string[], list: readonly string[]) =>
    inChunks(rows, slices.signal, slices.deadline, (from, to) => {
      if (list.length === 1) column.fill(list[0]!, from, to);
      else for (let r = from; r < to; r++) column[r] = list[r]!;
    });
  for (let i = 0; i < columnNames.length; i++)
    await copy(matrix.stringColumn(columnNames[i]!), columnValues[i]!);
  if (columnNames[idSource] !== idColumn) await copy(matrix.stringColumn(idColumn), columnValues[idSource]!);
  requireRequestFeatures(snapshot, matrix, undefined);
  return { matrix, slate: undefined };
}

export type InferenceRequest =
  | { pattern: 'point' | 'pair' | 'slate'; request: PredictRequest }
  | { pattern: 'legacy'; request: OrchestratorRequestProto };

/** The call's signal and deadline: FeatureInit's row loops give the event loop back between slices and stop with the call. */
export interface Slices {
  signal: AbortSignal;
  deadline: number;
}

/**
 * Builds the request's matrices (sized once) from its ids and features: the work of FeatureInit.
 * Its row loops run in time slices (100,000 targets take tens of milliseconds).
 */
export function initRequestMatrices(
  snapshot: ModelSnapshot<ExecutionContext>,
  input: InferenceRequest,
  slices: Slices,
): Promise<RequestMatrices> {
  return input.pattern === 'legacy'
    ? initLegacy(snapshot, input.request, slices)
    : initPredict(snapshot, input.request, input.pattern, slices);
}

export type { InferencePattern };
