import { formatValue } from '../../datatypes/value-text.js';
import type { ComponentData, OrchestratorResponseProto } from '../../gen/orchestrator/v1/orchestrator.js';
import { type FeatureSchema, DataType as WireType } from '../../gen/orchestrator/v1/types.js';
import { inChunks } from '../../platform/scheduling/index.js';
import { quote } from '../config/index.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';
import type { LegacyTable } from '../wire/legacy-response-codec.js';
import {
  type AnswerColumn,
  NO_SCORES,
  type PredictAnswer,
  type ScoreTable,
} from '../wire/predict-response-codec.js';
import { orderTargetRows } from './response-order.js';

interface OutputColumn {
  schema: FeatureSchema;
  column: AnswerColumn;
}

function outputColumn(matrix: ComponentMatrix, name: string): OutputColumn | undefined {
  if (matrix.hasByteColumn(name)) {
    const column = matrix.byteColumn(name);
    const { dataType, vectorDim } = column.spec;
    return {
      schema: { name, dataType: dataType as number as WireType, vectorDim },
      column:
        column.width === undefined
          ? { width: undefined, value: (row) => column.get(row) }
          : { width: column.width, data: column.data },
    };
  }
  if (matrix.hasStringColumn(name)) {
    const texts = matrix.stringColumn(name);
    return {
      schema: { name, dataType: WireType.DATA_TYPE_STRING, vectorDim: 0 },
      column: { width: undefined, value: (row) => Buffer.from(texts[row]!) },
    };
  }
  return undefined;
}

function table(matrix: ComponentMatrix, columns: readonly OutputColumn[]): ScoreTable {
  return {
    schema: columns.map((c) => c.schema),
    columns: columns.map((c) => c.column),
    rows: matrix.rowCount,
    rowError: (row) => matrix.rowError(row),
  };
}

/**
 * The Predict answer from a finished execution: the model's `response.columns`, each taken from the
 * matrix that holds it. Point-wise: one score row per target. Pair and slate: one row per pair or
 * slate with the columns SlateData holds, plus one row per target with the others when
 * `return_target_scores` is set. Each row's `error` names the components that failed for it. The
 * rows stay in the matrices until encodePredictAnswer writes them.
 */
export function predictAnswer(context: ExecutionContext, returnTargetScores: boolean): PredictAnswer {
  const names = context.snapshot.model.config.response.columns;
  const { matrix, slate } = context;
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
  const groups = slate ? table(slate, groupColumns) : NO_SCORES;
  // PointWise rows in the config's order (response.sort_by, limit), with their ids when reordered.
  const targets = !slate ? orderTargetRows(context, table(matrix, targetColumns)) : undefined;
  return {
    trackingId: context.trackingId,
    servedModelConfigId: context.snapshot.id,
    target: targets?.table ?? (returnTargetScores ? table(matrix, targetColumns) : NO_SCORES),
    ...(targets?.targetIds === undefined ? {} : { targetIds: targets.targetIds }),
    pair: context.pattern === 'pair' ? groups : NO_SCORES,
    slate: context.pattern === 'pair' ? NO_SCORES : groups,
  };
}

/** The legacy answer's columns: their names (the target id column first) and each one's text for a row. */
export function legacyColumns(context: ExecutionContext): {
  names: string[];
  renderers: ((row: number) => string)[];
} {
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
  return { names, renderers };
}

/** The legacy answer's `error`: how many rows used defaults, and why for the first five (no text per row beyond them). */
export class LegacyRowErrors {
  private count = 0;
  private readonly first: string[] = [];

  constructor(private readonly context: ExecutionContext) {}

  /** Notes `row` when it was scored with defaulted inputs or failed. */
  check(row: number): void {
    const { matrix, snapshot } = this.context;
    const error = matrix.rowError(row);
    if (!error) return;
    if (++this.count <= 5)
      this.first.push(
        `${quote(matrix.stringColumn(snapshot.model.config.target_id_column)[row]!)}: ${error}`,
      );
  }

  message(): string {
    if (this.count === 0) return '';
    return `${this.count} of ${this.context.matrix.rowCount} rows used defaults: ${this.first.join('; ')}${this.count > 5 ? '; …' : ''}`;
  }
}

/** The legacy answer of an execution, for the sliced encoder (orchestrator/wire/legacy-response-codec.ts). */
export function legacyTable(context: ExecutionContext): LegacyTable {
  return {
    ...legacyColumns(context),
    rows: context.matrix.rowCount,
    errors: new LegacyRowErrors(context),
    servedModelConfigId: context.snapshot.id,
  };
}

/**
 * The legacy entity response: a header row of column names (the target id column, then the
 * model's response columns), then one row per id with every value rendered as text. Rows scored
 * with defaulted inputs are summarised in `error`. A large one is written straight to bytes
 * instead (legacy-response-codec.ts).
 */
export async function legacyResponse(
  context: ExecutionContext,
  call: { signal: AbortSignal; deadline: number },
): Promise<OrchestratorResponseProto> {
  const { names, renderers } = legacyColumns(context);
  const componentData: ComponentData[] = [{ data: names }];
  const errors = new LegacyRowErrors(context);
  // A row per id (up to 100,000), each value formatted as text: in time slices.
  await inChunks(context.matrix.rowCount, call.signal, call.deadline, (from, to) => {
    for (let row = from; row < to; row++) {
      componentData.push({ data: renderers.map((render) => render(row)) });
      errors.check(row);
    }
  });
  return { componentData, error: { message: errors.message() }, servedModelConfigId: context.snapshot.id };
}
