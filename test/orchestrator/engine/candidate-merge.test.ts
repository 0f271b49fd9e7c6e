import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mergeCandidates } from '../../../src/orchestrator/engine/candidate-merge.js';

const c = (id: string, score: number, attributes: Record<string, string> = {}) => ({ id, score, attributes });

describe('retrieval: merging retrievers candidates', () => {
  test('the union, each id once with its best score, best first', () => {
    const merged = mergeCandidates([
      { quota: 3, candidates: [c('a', 0.9), c('b', 0.5), c('c', 0.4)] },
      { quota: 3, candidates: [c('b', 0.95), c('d', 0.6), c('a', 0.1)] },
    ]);
    assert.deepEqual(merged.ids, ['b', 'a', 'd', 'c']);
    assert.deepEqual(Array.from(merged.best), [0.95, 0.9, 0.6, 0.4].map(Math.fround));
    // Each retriever's own score for every target it returned; undefined where it did not.
    assert.deepEqual(
      merged.byRetriever.map((r) => r.map((x) => x?.score)),
      [
        [0.5, 0.9, undefined, 0.4],
        [0.95, 0.1, 0.6, undefined],
      ],
    );
  });

  test('quotas: each retriever contributes its first `quota` candidates, duplicates counted', () => {
    const merged = mergeCandidates([
      { quota: 2, candidates: [c('a', 0.9), c('b', 0.8), c('c', 0.7), c('d', 0.6)] },
      { quota: 1, candidates: [c('x', 0.5), c('y', 0.4)] },
      { quota: 2, candidates: [c('a', 0.3), c('z', 0.2), c('w', 0.1)] },
    ]);
    assert.deepEqual(merged.ids, ['a', 'b', 'x', 'z']);
    assert.ok(merged.ids.length <= 2 + 1 + 2);
    // c was past the first retriever's quota: not a target, although returned.
    assert.ok(!merged.ids.includes('c'));
  });

  test('a candidate past one retriever quota that another brought in keeps both scores and attributes', () => {
    const merged = mergeCandidates([
      { quota: 1, candidates: [c('a', 0.9, { k: '1' }), c('b', 0.8, { k: '2' })] },
      { quota: 1, candidates: [c('b', 0.7, { k: '3' })] },
    ]);
    assert.deepEqual(merged.ids, ['a', 'b']);
    assert.equal(merged.best[1], Math.fround(0.8));
    assert.deepEqual(merged.byRetriever[0]![1]!.attributes, { k: '2' });
    assert.deepEqual(merged.byRetriever[1]![1]!.attributes, { k: '3' });
  });

  test('a duplicate inside one answer counts once; equal scores keep first-seen order; none is empty', () => {
    const merged = mergeCandidates([
      { quota: 2, candidates: [c('a', 0.5), c('a', 0.4), c('b', 0.5)] },
      { quota: 5, candidates: [] },
    ]);
    assert.deepEqual(merged.ids, ['a', 'b']);
    assert.deepEqual(mergeCandidates([]).ids, []);
  });
});
