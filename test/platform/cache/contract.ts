/**
 * The Cache contract: every adapter runs this suite, so the in-process LRU and Redis behave the same.
 * Each test uses keys of its own, so the suite can share one cache.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Cache } from '../../../src/platform/cache/index.js';
import { type ErrorCode, isLatticeError } from '../../../src/platform/errors.js';
import { eventually } from '../../support/servers.js';

export interface CacheContractTarget {
  name: string;
  /** Opens the cache the suite uses (once). */
  open(): Promise<Cache>;
  skip?: string | false;
}

export async function rejectsWith(work: Promise<unknown>, code: ErrorCode, message?: RegExp): Promise<void> {
  let caught: unknown;
  await assert.rejects(work, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(isLatticeError(caught), `expected a LatticeError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (message) assert.match(caught.message, message);
}

const bytes = (...values: number[]) => Uint8Array.from(values);
const text = (value: Uint8Array | undefined) =>
  value === undefined ? undefined : Buffer.from(value).toString();
const utf8 = (value: string) => new Uint8Array(Buffer.from(value));
const LONG = 60_000;

export function cacheContract(target: CacheContractTarget): void {
  describe(`Cache contract: ${target.name}`, { skip: target.skip ?? false }, () => {
    let cache: Cache;
    let counter = 0;
    /** Keys unique to one test. */
    const keys = (...names: string[]) => {
      counter++;
      return names.map((name) => `t${counter}:${name}`);
    };

    before(async () => {
      cache = await target.open();
    });
    after(async () => {
      await cache?.close();
    });

    test('get returns what set stored, and undefined for a key never set', async () => {
      const [a, missing] = keys('a', 'missing');
      await cache.set(a!, utf8('alpha'), LONG);
      assert.equal(text(await cache.get(a!)), 'alpha');
      assert.equal(await cache.get(missing!), undefined);
    });

    test('set replaces an earlier value', async () => {
      const [a] = keys('a');
      await cache.set(a!, utf8('one'), LONG);
      await cache.set(a!, utf8('two'), LONG);
      assert.equal(text(await cache.get(a!)), 'two');
    });

    test('getMany answers aligned with the keys asked, misses and repeats included', async () => {
      const [a, b, missing] = keys('a', 'b', 'missing');
      await cache.set(a!, utf8('A'), LONG);
      await cache.set(b!, utf8('B'), LONG);
      const values = await cache.getMany([missing!, a!, missing!, b!, a!]);
      assert.deepEqual(values.map(text), [undefined, 'A', undefined, 'B', 'A']);
      assert.deepEqual(await cache.getMany([]), []);
    });

    test('setMany stores every entry, each with its own TTL', async () => {
      const names = keys('k0', 'k1', 'k2', 'k3', 'k4', 'short');
      const entries = names.slice(0, 5).map((key, i) => ({ key, value: utf8(`v${i}`), ttlMs: LONG }));
      // Long enough to be read back on a busy machine, short enough to wait for.
      await cache.setMany([...entries, { key: names[5]!, value: utf8('brief'), ttlMs: 1000 }]);
      assert.deepEqual((await cache.getMany(names)).map(text), ['v0', 'v1', 'v2', 'v3', 'v4', 'brief']);
      await eventually(
        async () => (await cache.get(names[5]!)) === undefined,
        10_000,
        'the short entry to expire',
      );
      assert.deepEqual((await cache.getMany(names)).map(text), ['v0', 'v1', 'v2', 'v3', 'v4', undefined]);
      await cache.setMany([]);
    });

    test('an entry expires after its TTL while longer-lived ones stay', async () => {
      const [brief, lasting] = keys('brief', 'lasting');
      await cache.set(brief!, utf8('x'), 1000);
      await cache.set(lasting!, utf8('y'), LONG);
      assert.equal(text(await cache.get(brief!)), 'x', 'present before its TTL');
      await eventually(async () => (await cache.get(brief!)) === undefined, 10_000, 'the entry to expire');
      assert.deepEqual((await cache.getMany([brief!, lasting!])).map(text), [undefined, 'y']);
    });

    test('delete removes the keys given and ignores absent ones', async () => {
      const [a, b, c, missing] = keys('a', 'b', 'c', 'missing');
      await cache.setMany([a!, b!, c!].map((key) => ({ key, value: utf8(key), ttlMs: LONG })));
      await cache.delete([a!, missing!, c!]);
      assert.deepEqual((await cache.getMany([a!, b!, c!])).map(text), [undefined, b, undefined]);
      await cache.delete([]);
    });

    test('values are arbitrary bytes: every byte value, empty values, views into larger buffers', async () => {
      const [all, empty, view] = keys('all', 'empty', 'view');
      const everyByte = Uint8Array.from({ length: 512 }, (_, i) => (i * 7) % 256);
      const backing = bytes(9, 9, 9, 0, 13, 10, 255, 0x80, 9, 9);
      await cache.setMany([
        { key: all!, value: everyByte, ttlMs: LONG },
        { key: empty!, value: new Uint8Array(0), ttlMs: LONG },
        { key: view!, value: backing.subarray(3, 8), ttlMs: LONG },
      ]);
      const [gotAll, gotEmpty, gotView] = await cache.getMany([all!, empty!, view!]);
      assert.deepEqual(gotAll, everyByte);
      assert.deepEqual(gotEmpty, new Uint8Array(0));
      assert.deepEqual(gotView, bytes(0, 13, 10, 255, 0x80));
    });

    test('a Float32Array round-trips, and returned bytes are aligned copies safe to view as floats', async () => {
      const [embedding, other] = keys('embedding', 'other');
      const vector = Float32Array.from([0.1, -1.5, Math.PI, 1e-30, -0, Number.NaN, 3.4e38]);
      // An odd-length neighbour makes an unaligned slice likely if the adapter did not copy.
      await cache.set(other!, bytes(1, 2, 3), LONG);
      await cache.set(embedding!, new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength), LONG);
      for (const value of [await cache.get(embedding!), (await cache.getMany([other!, embedding!]))[1]]) {
        assert.ok(value);
        assert.equal(value.byteOffset, 0);
        assert.equal(value.buffer.byteLength, value.byteLength);
        assert.deepEqual(new Float32Array(value.buffer, value.byteOffset, value.byteLength / 4), vector);
      }
    });

    test('the cache shares no memory with its callers', async () => {
      const [a] = keys('a');
      const input = bytes(1, 2, 3);
      await cache.set(a!, input, LONG);
      input[0] = 99;
      const first = await cache.get(a!);
      assert.deepEqual(first, bytes(1, 2, 3));
      first![1] = 99;
      assert.deepEqual(await cache.get(a!), bytes(1, 2, 3));
    });

    test('keys may hold any characters', async () => {
      const names = keys('with space', 'colon:and/slash', 'ünïcødé ✓', '*?[glob]');
      await cache.setMany(names.map((key, i) => ({ key, value: bytes(i), ttlMs: LONG })));
      assert.deepEqual(await cache.getMany(names), [bytes(0), bytes(1), bytes(2), bytes(3)]);
    });

    test('a TTL that is not a positive number is INVALID_ARGUMENT and stores nothing', async () => {
      const [a, b] = keys('a', 'b');
      for (const ttl of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
        await rejectsWith(cache.set(a!, bytes(1), ttl), 'INVALID_ARGUMENT', /ttlMs/);
      }
      await rejectsWith(
        cache.setMany([
          { key: b!, value: bytes(1), ttlMs: LONG },
          { key: a!, value: bytes(1), ttlMs: 0 },
        ]),
        'INVALID_ARGUMENT',
      );
      assert.deepEqual(await cache.getMany([a!, b!]), [undefined, undefined]);
    });

    test('close is idempotent and later calls fail with UNAVAILABLE', async () => {
      await cache.close();
      await cache.close();
      await rejectsWith(cache.get('any'), 'UNAVAILABLE', /closed/);
      await rejectsWith(cache.setMany([{ key: 'any', value: bytes(1), ttlMs: LONG }]), 'UNAVAILABLE');
    });
  });
}
