import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TopologyCache } from '../../../src/orchestrator/dag/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';

describe('TopologyCache', () => {
  test('identical DAGs written with different key and list orders share one Topology', () => {
    const cache = new TopologyCache();
    const first = cache.get({ a: ['b', 'c'], b: ['d'], c: ['d'] });
    const second = cache.get({ c: ['d'], b: ['d'], a: ['c', 'b'], d: [] });
    assert.equal(second, first);
    assert.equal(cache.size, 1);
    const dependency = { a: ['b', 'c'], b: ['d'], c: ['d'] };
    assert.equal(cache.get(dependency), first);
    assert.equal(cache.get(dependency), first, 'the same object again is answered by identity');
  });

  test('the root is part of the DAG', () => {
    const cache = new TopologyCache();
    const dependency = { a: ['b'] };
    const bare = cache.get(dependency);
    const rooted = cache.get(dependency, { root: 'feature_init' });
    assert.notEqual(rooted, bare);
    assert.equal(rooted.nodes[0], 'feature_init');
    assert.equal(cache.get(dependency, { root: 'feature_init' }), rooted);
    assert.equal(cache.get({ feature_init: ['a'], a: ['b'] }), rooted);
    assert.equal(cache.size, 2);
  });

  test('is bounded, evicting the least recently used DAG', () => {
    const cache = new TopologyCache({ maxEntries: 2 });
    const a = cache.get({ a: [] });
    const b = cache.get({ b: [] });
    assert.equal(cache.get({ a: [] }), a, 'a is now the most recent');
    cache.get({ c: [] });
    assert.equal(cache.size, 2);
    assert.equal(cache.get({ a: [] }), a, 'a survived');
    assert.notEqual(cache.get({ b: [] }), b, 'b was evicted and is rebuilt');
    assert.equal(cache.size, 2);
    for (let i = 0; i < 100; i++) cache.get({ [`n${i}`]: [] });
    assert.equal(cache.size, 2);
  });

  test('a dependency object seen before is shared again after its DAG was evicted', () => {
    const cache = new TopologyCache({ maxEntries: 1 });
    const dependency = { a: ['b'] };
    const topology = cache.get(dependency);
    cache.get({ other: [] });
    assert.equal(cache.get(dependency), topology);
    assert.equal(cache.get({ b: [], a: ['b'] }), topology, 'the identity hit put it back');
    assert.equal(cache.size, 1);
  });

  test('invalid DAGs are rejected on every call and not cached', () => {
    const cache = new TopologyCache();
    const cyclic = { a: ['b'], b: ['a'] };
    for (let i = 0; i < 2; i++) {
      assert.throws(
        () => cache.get(cyclic),
        (err) => isLatticeError(err, 'INVALID_ARGUMENT') && /a → b → a/.test(err.message),
      );
    }
    assert.equal(cache.size, 0);
  });

  test('clear empties it; a bad bound is refused', () => {
    const cache = new TopologyCache();
    const dependency = { a: [] };
    const before = cache.get(dependency);
    cache.clear();
    assert.equal(cache.size, 0);
    assert.notEqual(cache.get(dependency), before);
    assert.throws(() => new TopologyCache({ maxEntries: 0 }), RangeError);
  });
});
