/**
 * The scores an answer ranks its targets by, read from a finished execution's matrix for the shadow
 * comparison (off the request path: the matrices stay alive as long as the context does).
 */
import { dataTypeInfo } from '../../datatypes/data-type.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import { columnNumbers } from '../matrix/column-numbers.js';
import type { ComponentMatrix } from '../matrix/component-matrix.js';
import type { Ranking } from './ranking-comparison.js';

/** The column an answer is ranked by, and in which direction. */
export interface RankColumn {
  column: string;
  descending: boolean;
}

/**
 * The response's sort column when the config names one (`response.sort_by`, descending unless its
 * order is `asc`), else the first response column that holds a scalar number, highest first.
 */
export function rankColumn(context: ExecutionContext): RankColumn | undefined {
  const { columns, sort_by: sortBy } = context.snapshot.model.config.response;
  if (sortBy !== undefined) return { column: sortBy.column, descending: sortBy.order !== 'asc' };
  for (const column of columns) {
    if (scalarNumbers(context, column) !== undefined) return { column, descending: true };
  }
  return undefined;
}

/** The matrix holding `name` as a scalar numeric column: the targets', or SlateData when only it has one. */
function scalarNumbers(
  context: ExecutionContext,
  name: string,
): { matrix: ComponentMatrix; slate: boolean } | undefined {
  for (const [matrix, slate] of [
    [context.matrix, false],
    [context.slate, true],
  ] as const) {
    if (matrix === undefined || !matrix.hasByteColumn(name)) continue;
    const column = matrix.byteColumn(name);
    const info = dataTypeInfo(column.spec.dataType);
    if (info.numeric && !info.isVector && column.width !== undefined) return { matrix, slate };
  }
  return undefined;
}

/**
 * The answer's ranking: each target's id (SlateData rows are named `#<row>`) and its score in the
 * rank column; a target id seen again is keyed `<id>#<n>` so both answers of one request align.
 * Undefined when the answer has no numeric column to rank by.
 */
export function answerRanking(context: ExecutionContext): (Ranking & RankColumn) | undefined {
  const rank = rankColumn(context);
  if (rank === undefined) return undefined;
  const found = scalarNumbers(context, rank.column);
  if (found === undefined) return undefined;
  const { matrix, slate } = found;
  const scores = columnNumbers(matrix, rank.column, 'fp64');
  const rows = scores.length;
  let keys: string[];
  if (slate) keys = Array.from({ length: rows }, (_, row) => `#${row}`);
  else {
    const idColumn = context.snapshot.model.config.target_id_column;
    const ids = context.matrix.hasStringColumn(idColumn)
      ? context.matrix.stringColumn(idColumn)
      : Array.from({ length: rows }, (_, row) => `#${row}`);
    const seen = new Map<string, number>();
    keys = ids.map((id) => {
      const n = seen.get(id) ?? 0;
      seen.set(id, n + 1);
      return n === 0 ? id : `${id}#${n}`;
    });
  }
  return { ...rank, keys, scores };
}
