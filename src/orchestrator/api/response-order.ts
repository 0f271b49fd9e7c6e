import type { ExecutionContext } from '../engine/execution-context.js';
import { columnNumbers } from '../matrix/column-numbers.js';
import type { AnswerColumn, ScoreTable } from '../wire/predict-response-codec.js';

/**
 * A PointWise answer's target rows as the config's `response.sort_by` and `limit` order them: by the
 * sort column (`desc` by default; NaN last; equal values keep the targets' order), then the first
 * `limit` rows, with each row's target id (PredictResponse.target_ids). Without either the table is
 * returned as it is (request order; retrieved targets come with their ids). Pair and slate answers are
 * never reordered: their rows name targets by index.
 */
export function orderTargetRows(
  context: ExecutionContext,
  table: ScoreTable,
): { table: ScoreTable; targetIds?: string[] } {
  const { config } = context.snapshot.model;
  const { sort_by: sortBy, limit } = config.response;
  if (context.pattern !== 'point') return { table };
  const ids = context.matrix.stringColumn(config.target_id_column);
  if (sortBy === undefined && limit === undefined)
    // Retrieved targets are in the stage's order (best retrieval score first); the caller gave none.
    return config.retrieval === undefined ? { table } : { table, targetIds: [...ids] };
  const rows = context.matrix.rowCount;
  let order = Int32Array.from({ length: rows }, (_, i) => i);
  if (sortBy !== undefined) {
    const values = columnNumbers(context.matrix, sortBy.column, 'fp64');
    const sign = sortBy.order === 'asc' ? 1 : -1;
    order.sort((a, b) => {
      const x = values[a]!;
      const y = values[b]!;
      if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? a - b : 1) : -1;
      return x === y ? a - b : sign * (x - y);
    });
  }
  if (limit !== undefined && limit < rows) order = order.subarray(0, limit);
  return { table: permuted(table, order), targetIds: Array.from(order, (row) => ids[row]!) };
}

function permuted(table: ScoreTable, order: Int32Array): ScoreTable {
  return {
    schema: table.schema,
    columns: table.columns.map((column): AnswerColumn => {
      if (column.width === undefined) return { width: undefined, value: (row) => column.value(order[row]!) };
      // Fixed-width cells copied in answer order, so the encoder's fast path still applies.
      const { width, data } = column;
      const out = new Uint8Array(order.length * width);
      for (let row = 0; row < order.length; row++)
        out.set(data.subarray(order[row]! * width, (order[row]! + 1) * width), row * width);
      return { width, data: out };
    }),
    rows: order.length,
    rowError: (row) => table.rowError(order[row]!),
  };
}
