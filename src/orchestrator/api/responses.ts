import type { ComponentData, OrchestratorResponseProto } from '../../gen/orchestrator/v1/orchestrator.js';
import type { PredictResponse, Score } from '../../gen/orchestrator/v1/predict.js';
import { type FeatureSchema, DataType as WireType } from '../../gen/orchestrator/v1/types.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';
import { formatValue } from '../matrix/value-text.js';

const utf8 = new TextEncoder();

interface OutputColumn {
  schema: FeatureSchema;
  /** The value bytes of a row (a view into the matrix where possible). */
  value: (row: number) => Buffer;
}

function outputColumn(matrix: ComponentMatrix, name: string): OutputColumn | undefined {
  if (matrix.hasByteColumn(name)) {
    const column = matrix.byteColumn(name);
    const { dataType, vectorDim } = column.spec;
    const width = column.width;
    const data = column.data;
    return {
      schema: { name, dataType: dataType as number as WireType, vectorDim },
      value:
        width === undefined
          ? (row) => Buffer.from(column.get(row))
          : (row) => Buffer.from(data.buffer, data.byteOffset + row * width, width),
    };
  }
  if (matrix.hasStringColumn(name)) {
    const texts = matrix.stringColumn(name);
    return {
      schema: { name, dataType: WireType.DATA_TYPE_STRING, vectorDim: 0 },
      value: (row) => Buffer.from(utf8.encode(texts[row]!)),
    };
  }
  return undefined;
}

function scores(matrix: ComponentMatrix, columns: readonly OutputColumn[]): Score[] {
  const out = new Array<Score>(matrix.rowCount);
  for (let row = 0; row < matrix.rowCount; row++) {
    out[row] = { outputValues: columns.map((c) => c.value(row)), error: matrix.rowError(row) };
  }
  return out;
}

/**
 * The Predict response from a finished execution: the model's `response.columns`, each taken from
 * the matrix that holds it. Point-wise: one score row per target. Pair and slate: one row per pair or
 * slate with the columns SlateData holds, plus one row per target with the others when
 * `return_target_scores` is set. Each row's `error` names the components that failed for it.
 */
export function predictResponse(context: ExecutionContext, returnTargetScores: boolean): PredictResponse {
  const names = context.snapshot.model.config.response.columns;
  const { matrix, slate } = context;
  const response: PredictResponse = {
    trackingId: context.trackingId,
    targetOutputSchema: [],
    targetScores: [],
    pairOutputSchema: [],
    pairScores: [],
    slateOutputSchema: [],
    slateScores: [],
  };
  const targetColumns: OutputColumn[] = [];
  const groupColumns: OutputColumn[] = [];
  for (const name of names) {
    const grouped = slate ? outputColumn(slate, name) : undefined;
    if (grouped) groupColumns.push(grouped);
    else {
      const column = outputColumn(matrix, name);
      if (column) targetColumns.push(column);
    }
  }
  if (!slate || returnTargetScores) {
    response.targetOutputSchema = targetColumns.map((c) => c.schema);
    response.targetScores = scores(matrix, targetColumns);
  }
  if (slate) {
    const schema = groupColumns.map((c) => c.schema);
    const rows = scores(slate, groupColumns);
    if (context.pattern === 'pair') {
      response.pairOutputSchema = schema;
      response.pairScores = rows;
    } else {
      response.slateOutputSchema = schema;
      response.slateScores = rows;
    }
  }
  return response;
}

/**
 * The legacy entity response: a header row of column names (the target id column, then the
 * model's response columns), then one row per id with every value rendered as text. Rows scored
 * with defaulted inputs are summarised in `error`.
 */
export function legacyResponse(context: ExecutionContext): OrchestratorResponseProto {
  const { matrix, snapshot } = context;
  const idColumn = snapshot.model.config.target_id_column;
  const names = [idColumn, ...snapshot.model.config.response.columns.filter((n) => n !== idColumn)];
  const renderers = names.map((name): ((row: number) => string) => {
    if (matrix.hasStringColumn(name)) {
      const texts = matrix.stringColumn(name);
      return (row) => texts[row]!;
    }
    if (matrix.hasByteColumn(name)) {
      const column = matrix.byteColumn(name);
      return (row) =>
        column.isDefaulted(row) && column.width === undefined
          ? ''
          : formatValue(column.spec.dataType, column.get(row), column.spec.vectorDim);
    }
    return () => '';
  });
  const componentData: ComponentData[] = [{ data: names }];
  const failed: string[] = [];
  for (let row = 0; row < matrix.rowCount; row++) {
    componentData.push({ data: renderers.map((render) => render(row)) });
    const error = matrix.rowError(row);
    if (error) failed.push(`${matrix.stringColumn(idColumn)[row]}: ${error}`);
  }
  const message =
    failed.length === 0
      ? ''
      : `${failed.length} of ${matrix.rowCount} rows used defaults: ${failed.slice(0, 5).join('; ')}${failed.length > 5 ? '; …' : ''}`;
  return { componentData, error: { message } };
}
