import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryFeatureStore } from '../../src/featurestore/index.js';
import { featureStoreContract } from './contract.js';

featureStoreContract({ name: 'memory', open: async () => new MemoryFeatureStore() });

test('memory store: expired rows are swept by later writes, not only by reads', async () => {
  let now = 0;
  const store = new MemoryFeatureStore({ now: () => now });
  const rows = (prefix: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      key: [`${prefix}${i}`],
      groups: new Map([['g', Uint8Array.of(1)]]),
    }));
  await store.write('e', rows('old', 100), { ttlMs: 10 });
  assert.equal(store.size, 100);
  now = 20;
  await store.write('e', rows('new', 10_001));
  assert.equal(store.size, 10_001);
  await store.close();
});
