import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import { validatePoints } from '../../../src/platform/vectordb/validation.js';

describe('validatePoints', () => {
  it('copies each vector (lists and Float32Arrays), so later changes to the input change nothing', () => {
    const typed = new Float32Array([1, 2, 3]);
    const list = [4, 5, 6];
    const points = validatePoints(
      [
        { id: 'a', vector: typed },
        { id: 'b', vector: list },
        { id: 'c', vector: [7, 8, 9] },
      ],
      3,
      'c1',
    );
    typed.fill(0);
    list.fill(0);
    assert.deepEqual(
      points.map((p) => [p.id, [...p.vector]]),
      [
        ['a', [1, 2, 3]],
        ['b', [4, 5, 6]],
        ['c', [7, 8, 9]],
      ],
    );
    points[0]!.vector.fill(-1);
    assert.deepEqual([...points[1]!.vector], [4, 5, 6], 'the copies do not overlap');
  });

  it('keeps the last point of a repeated id and still refuses a bad vector by its position', () => {
    const points = validatePoints(
      [
        { id: 'a', vector: [1, 1] },
        { id: 'a', vector: [2, 2] },
      ],
      2,
      'c1',
    );
    assert.deepEqual(
      points.map((p) => [p.id, [...p.vector]]),
      [['a', [2, 2]]],
    );
    assert.throws(
      () =>
        validatePoints(
          [
            { id: 'a', vector: [1, 1] },
            { id: 'b', vector: [1, Number.NaN] },
          ],
          2,
          'c1',
        ),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT') && /points\[1\]\.vector\[1\]/.test(String(err)),
    );
    assert.throws(
      () => validatePoints([{ id: 'a', vector: [1, 1, 1] }], 2, 'c1'),
      (err) => isLatticeError(err, 'INVALID_ARGUMENT'),
    );
  });
});
