import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { FeatureRegistry, RedisFeatureStore, writeFeatureRows } from '../../src/featurestore/index.js';
import { isLatticeError } from '../../src/platform/errors.js';
import { realServer, uniqueName } from '../support/servers.js';
import { featureStoreContract } from './contract.js';

const url = await realServer('redis');
const skip = url === undefined ? 'Redis is not reachable' : false;
// Every key of this run lives under its own prefix, removed at the end.
const keyPrefix = `${uniqueName('lattice_fs_test')}:`;

featureStoreContract({
  name: 'redis',
  open: () => RedisFeatureStore.connect({ url: url!, keyPrefix }),
  skip,
});

describe('Redis feature store', { skip }, () => {
  after(async () => {
    if (!url) return;
    const redis = new Redis(url);
    const keys = await redis.keys(`${keyPrefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  test('layout: one hash per entity key, one field per feature group, length-prefixed values', async () => {
    const registry = FeatureRegistry.fromDocument({
      entities: [
        {
          name: 'user_category',
          keys: ['user_id', 'category_id'],
          ttl_seconds: 3600,
          feature_groups: [
            {
              name: 'agg',
              features: [
                { name: 'clicks', data_type: 'FP32' },
                { name: 'tag', data_type: 'STRING' },
              ],
            },
            { name: 'other', features: [{ name: 'x', data_type: 'INT8' }] },
          ],
        },
      ],
    });
    const store = await RedisFeatureStore.connect({ url: url!, keyPrefix });
    await writeFeatureRows(store, registry, 'user_category', [
      { key: ['u1', '7'], values: { agg: { clicks: 1, tag: 'hi' } } },
    ]);
    await store.close();
    const redis = new Redis(url!);
    const key = `${keyPrefix}user_category:u1|7`;
    const hash = await redis.hgetallBuffer(key);
    assert.deepEqual(Object.keys(hash), ['agg']);
    // version 1, then 4 bytes of FP32 1.0, then 2 bytes "hi"
    assert.equal(hash.agg?.toString('hex'), '01040000803f026869');
    // An hour from the write: a minute of slack for a busy machine between the write and this read.
    const ttl = await redis.pttl(key);
    assert.ok(ttl > 3_540_000 && ttl <= 3_600_000, `ttl ${ttl}`);
    await redis.quit();
  });

  test('an unreachable server is UNAVAILABLE naming it and the refusal, without waiting for the connect timeout', async () => {
    // The refusal is the reason, not "no answer within" the (long) connect timeout.
    await assert.rejects(
      RedisFeatureStore.connect({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 60_000 }),
      (err: unknown) =>
        isLatticeError(err, 'UNAVAILABLE') &&
        /127\.0\.0\.1:1 is unavailable: connect ECONNREFUSED/.test(err.message),
    );
  });
});
