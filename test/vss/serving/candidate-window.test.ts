/**
 * The candidate window on its own, against a fake approximate search whose result at each width is a
 * different, imperfect view of one true ranking (as HNSW's is): every depth reads a prefix of the
 * same sequence, no id comes twice, and the depth bound is reported rather than hit silently.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { SearchHit } from '../../../src/platform/vectordb/index.js';
import { type CandidateWindow, candidateWindow } from '../../../src/vss/serving/candidate-window.js';
import { checkWalkDepth, SEARCH_LIMITS } from '../../../src/vss/serving/request-limits.js';
import { seededRandom } from '../../support/vector-fixtures.js';

/**
 * `total` candidates ranked by score; a search of width w returns w of them (all when fewer), best
 * first, having missed a width-dependent sample of the true top w (filled from deeper down).
 */
function approximateSearch(total: number, missRate = 0.15) {
  const truth: SearchHit[] = Array.from({ length: total }, (_, i) => ({ id: `c${i}`, score: total - i }));
  const calls: number[] = [];
  const search = async (width: number): Promise<SearchHit[]> => {
    calls.push(width);
    if (width >= total) return truth.slice();
    const random = seededRandom(width);
    const found = truth.filter((_, i) => i >= width || random() >= missRate);
    return found.slice(0, width);
  };
  return { search, calls };
}

describe('vss serving: candidate window', () => {
  test('every depth reads a prefix of one sequence with no id twice', async () => {
    const { search } = approximateSearch(3000);
    const deepest = await candidateWindow(2000, search);
    const ids = deepest.hits.map((h) => h.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.length >= 2000);
    for (const depth of [1, 10, 64, 65, 100, 129, 300, 777, 1500]) {
      const window = await candidateWindow(depth, search);
      assert.ok(window.hits.length >= depth, `depth ${depth}`);
      assert.deepEqual(
        window.hits.map((h) => h.id),
        ids.slice(0, window.hits.length),
        `depth ${depth} is not a prefix of the deepest window`,
      );
    }
  });

  test('a search that returns fewer than asked has returned every candidate', async () => {
    const { search, calls } = approximateSearch(150);
    const window: CandidateWindow = await candidateWindow(1000, search);
    assert.equal(window.complete, true);
    assert.deepEqual(
      window.hits.map((h) => h.id).sort(),
      Array.from({ length: 150 }, (_, i) => `c${i}`).sort(),
    );
    assert.deepEqual(calls, [32, 64, 128, 256]);
  });

  test('at the depth bound more candidates may remain: the window says so', async () => {
    const { search } = approximateSearch(50_000, 0);
    const window = await candidateWindow(SEARCH_LIMITS.walkDepth + 1, search);
    assert.equal(window.complete, false);
    assert.equal(window.hits.length, SEARCH_LIMITS.walkDepth);
  });

  test('a page ending past the bound is INVALID_ARGUMENT naming the page token', () => {
    checkWalkDepth(0, SEARCH_LIMITS.walkDepth - 10, 10);
    assert.throws(
      () => checkWalkDepth(2, SEARCH_LIMITS.walkDepth - 9, 10),
      (err: { code?: string; field?: string }) =>
        err.code === 'INVALID_ARGUMENT' && err.field === 'queries[2].page_token',
    );
  });
});
