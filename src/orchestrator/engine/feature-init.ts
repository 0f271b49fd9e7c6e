import { checkValueLength } from '../../datatypes/codecs.js';
import { DataType, dataTypeInfo } from '../../datatypes/data-type.js';
import type { OrchestratorRequestProto } from '../../gen/orchestrator/v1/orchestrator.js';
import type { PredictRequest } from '../../gen/orchestrator/v1/predict.js';
import type { FeatureSchema } from '../../gen/orchestrator/v1/types.js';
import { invalidArgument } from '../../platform/errors.js';
import type { ModelSnapshot } from '../config/index.js';
import {
  type ColumnSpec,
  ComponentMatrix,
  type MatrixLayout,
  SlateData,
} from '../matrix/component-matrix.js';
import type { ExecutionContext, InferencePattern } from './execution-context.js';

/** Bounds that keep one request from exhausting the process; beyond them the request is INVALID_ARGUMENT. */
export const REQUEST_LIMITS = {
  targets: 100_000,
  groups: 100_000,
  features: 10_000,
  slateSize: 10_000,
  /** Bytes of one request matrix (fixed-width columns × rows); beyond it the request is INVALID_ARGUMENT, never an allocation failure. */
  matrixBytes: 1024 * 1024 * 1024,
} as const;

export interface RequestMatrices {
  matrix: ComponentMatrix;
  slate: SlateData | undefined;
}

function checkCount(count: number, limit: number, field: string): void {
  if (count > limit) throw invalidArgument(`${field}: ${count} entries exceed the limit of ${limit}`, field);
}

/** Request schema entries as typed columns; INVALID_ARGUMENT naming the entry on a bad type, duplicate or clash. */
function schemaColumns(schema: readonly FeatureSchema[], field: string, taken: Set<string>): ColumnSpec[] {
  checkCount(schema.length, REQUEST_LIMITS.features, field);
  return schema.map((entry, i) => {
    const at = `${field}[${i}]`;
    if (entry.name === '') throw invalidArgument(`${at}.name must not be empty`, `${at}.name`);
    if (taken.has(entry.name))
      throw invalidArgument(
        `${at}.name "${entry.name}" is used twice in the request or by the model`,
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
  });
}

/** Checks every row's value count and every value's length against `columns`, before anything is allocated. */
function checkRows(
  columns: readonly ColumnSpec[],
  rows: readonly { featureValues: readonly Uint8Array[] }[],
  field: string,
): void {
  rows.forEach((row, r) => {
    if (row.featureValues.length !== columns.length) {
      throw invalidArgument(
        `${field}[${r}].feature_values has ${row.featureValues.length} values but the schema has ${columns.length}`,
        `${field}[${r}].feature_values`,
      );
    }
    row.featureValues.forEach((value, c) => {
      const spec = columns[c]!;
      checkValueLength(spec.dataType, spec.vectorDim, value, `${field}[${r}].feature_values[${c}]`);
    });
  });
}

/** Writes per-row values (aligned with `columns`, already checked by {@link checkRows}) into the matrix. */
function fillRows(
  matrix: ComponentMatrix,
  columns: readonly ColumnSpec[],
  rows: readonly { featureValues: readonly Uint8Array[] }[],
): void {
  const targets = columns.map((c) => matrix.byteColumn(c.name));
  rows.forEach((row, r) => {
    row.featureValues.forEach((value, c) => {
      targets[c]!.set(r, value);
    });
  });
}

/** INVALID_ARGUMENT when a matrix of `rows` rows would exceed the size limit (e.g. a huge vector broadcast to every target). */
function checkMatrixSize(layout: MatrixLayout, rows: number, field: string): void {
  const bytes = layout.arenaBytes(rows);
  if (bytes > REQUEST_LIMITS.matrixBytes)
    throw invalidArgument(
      `${field}: ${rows} rows of these features would take ${bytes} bytes, over the limit of ${REQUEST_LIMITS.matrixBytes}`,
      field,
    );
}

function checkIndex(index: number, targets: number, field: string): void {
  if (!Number.isInteger(index) || index < 0 || index >= targets) {
    throw invalidArgument(`${field} is ${index}, outside the ${targets} targets`, field);
  }
}

/**
 * FeatureInit for the Predict patterns: one row per target (its id in the model's target id column),
 * target input features and broadcast context features as typed columns, and for pair and slate
 * requests the SlateData (one row per pair or slate with its target indices and its own inputs).
 */
function initPredict(
  snapshot: ModelSnapshot<ExecutionContext>,
  request: PredictRequest,
  pattern: 'point' | 'pair' | 'slate',
): RequestMatrices {
  const rows = request.targets.length;
  if (rows === 0) throw invalidArgument('targets: at least one target is required', 'targets');
  checkCount(rows, REQUEST_LIMITS.targets, 'targets');
  const taken = new Set<string>([
    snapshot.model.config.target_id_column,
    ...snapshot.layout.columns.map((c) => c.name),
  ]);
  const targetColumns = schemaColumns(request.targetInputSchema, 'target_input_schema', taken);
  const contextColumns = request.contextFeatures.map((feature, i): ColumnSpec => {
    const [spec] = schemaColumns([feature], 'context_features', taken).map((s) => s);
    void i;
    return spec!;
  });
  // Every value is checked before the matrix is allocated: a schema entry's vector_dim alone must
  // never size an allocation.
  checkRows(targetColumns, request.targets, 'targets');
  request.contextFeatures.forEach((feature, i) => {
    const spec = contextColumns[i]!;
    checkValueLength(spec.dataType, spec.vectorDim, feature.value, `context_features[${i}].value`);
  });
  const layout = snapshot.layout.extend([...targetColumns, ...contextColumns]);
  checkMatrixSize(layout, rows, 'targets');
  const matrix = new ComponentMatrix(layout, rows);
  const ids = matrix.stringColumn(snapshot.model.config.target_id_column);
  request.targets.forEach((target, r) => {
    ids[r] = target.id;
  });
  fillRows(matrix, targetColumns, request.targets);
  request.contextFeatures.forEach((feature, i) => {
    matrix.byteColumn(contextColumns[i]!.name).broadcast(feature.value);
  });
  if (pattern === 'point') {
    requireRequestFeatures(snapshot, matrix, undefined);
    return { matrix, slate: undefined };
  }

  const groups: readonly { featureValues: readonly Uint8Array[] }[] =
    pattern === 'pair' ? request.pairs : request.slates;
  const field = pattern === 'pair' ? 'pairs' : 'slates';
  if (groups.length === 0) throw invalidArgument(`${field}: at least one ${pattern} is required`, field);
  checkCount(groups.length, REQUEST_LIMITS.groups, field);
  const indices: Int32Array[] =
    pattern === 'pair'
      ? request.pairs.map((pair, i) => {
          checkIndex(pair.firstTargetIndex, rows, `pairs[${i}].first_target_index`);
          checkIndex(pair.secondTargetIndex, rows, `pairs[${i}].second_target_index`);
          return Int32Array.of(pair.firstTargetIndex, pair.secondTargetIndex);
        })
      : request.slates.map((slate, i) => {
          const at = `slates[${i}].slate_target_indices`;
          if (slate.slateTargetIndices.length === 0) throw invalidArgument(`${at} must not be empty`, at);
          checkCount(slate.slateTargetIndices.length, REQUEST_LIMITS.slateSize, at);
          slate.slateTargetIndices.forEach((index, k) => {
            checkIndex(index, rows, `${at}[${k}]`);
          });
          return Int32Array.from(slate.slateTargetIndices);
        });
  const groupSchema = pattern === 'pair' ? request.pairInputSchema : request.slateInputSchema;
  const groupColumns = schemaColumns(
    groupSchema,
    pattern === 'pair' ? 'pair_input_schema' : 'slate_input_schema',
    new Set(snapshot.slateLayout.columns.map((c) => c.name)),
  );
  checkRows(groupColumns, groups, field);
  const slateLayout = snapshot.slateLayout.extend(groupColumns);
  checkMatrixSize(slateLayout, groups.length, field);
  const slate = new SlateData(slateLayout, indices);
  fillRows(slate, groupColumns, groups);
  requireRequestFeatures(snapshot, matrix, slate);
  return { matrix, slate };
}

/**
 * FeatureInit for the legacy entity API: the row count is the largest id list; an entity with a
 * single id is broadcast to every row; every entity and every inline feature becomes a string column.
 */
function initLegacy(
  snapshot: ModelSnapshot<ExecutionContext>,
  request: OrchestratorRequestProto,
): RequestMatrices {
  if (request.entities.length === 0)
    throw invalidArgument('entities: at least one entity is required', 'entities');
  const rows = Math.max(...request.entities.map((e) => e.ids.length));
  if (rows === 0) throw invalidArgument('entities: every entity has an empty ids list', 'entities');
  checkCount(rows, REQUEST_LIMITS.targets, 'entities.ids');
  const names: string[] = [];
  const values: (readonly string[])[] = [];
  const seen = new Set<string>();
  const add = (name: string, list: readonly string[], field: string) => {
    if (name === '') throw invalidArgument(`${field} must not be empty`, field);
    if (seen.has(name)) throw invalidArgument(`${field} "${name}" appears twice`, field);
    if (list.length !== 1 && list.length !== rows) {
      throw invalidArgument(
        `${field} "${name}" has ${list.length} values; expected 1 (broadcast) or ${rows}`,
        field,
      );
    }
    seen.add(name);
    names.push(name);
    values.push(list);
  };
  request.entities.forEach((entity, i) => {
    add(entity.entity, entity.ids, `entities[${i}].entity`);
    entity.features.forEach((feature, k) => {
      add(feature.name, feature.idsFeatureValue, `entities[${i}].features[${k}].name`);
    });
  });
  const idColumn = snapshot.model.config.target_id_column;
  const idSource =
    names.indexOf(idColumn) >= 0 ? names.indexOf(idColumn) : values.findIndex((v) => v.length === rows);
  const extra = names.filter((n) => n !== idColumn && !snapshot.layout.stringColumns.includes(n));
  const matrix = new ComponentMatrix(snapshot.layout.extend([], extra), rows);
  names.forEach((name, i) => {
    const column = matrix.stringColumn(name);
    const list = values[i]!;
    for (let r = 0; r < rows; r++) column[r] = list.length === 1 ? list[0]! : list[r]!;
  });
  if (names[idSource] !== idColumn) {
    const ids = matrix.stringColumn(idColumn);
    const list = values[idSource]!;
    for (let r = 0; r < rows; r++) ids[r] = list[r]!;
  }
  requireRequestFeatures(snapshot, matrix, undefined);
  return { matrix, slate: undefined };
}

/** Columns the model reads but no component produces must come with the request (per target, or per pair/slate). */
function requireRequestFeatures(
  snapshot: ModelSnapshot<ExecutionContext>,
  matrix: ComponentMatrix,
  slate: SlateData | undefined,
): void {
  for (const name of snapshot.model.requestFeatures) {
    if (!matrix.hasByteColumn(name) && !matrix.hasStringColumn(name) && !slate?.hasByteColumn(name)) {
      throw invalidArgument(
        `model ${snapshot.id} needs the request feature "${name}" (as a context, target, pair or slate input feature)`,
        name,
      );
    }
  }
}

export type InferenceRequest =
  | { pattern: 'point' | 'pair' | 'slate'; request: PredictRequest }
  | { pattern: 'legacy'; request: OrchestratorRequestProto };

/** Builds the request's matrices (sized once) from its ids and features: the work of FeatureInit. */
export function initRequestMatrices(
  snapshot: ModelSnapshot<ExecutionContext>,
  input: InferenceRequest,
): RequestMatrices {
  return input.pattern === 'legacy'
    ? initLegacy(snapshot, input.request)
    : initPredict(snapshot, input.request, input.pattern);
}

export type { InferencePattern };
