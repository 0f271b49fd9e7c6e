/**
 * The scores an answer ranks its targets by, read from a finished execution's matrix for the shadow
 * comparison (off the request path: the matrices stay alive as long as the context does).
 */
import { dataTypeInfo } from '../../datatypes/data-type.js';
import { readNumberAt } from '../../datatypes/element.js';
import type { ExecutionContext } from '../engine/execution-context.js';
import type { ByteColumn } from '../matrix/component-matrix.js';
import type { Ranking } from './ranking-comparison.js';

/** The column an answer is ranked by, and in which direction. */
export interface RankColumn {
  column: string;
  descending: boolean;
}

/**
 * The response's sort column when the config names one (`response.sort_by`: a column name, or an
 * object with `column` and `order: 'asc' | 'desc'` or `descending`; descending unless it says
 * otherwise), else the first response column that holds a scalar number, highest first.
 */
export function rankColumn(context: ExecutionContext): RankColumn | undefined {
  const response = context.snapshot.model.config.response as { columns: string[]; sort_by?: unknown };
  const sortBy = sortColumn(response.sort_by);
  if (sortBy !== undefined) return sortBy;
  for (const column of response.columns) {
    if (scalarNumbers(context, column) !== undefined) return { column, descending: true };
  }
  return undefined;
}

function sortColumn(sortBy: unknown): RankColumn | undefined {
  if (typeof sortBy === 'string' && sortBy !== '') return { column: sortBy, descending: true };
  if (typeof sortBy !== 'object' || sortBy === null) return undefined;
  const { column, order, descending } = sortBy as { column?: unknown; order?: unknown; descending?: unknown };
  if (typeof column !== 'string' || column === '') return undefined;
  const ascending = order === 'asc' || order === 'ascending' || descending === false;
  return { column, descending: !ascending };
}

/** The scalar numeric column `name` of the target matrix (or of SlateData when only it holds one). */
function scalarNumbers(
  context: ExecutionContext,
  name: string,
): { column: ByteColumn; slate: boolean } | undefined {
  for (const [matrix, slate] of [
    [context.matrix, false],
    [context.slate, true],
  ] as const) {
    if (matrix === undefined || !matrix.hasByteColumn(name)) continue;
    const column = matrix.byteColumn(name);
    const info = dataTypeInfo(column.spec.dataType);
    if (info.numeric && !info.isVector && column.width !== undefined) return { column, slate };
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
  const { column, slate } = found;
  const rows = column.rows;
  const scores = new Float64Array(rows);
  const view = new DataView(column.data.buffer, column.data.byteOffset, column.data.byteLength);
  for (let row = 0; row < rows; row++)
    scores[row] = readNumberAt(view, row * column.width!, column.spec.dataType);
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
