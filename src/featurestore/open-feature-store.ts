import { MemoryFeatureStore } from './memory-feature-store.js';
import { RedisFeatureStore, type RedisFeatureStoreOptions } from './redis-feature-store.js';
import type { FeatureStore } from './store.js';

export type FeatureStoreOptions = { kind: 'memory' } | ({ kind: 'redis' } & RedisFeatureStoreOptions);

/** Opens the configured store; for Redis, rejects with UNAVAILABLE (naming the server) when it cannot. */
export async function openFeatureStore(options: FeatureStoreOptions): Promise<FeatureStore> {
  switch (options.kind) {
    case 'memory':
      return new MemoryFeatureStore();
    case 'redis': {
      const { kind: _kind, ...redis } = options;
      return RedisFeatureStore.connect(redis);
    }
  }
}
