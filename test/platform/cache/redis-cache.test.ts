import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { type Cache, createCache } from '../../../src/platform/cache/index.js';
import { eventually, realServer, uniqueName } from '../../support/servers.js';
import { cacheContract, rejectsWith } from './contract.js';

const url = await realServer('redis');
const skip = url === undefined ? 'Redis is not reachable' : false;
// Every key of this run lives under its own prefix, removed at the end.
const prefix = `${uniqueName('lattice_cache_test')}:`;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * A TCP proxy in front of the real Redis whose link can be cut (connections reset, new ones refused),
 * frozen (connections stay open, nothing gets through: a partition) and restored.
 */
async function redisProxy(target: URL) {
  const sockets = new Set<Socket>();
  let mode: 'up' | 'down' | 'frozen' = 'up';
  const server = createServer((client) => {
    client.on('error', () => {});
    if (mode === 'down') {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port || 6379), target.hostname);
    upstream.on('error', () => {});
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk) => mode === 'up' && upstream.write(chunk));
    upstream.on('data', (chunk) => mode === 'up' && client.write(chunk));
  });
  const port = await listen(server);
  return {
    port,
    cut() {
      mode = 'down';
      for (const socket of sockets) socket.destroy();
    },
    freeze() {
      mode = 'frozen';
    },
    restore() {
      mode = 'up';
    },
    async close() {
      this.cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('Redis', { skip }, () => {
  after(async () => {
    if (url === undefined) return;
    const raw = new Redis(url, { lazyConnect: true });
    await raw.connect();
    const leftovers: string[] = [];
    for await (const batch of raw.scanStream({ match: `${prefix}*`, count: 500 }))
      leftovers.push(...(batch as string[]));
    if (leftovers.length > 0) await raw.del(...leftovers);
    await raw.quit();
  });

  cacheContract({
    name: 'Redis',
    open: () => createCache({ kind: 'redis', url: url ?? '', keyPrefix: `${prefix}contract:` }),
  });

  test('keys are stored under the key prefix', async () => {
    const cache = await createCache({ kind: 'redis', url: url ?? '', keyPrefix: `${prefix}p:` });
    const raw = new Redis(url ?? '', { lazyConnect: true });
    try {
      await raw.connect();
      await cache.set('k', Uint8Array.from([7]), 60_000);
      assert.deepEqual([...((await raw.getBuffer(`${prefix}p:k`)) ?? [])], [7]);
      const ttl = await raw.pttl(`${prefix}p:k`);
      assert.ok(ttl > 50_000 && ttl <= 60_000, `ttl ${ttl}`);
      const other = await createCache({ kind: 'redis', url: url ?? '', keyPrefix: `${prefix}q:` });
      assert.equal(await other.get('k'), undefined, 'another prefix sees nothing');
      await other.close();
    } finally {
      await cache.close();
      raw.disconnect();
    }
  });

  describe('when Redis goes away after connecting', () => {
    let proxy: Awaited<ReturnType<typeof redisProxy>>;
    let cache: Cache;
    const key = 'k';

    test('a cut connection fails commands with UNAVAILABLE at once, then recovers when Redis is back', async () => {
      proxy = await redisProxy(new URL(url ?? ''));
      cache = await createCache({
        kind: 'redis',
        url: `redis://127.0.0.1:${proxy.port}`,
        keyPrefix: `${prefix}proxy:`,
        commandTimeoutMs: 300,
      });
      await cache.set(key, Uint8Array.from([1]), 60_000);
      proxy.cut();
      // At once: each fails for the lost connection, none by waiting out its command timeout.
      const atOnce = (what: string) =>
        new RegExp(
          `127\\.0\\.0\\.1:${proxy.port} is unavailable \\(${what}\\): (?!.*(timed out|no answer within))`,
        );
      await rejectsWith(cache.get(key), 'UNAVAILABLE', atOnce('GET'));
      await rejectsWith(cache.getMany([key, 'other']), 'UNAVAILABLE', atOnce('MGET'));
      await rejectsWith(
        cache.setMany([{ key, value: Uint8Array.from([2]), ttlMs: 1000 }]),
        'UNAVAILABLE',
        atOnce('SET pipeline'),
      );

      proxy.restore();
      await eventually(
        async () => (await cache.get(key).catch(() => undefined))?.[0] === 1,
        10_000,
        'the cache to reconnect',
      );
    });

    // The test's timeout only turns a hang (no command timeout) into a failure.
    test('a frozen connection (no answer at all) fails by the command timeout instead of hanging', {
      timeout: 60_000,
    }, async () => {
      proxy.freeze();
      await rejectsWith(cache.get(key), 'UNAVAILABLE', /\(GET\): Command timed out/);
      await rejectsWith(
        cache.setMany([{ key, value: Uint8Array.from([3]), ttlMs: 1000 }]),
        'UNAVAILABLE',
        /\(SET pipeline\): Command timed out/,
      );
    });

    after(async () => {
      await cache?.close();
      await proxy?.close();
    });
  });
});

describe('Redis unreachable', () => {
  test('a refused connection is UNAVAILABLE naming the address and the refusal, without waiting for the connect timeout', async () => {
    const probe = createServer();
    const port = await listen(probe);
    await new Promise((resolve) => probe.close(resolve));
    // The refusal is the reason, not "no answer within" the (long) connect timeout.
    await rejectsWith(
      createCache({ kind: 'redis', url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 60_000 }),
      'UNAVAILABLE',
      new RegExp(`127\\.0\\.0\\.1:${port} is unavailable: connect ECONNREFUSED`),
    );
  });

  // The test's timeout only turns a hang (no connect timeout) into a failure.
  test('a server that accepts but never answers is UNAVAILABLE after the connect timeout', {
    timeout: 60_000,
  }, async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    const port = await listen(silent);
    try {
      const started = Date.now();
      await rejectsWith(
        createCache({ kind: 'redis', url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 500 }),
        'UNAVAILABLE',
        new RegExp(`127\\.0\\.0\\.1:${port} is unavailable: .*no answer within 500 ms`),
      );
      // Not before the timeout (a lower bound holds however busy the machine is).
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 400, `took ${elapsed} ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
