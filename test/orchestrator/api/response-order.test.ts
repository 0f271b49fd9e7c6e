/** response.sort_by and limit order a PointWise answer's rows and name each row's target. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import { orderTargetRows } from '../../../src/orchestrator/api/response-order.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { ComponentMatrix, MatrixLayout } from '../../../src/orchestrator/matrix/component-matrix.js';
import type { ScoreTable } from '../../../src/orchestrator/wire/predict-response-codec.js';

function context(scores: number[], response: Record<string, unknown>, pattern = 'point'): ExecutionContext {
  const layout = new MatrixLayout([{ name: 'score', dataType: DataType.FP32, vectorDim: 0 }], ['id']);
  const matrix = new ComponentMatrix(layout, scores.length);
  scores.forEach((x, row) => {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, x, true);
    matrix.byteColumn('score').set(row, bytes);
    matrix.stringColumn('id')[row] = `t${row}`;
  });
  const config = { target_id_column: 'id', response: { columns: ['score'], ...response } };
  return { matrix, pattern, snapshot: { model: { config } } } as unknown as ExecutionContext;
}

const table = (c: ExecutionContext): ScoreTable => {
  const column = c.matrix.byteColumn('score');
  return {
    schema: [{ name: 'score', dataType: 12, vectorDim: 0 }],
    columns: [{ width: 4, data: column.data }],
    rows: c.matrix.rowCount,
    rowError: (row) => `e${row}`,
  };
};

test('desc by default, NaN last, ties in target order, then limit; each row names its target', () => {
  const c = context([0.2, Number.NaN, 0.9, 0.2, 0.5], {
    sort_by: { column: 'score', order: 'desc' },
    limit: 4,
  });
  const { table: ordered, targetIds } = orderTargetRows(c, table(c));
  assert.deepEqual(targetIds, ['t2', 't4', 't0', 't3']);
  assert.equal(ordered.rows, 4);
  assert.deepEqual(
    Array.from({ length: 4 }, (_, row) => ordered.rowError(row)),
    ['e2', 'e4', 'e0', 'e3'],
  );
  const data = (ordered.columns[0] as { data: Uint8Array }).data;
  assert.equal(new DataView(data.buffer, data.byteOffset).getFloat32(0, true), Math.fround(0.9));
});

test('asc; a limit alone keeps request order; no ordering leaves the table and names no ids', () => {
  const asc = context([0.3, 0.1, 0.2], { sort_by: { column: 'score', order: 'asc' } });
  assert.deepEqual(orderTargetRows(asc, table(asc)).targetIds, ['t1', 't2', 't0']);
  const cut = context([0.3, 0.1, 0.2], { limit: 2 });
  assert.deepEqual(orderTargetRows(cut, table(cut)).targetIds, ['t0', 't1']);
  const plain = context([0.3, 0.1], {});
  const same = table(plain);
  assert.equal(orderTargetRows(plain, same).table, same);
  assert.equal(orderTargetRows(plain, same).targetIds, undefined);
  const slate = context([0.3, 0.1], { limit: 1 }, 'slate');
  assert.equal(orderTargetRows(slate, table(slate)).table.rows, 2);
});
