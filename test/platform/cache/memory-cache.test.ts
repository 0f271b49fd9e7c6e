import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCache } from '../../../src/platform/cache/index.js';
import { MemoryCache, memoryEntrySize } from '../../../src/platform/cache/memory/memory-cache.js';
import { eventually } from '../../support/servers.js';
import { cacheContract, rejectsWith } from './contract.js';

cacheContract({ name: 'memory', open: () => createCache({ kind: 'memory' }) });

describe('MemoryCache size bound', () => {
  const value = () => new Uint8Array(1000);
  const entry = memoryEntrySize('k00', value());

  test('stays within maxBytes by evicting the least recently used entries', async () => {
    const cache = new MemoryCache({ maxBytes: 10 * entry });
    const names = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    for (const key of names) await cache.set(key, value(), 60_000);
    assert.ok(cache.sizeBytes <= 10 * entry, `${cache.sizeBytes} > ${10 * entry}`);
    const present = (await cache.getMany(names)).map((v) => v !== undefined);
    assert.deepEqual(present, [...Array(20).fill(false), ...Array(10).fill(true)]);
  });

  test('a recently read entry survives eviction', async () => {
    const cache = new MemoryCache({ maxBytes: 10 * entry });
    const names = Array.from({ length: 10 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    await cache.setMany(names.map((key) => ({ key, value: value(), ttlMs: 60_000 })));
    assert.ok(await cache.get('k00'));
    await cache.set('k10', value(), 60_000);
    const [k00, k01, k10] = await cache.getMany(['k00', 'k01', 'k10']);
    assert.ok(k00, 'read recently, kept');
    assert.equal(k01, undefined, 'least recently used, evicted');
    assert.ok(k10);
  });

  test('an entry larger than maxBytes is not stored and does not leave an older value behind', async () => {
    const cache = new MemoryCache({ maxBytes: 4096 });
    await cache.set('big', new Uint8Array(10), 60_000);
    await cache.set('big', new Uint8Array(8192), 60_000);
    assert.equal(await cache.get('big'), undefined);
    assert.equal(cache.sizeBytes, 0);
  });

  test('maxBytes must be a positive integer', async () => {
    await rejectsWith(createCache({ kind: 'memory', maxBytes: 0 }), 'INVALID_ARGUMENT', /maxBytes/);
  });
});

describe('MemoryCache shared reads', () => {
  test('getManyShared returns the stored object itself until the entry is replaced or expires', async () => {
    const cache = new MemoryCache();
    await cache.set('a', Uint8Array.of(1, 2, 3), 60_000);
    // Long enough to be read back on a busy machine, short enough to wait for.
    await cache.set('short', Uint8Array.of(9), 1000);
    const [first, missing, short] = cache.getManyShared(['a', 'nope', 'short']);
    assert.deepEqual(Array.from(first!), [1, 2, 3]);
    assert.equal(missing, undefined);
    assert.ok(short);
    assert.equal(cache.getManyShared(['a'])[0], first, 'the same object on every read');
    await cache.set('a', Uint8Array.of(4), 60_000);
    const [replaced] = cache.getManyShared(['a']);
    assert.notEqual(replaced, first, 'a write stores a new object');
    assert.deepEqual(Array.from(replaced!), [4]);
    assert.deepEqual(Array.from(first!), [1, 2, 3], 'the old value is left as it was');
    await eventually(
      () => cache.getManyShared(['short'])[0] === undefined,
      10_000,
      'the short entry to expire',
    );
    await cache.close();
    assert.throws(() => cache.getManyShared(['a']), /closed/);
  });
});
