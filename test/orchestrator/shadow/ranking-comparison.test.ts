/**
 * The shadow comparison's pure functions on hand-made numbers: overlap@k, Kendall's τ-b (checked
 * against the O(n²) definition, ties included), score differences and per-component latency
 * differences.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compareRankings,
  kendallTauB,
  latencyDiffs,
  overlapAtK,
  TAU_MAX_PAIRS,
  TOTAL,
  topK,
} from '../../../src/orchestrator/shadow/ranking-comparison.js';

/** τ-b straight from its definition, over every pair. */
function naiveTauB(x: number[], y: number[]): number {
  let concordant = 0;
  let discordant = 0;
  let tiedX = 0;
  let tiedY = 0;
  let pairs = 0;
  for (let i = 0; i < x.length; i++)
    for (let j = i + 1; j < x.length; j++) {
      pairs++;
      const dx = Math.sign(x[i]! - x[j]!);
      const dy = Math.sign(y[i]! - y[j]!);
      if (dx === 0) tiedX++;
      if (dy === 0) tiedY++;
      if (dx !== 0 && dy !== 0) {
        if (dx === dy) concordant++;
        else discordant++;
      }
    }
  return (concordant - discordant) / Math.sqrt((pairs - tiedX) * (pairs - tiedY));
}

/** A small deterministic generator, so a failure is reproducible. */
function lcg(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('kendallTauB', () => {
  test('1 for the same order, −1 for the reversed one, whatever the scale', () => {
    assert.equal(kendallTauB([1, 2, 3, 4], [10, 20, 30, 40]), 1);
    assert.equal(kendallTauB([1, 2, 3, 4], [4, 3, 2, 1]), -1);
    assert.equal(kendallTauB([0.3, 0.1, 0.2], [-0.3, -0.1, -0.2]), -1);
  });

  test('a hand-counted case: one discordant pair of six', () => {
    // Pairs of (1,2,3,4) vs (1,3,2,4): only (2,3) is discordant → (5 − 1) / 6.
    assert.equal(kendallTauB([1, 2, 3, 4], [1, 3, 2, 4]), 4 / 6);
  });

  test('ties: the τ-b correction (scipy.stats.kendalltau gives 0.9128709291752769)', () => {
    assert.ok(Math.abs(kendallTauB([1, 2, 2, 3], [1, 2, 3, 4]) - 0.9128709291752769) < 1e-12);
  });

  test('undefined (NaN) under two pairs or with a constant side', () => {
    assert.ok(Number.isNaN(kendallTauB([], [])));
    assert.ok(Number.isNaN(kendallTauB([1], [1])));
    assert.ok(Number.isNaN(kendallTauB([1, 1, 1], [1, 2, 3])));
    assert.throws(() => kendallTauB([1, 2], [1]), RangeError);
  });

  test('agrees with the O(n²) definition on random data with many ties', () => {
    const random = lcg(40);
    for (let round = 0; round < 50; round++) {
      const n = 2 + Math.floor(random() * 60);
      const x = Array.from({ length: n }, () => Math.floor(random() * 8));
      const y = Array.from({ length: n }, () => Math.floor(random() * 8));
      const expected = naiveTauB(x, y);
      const actual = kendallTauB(x, y);
      if (Number.isNaN(expected)) assert.ok(Number.isNaN(actual));
      else assert.ok(Math.abs(actual - expected) < 1e-12, `n=${n}: ${actual} vs ${expected}`);
    }
  });
});

describe('topK and overlapAtK', () => {
  test('the k best, ties broken by key; ascending when the ranking says so', () => {
    const ranking = { keys: ['a', 'b', 'c', 'd'], scores: [0.5, 0.9, 0.5, 0.1], descending: true };
    assert.deepEqual(topK(ranking, 3), ['b', 'a', 'c']);
    assert.deepEqual(topK({ ...ranking, descending: false }, 2), ['d', 'a']);
    assert.deepEqual(topK(ranking, 10), ['b', 'a', 'c', 'd']);
  });

  test('the share of the longer top both hold', () => {
    assert.equal(overlapAtK(['a', 'b'], ['b', 'a']), 1);
    assert.equal(overlapAtK(['a', 'b'], ['c', 'd']), 0);
    assert.equal(overlapAtK(['a', 'b', 'c', 'd'], ['a', 'x', 'c', 'y']), 0.5);
    assert.ok(Number.isNaN(overlapAtK([], [])));
  });
});

describe('compareRankings', () => {
  const primary = { keys: ['a', 'b', 'c', 'd'], scores: [4, 3, 2, 1], descending: true };

  test('identical answers: overlap 1, τ 1, no difference', () => {
    const c = compareRankings(primary, { ...primary, scores: Float64Array.from(primary.scores) }, 2);
    assert.deepEqual(c, { overlapAtK: 1, kendallTau: 1, meanAbsDiff: 0, maxAbsDiff: 0, shared: 4 });
  });

  test('reversed scores: τ −1, the top 2 disjoint, differences per target', () => {
    const c = compareRankings(primary, { ...primary, scores: [1, 2, 3, 4] }, 2);
    assert.equal(c.kendallTau, -1);
    assert.equal(c.overlapAtK, 0);
    assert.equal(c.meanAbsDiff, (3 + 1 + 1 + 3) / 4);
    assert.equal(c.maxAbsDiff, 3);
  });

  test('only the targets both answers hold are compared, matched by key not position', () => {
    const shadow = { keys: ['d', 'x', 'b', 'a'], scores: [1, 100, 3, 4.5], descending: true };
    const c = compareRankings(primary, shadow, 2);
    assert.equal(c.shared, 3);
    assert.equal(c.kendallTau, 1);
    assert.equal(c.maxAbsDiff, 0.5);
    assert.equal(c.meanAbsDiff, 0.5 / 3);
    assert.equal(c.overlapAtK, 0.5, 'top 2: a,b vs x,a');
  });

  test('past TAU_MAX_PAIRS shared targets τ is taken over an even sample: still −1 reversed, 1 the same', () => {
    const n = 2 * TAU_MAX_PAIRS + 1;
    const keys = Array.from({ length: n }, (_, i) => `t${i}`);
    const up = { keys, scores: Float64Array.from({ length: n }, (_, i) => i), descending: true };
    const down = { keys, scores: Float64Array.from({ length: n }, (_, i) => -i), descending: true };
    const reversed = compareRankings(up, down, 10);
    assert.equal(reversed.kendallTau, -1);
    assert.equal(reversed.shared, n, 'the differences cover every shared target');
    assert.equal(reversed.maxAbsDiff, 2 * (n - 1));
    assert.equal(compareRankings(up, up, 10).kendallTau, 1);
  });

  test('an ascending shadow of the same order is τ 1', () => {
    const c = compareRankings(primary, { keys: primary.keys, scores: [1, 2, 3, 4], descending: false }, 4);
    assert.equal(c.kendallTau, 1);
    assert.equal(c.overlapAtK, 1);
  });
});

test('latencyDiffs: shadow minus primary per component both ran, and the total', () => {
  const ran = (name: string, durationMs: number) => ({ name, state: 'ran' as const, startMs: 0, durationMs });
  const diffs = latencyDiffs(
    { totalMs: 10, components: [ran('feature_init', 1), ran('blend', 4), ran('only_primary', 2)] },
    {
      totalMs: 13,
      components: [
        ran('feature_init', 1.5),
        ran('blend', 6),
        { name: 'skipped', state: 'skipped', startMs: 0, durationMs: 0 },
      ],
    },
  );
  assert.deepEqual(diffs, { feature_init: 0.5, blend: 2, [TOTAL]: 3 });
});
