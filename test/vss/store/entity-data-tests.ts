import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seededRandom } from '../../../src/platform/random.js';
import { type EmbeddingRow, openVssStore } from '../../../src/vss/store/index.js';
import {
  type Context,
  columnsOf,
  countRows,
  newVariant,
  registerModel,
  rejectsWith,
  tablesOf,
} from './fixtures.js';

/** Deterministic vectors with values no decimal literal rounds to exactly. */
function vectors(count: number, dimension: number, seed: number): Float32Array[] {
  const next = seededRandom(seed);
  return Array.from({ length: count }, () =>
    Float32Array.from({ length: dimension }, () => (next() - 0.5) * 10 ** (next() * 8 - 4)),
  );
}

function flagsFor(i: number): Record<string, boolean> {
  return i % 4 === 1 ? { organic: true } : { organic: false, ad: true };
}

export function entityDataTests(context: Context): void {
  describe('embeddings', () => {
    test('a batch larger than one statement round-trips bit for bit, flags and search vectors included', async () => {
      const { store } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      await store.variants.create(newVariant(entity, 'm1', 'ad'));
      const table = `emb_${n}`;
      const index = vectors(600, 16, 7);
      const search = vectors(600, 16, 11);
      const rows: EmbeddingRow[] = index.map((embedding, i) => ({
        id: `c${String(i).padStart(4, '0')}`,
        embedding,
        // every third row has its own search vector; some rows name one variant, some both, some none
        ...(i % 3 === 0 ? { searchEmbedding: search[i] } : {}),
        ...(i % 4 === 0 ? {} : { toBeIndexed: flagsFor(i) }),
      }));
      assert.equal(await store.embeddings.upsert(table, { modelName: 'm1', version: 1, rows }), 600);
      const ids = rows.map((r) => r.id);
      const read = await store.embeddings.read(table, {
        modelName: 'm1',
        version: 1,
        ids: [...ids, 'absent'],
      });
      assert.equal(read.size, 600);
      rows.forEach((row, i) => {
        const got = read.get(row.id);
        assert.ok(got, row.id);
        assert.ok(got.embedding instanceof Float32Array);
        assert.deepEqual(got.embedding, row.embedding, `${row.id} embedding`);
        assert.deepEqual(got.searchEmbedding, i % 3 === 0 ? search[i] : row.embedding, `${row.id} search`);
        assert.deepEqual(got.toBeIndexed, row.toBeIndexed ?? {}, `${row.id} flags`);
        assert.equal(got.expiresAt, null);
      });
      assert.equal(await store.embeddings.count(table, 'm1', 1), 600);
      assert.equal(await store.embeddings.count(table, 'm1', 2), 0, 'versions are separate');
    });

    test('vectors round-trip bit for bit, stored as float32 little-endian bytes: -0, subnormals, infinities, NaN payloads', async () => {
      const { store, sql } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const table = `emb_${n}`;
      // Bit patterns: ±0, the smallest and largest subnormals, the smallest normal, the largest
      // finite, ±Infinity, the quiet NaN, NaNs with payloads (quiet, signalling, negative, all ones).
      const special = [
        0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0x7f800000, 0xff800000,
        0x7fc00000, 0x7fc00001, 0x7f800001, 0x7fa5a5a5, 0xffc12345, 0xffffffff, 0x3f800000, 0xbeaaaaab,
      ];
      const bits = (values: number[]) => new Float32Array(Uint32Array.from(values).buffer);
      const embedding = bits(special);
      const search = bits([...special].reverse());
      // Vectors that are views into a larger buffer at an offset: only their own bytes are stored.
      const backing = new Float32Array(special.length + 3);
      backing.set(embedding, 3);
      const view = backing.subarray(3);
      await store.embeddings.upsert(table, {
        modelName: 'm1',
        version: 1,
        rows: [
          { id: 'special', embedding, searchEmbedding: search, toBeIndexed: { organic: true } },
          { id: 'view', embedding: view },
        ],
      });
      const sameBits = (got: Float32Array, want: Float32Array, what: string) => {
        assert.ok(got instanceof Float32Array, what);
        assert.equal(got.byteOffset, 0, `${what}: its own aligned buffer`);
        assert.equal(got.buffer.byteLength, want.byteLength, `${what}: its own aligned buffer`);
        assert.deepEqual(
          [...new Uint32Array(got.buffer)].map((b) => b.toString(16)),
          [...new Uint32Array(want.buffer, want.byteOffset, want.length)].map((b) => b.toString(16)),
          what,
        );
      };
      const read = await store.embeddings.read(table, {
        modelName: 'm1',
        version: 1,
        ids: ['special', 'view'],
      });
      sameBits(read.get('special')!.embedding, embedding, 'read embedding');
      sameBits(read.get('special')!.searchEmbedding, search, 'read search embedding');
      sameBits(read.get('view')!.embedding, embedding, 'a vector given as a view');
      sameBits(
        read.get('view')!.searchEmbedding,
        embedding,
        'the search embedding defaults to the index one',
      );
      const [scanned] = await store.embeddings.scan(table, { modelName: 'm1', version: 1, limit: 1 });
      sameBits(scanned!.embedding, embedding, 'scanned embedding');
      sameBits(scanned!.searchEmbedding, search, 'scanned search embedding');

      // The column holds dimension × 4 bytes, little-endian, whatever reads it.
      const { rows } = await sql.query<{ bytes: string; search: string | null; type: string }>(
        `SELECT encode(embedding, 'hex') AS bytes, encode(search_embedding, 'hex') AS search,
                pg_typeof(embedding)::text AS type
           FROM ${table} WHERE id = 'special'`,
      );
      const le = (values: number[]) => {
        const buffer = Buffer.alloc(values.length * 4);
        values.forEach((v, i) => {
          buffer.writeUInt32LE(v, i * 4);
        });
        return buffer.toString('hex');
      };
      assert.deepEqual(rows[0], { bytes: le(special), search: le([...special].reverse()), type: 'bytea' });
    });

    test('reads return the flag of a variant registered through another store after the first read', async () => {
      const { store, sql } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const table = `emb_${n}`;
      const key = { modelName: 'm1', version: 1 };
      const embedding = new Float32Array([1, 2]);
      await store.embeddings.upsert(table, {
        ...key,
        rows: [{ id: 'a', embedding, toBeIndexed: { organic: true } }],
      });
      assert.deepEqual((await store.embeddings.read(table, { ...key, ids: ['a'] })).get('a')?.toBeIndexed, {
        organic: true,
      });
      // Another replica (here: another store on the same database) registers a variant and flags the row.
      const other = await openVssStore(sql);
      await other.variants.create(newVariant(entity, 'm1', 'late'));
      await other.embeddings.setMembership(table, {
        ...key,
        ids: ['a'],
        variant: 'late',
        toBeIndexed: false,
      });
      assert.deepEqual((await store.embeddings.read(table, { ...key, ids: ['a'] })).get('a')?.toBeIndexed, {
        organic: true,
        late: false,
      });
      const [scanned] = await store.embeddings.scan(table, { ...key, limit: 1 });
      assert.deepEqual(scanned?.toBeIndexed, { organic: true, late: false });
    });

    test('upsert replaces, keeps flags it does not name, and the last row for an id wins', async () => {
      const { store } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      await store.variants.create(newVariant(entity, 'm1', 'ad'));
      const table = `emb_${n}`;
      const key = { modelName: 'm1', version: 1 };
      await store.embeddings.upsert(table, {
        ...key,
        rows: [{ id: 'a', embedding: new Float32Array([1, 2]), toBeIndexed: { organic: true, ad: true } }],
      });
      await store.embeddings.upsert(table, {
        ...key,
        rows: [
          { id: 'a', embedding: new Float32Array([3, 4]), toBeIndexed: { organic: false } },
          {
            id: 'a',
            embedding: new Float32Array([5, 6]),
            searchEmbedding: new Float32Array([7, 8]),
            toBeIndexed: { organic: false },
          },
        ],
      });
      const a = (await store.embeddings.read(table, { ...key, ids: ['a'] })).get('a');
      assert.deepEqual(a?.embedding, new Float32Array([5, 6]));
      assert.deepEqual(a?.searchEmbedding, new Float32Array([7, 8]));
      assert.deepEqual(a?.toBeIndexed, { organic: false, ad: true });
      assert.equal(
        await store.embeddings.setMembership(table, {
          ...key,
          variant: 'ad',
          ids: ['a', 'zz'],
          toBeIndexed: false,
        }),
        1,
      );
      assert.deepEqual((await store.embeddings.read(table, { ...key, ids: ['a'] })).get('a')?.toBeIndexed, {
        organic: false,
        ad: false,
      });
    });

    test('delete, scan in pages, and drop a version', async () => {
      const { store } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const table = `emb_${n}`;
      const rows = vectors(10, 3, 3).map((embedding, i) => ({
        id: `id${i}`,
        embedding,
        toBeIndexed: { organic: i % 2 === 0 },
      }));
      await store.embeddings.upsert(table, { modelName: 'm1', version: 1, rows });
      await store.embeddings.upsert(table, { modelName: 'm1', version: 2, rows });
      assert.equal(
        await store.embeddings.delete(table, { modelName: 'm1', version: 1, ids: ['id1', 'id2', 'nope'] }),
        2,
      );
      const gone = await store.embeddings.read(table, { modelName: 'm1', version: 1, ids: ['id1', 'id3'] });
      assert.deepEqual([...gone.keys()], ['id3']);
      const pages: string[][] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.embeddings.scan(table, {
          modelName: 'm1',
          version: 1,
          limit: 3,
          ...(after ? { afterId: after } : {}),
        });
        if (page.length === 0) break;
        pages.push(page.map((r) => r.id));
        after = page.at(-1)?.id;
      }
      assert.deepEqual(pages, [
        ['id0', 'id3', 'id4'],
        ['id5', 'id6', 'id7'],
        ['id8', 'id9'],
      ]);
      const organic = await store.embeddings.scan(table, {
        modelName: 'm1',
        version: 2,
        limit: 100,
        variant: 'organic',
      });
      assert.deepEqual(
        organic.map((r) => r.id),
        ['id0', 'id2', 'id4', 'id6', 'id8'],
      );
      assert.equal(await store.embeddings.dropVersion(table, 'm1', 1), 8);
      assert.equal(await store.embeddings.count(table, 'm1', 1), 0);
      assert.equal(await store.embeddings.count(table, 'm1', 2), 10);
    });

    test('rows past their TTL are never returned, and the sweep deletes those still expired', async () => {
      const { sql, store } = context();
      const { n } = await registerModel(store);
      const table = `emb_${n}`;
      const rows = vectors(5, 4, 5).map((embedding, i) => ({ id: `t${i}`, embedding }));
      await store.embeddings.upsert(table, { modelName: 'm1', version: 1, rows, ttlSeconds: 3600 });
      await store.embeddings.upsert(table, {
        modelName: 'm1',
        version: 1,
        rows: [{ id: 'forever', embedding: new Float32Array([1, 1, 1, 1]) }],
      });
      const { rows: clock } = await sql.query<{ now: Date }>('SELECT now() AS now');
      const t0 = (await store.embeddings.read(table, { modelName: 'm1', version: 1, ids: ['t0'] })).get('t0');
      const lifetime = (t0?.expiresAt?.getTime() ?? 0) - (clock[0]?.now.getTime() ?? 0);
      assert.ok(Math.abs(lifetime - 3_600_000) < 60_000, `expires in about an hour (${lifetime} ms)`);
      // time passes for two rows: move their expiry into the past
      await sql.query(
        `UPDATE "${table}" SET expires_at = now() - interval '1 second' WHERE id IN ('t0', 't1')`,
      );
      const ids = ['t0', 't1', 't2', 't3', 't4', 'forever'];
      const live = await store.embeddings.read(table, { modelName: 'm1', version: 1, ids });
      assert.deepEqual([...live.keys()].sort(), ['forever', 't2', 't3', 't4']);
      assert.equal(await store.embeddings.count(table, 'm1', 1), 4);
      assert.deepEqual(
        (await store.embeddings.scan(table, { modelName: 'm1', version: 1, limit: 10 })).map((r) => r.id),
        ['forever', 't2', 't3', 't4'],
      );
      assert.equal(await countRows(sql, table), 6, 'hidden, not yet deleted');
      assert.equal((await store.embeddings.expiredKeys(table, 1)).length, 1);
      const expired = await store.embeddings.expiredKeys(table);
      assert.deepEqual(expired.map((k) => [k.modelName, k.version, k.id]).sort(), [
        ['m1', 1, 't0'],
        ['m1', 1, 't1'],
      ]);
      // A row written again between the sweep's read and its delete lives on.
      await store.embeddings.upsert(table, {
        modelName: 'm1',
        version: 1,
        rows: [rows[1]!],
        ttlSeconds: 3600,
      });
      assert.equal(await store.embeddings.deleteExpired(table, expired), 1);
      assert.deepEqual(await store.embeddings.expiredKeys(table), []);
      assert.equal(await countRows(sql, table), 5);
      // rewriting an expired row without a TTL makes it permanent again
      await store.embeddings.upsert(table, {
        modelName: 'm1',
        version: 1,
        rows: [{ id: 't2', embedding: new Float32Array(4) }],
      });
      assert.equal(
        (await store.embeddings.read(table, { modelName: 'm1', version: 1, ids: ['t2'] })).get('t2')
          ?.expiresAt,
        null,
      );
    });

    test('refused input: unregistered variants, bad rows, SQL in a variant name; nothing written', async () => {
      const { sql, store } = context();
      const { n, entity } = await registerModel(store);
      await store.variants.create(newVariant(entity, 'm1', 'organic'));
      const table = `emb_${n}`;
      const columns = await columnsOf(sql, table);
      const upsert = (row: EmbeddingRow, extra: { version?: number; ttlSeconds?: number } = {}) =>
        store.embeddings.upsert(table, {
          modelName: 'm1',
          version: extra.version ?? 1,
          rows: [row],
          ...extra,
        });
      const embedding = new Float32Array([1, 2]);
      await rejectsWith(
        upsert({ id: 'a', embedding, toBeIndexed: { commerce: true } }),
        'FAILED_PRECONDITION',
        'variant',
      );
      await rejectsWith(
        upsert({ id: 'a', embedding, toBeIndexed: { 'organic = true; DROP TABLE vss_models; --': true } }),
        'INVALID_ARGUMENT',
      );
      await rejectsWith(
        store.embeddings.setMembership(table, {
          modelName: 'm1',
          version: 1,
          ids: ['a'],
          variant: 'x" = true; --',
          toBeIndexed: true,
        }),
        'INVALID_ARGUMENT',
        'variant',
      );
      await rejectsWith(upsert({ id: '', embedding }), 'INVALID_ARGUMENT', 'rows[0].id');
      await rejectsWith(
        upsert({ id: 'a', embedding: new Float32Array(0) }),
        'INVALID_ARGUMENT',
        'rows[0].embedding',
      );
      await rejectsWith(upsert({ id: 'a', embedding }, { version: 0 }), 'INVALID_ARGUMENT', 'version');
      await rejectsWith(
        upsert({ id: 'a', embedding }, { ttlSeconds: -5 }),
        'INVALID_ARGUMENT',
        'ttl_seconds',
      );
      await rejectsWith(
        store.embeddings.read('emb; DROP TABLE vss_models', { modelName: 'm1', version: 1, ids: ['a'] }),
        'INVALID_ARGUMENT',
        'embeddings_table',
      );
      await rejectsWith(
        store.embeddings.read(table, { modelName: 'm1', version: 1, ids: [''] }),
        'INVALID_ARGUMENT',
        'ids[0]',
      );
      await rejectsWith(
        store.embeddings.count('vss_models', 'm1', 1),
        'INVALID_ARGUMENT',
        'embeddings_table',
      );
      assert.equal(await countRows(sql, table), 0);
      assert.deepEqual(await columnsOf(sql, table), columns);
      assert.ok((await tablesOf(sql)).includes('vss_models'));
    });
  });

  describe('aggregator', () => {
    test('columns appear as labels appear; values are read back per id', async () => {
      const { sql, store } = context();
      const { n } = await registerModel(store);
      const table = `agg_${n}`;
      await store.aggregator.upsert(table, [
        { id: 'c1', label: 'is_live_ad', value: 'true' },
        { id: 'c1', label: 'out_of_stock', value: 'false' },
        { id: 'c2', label: 'is_live_ad', value: 'false' },
      ]);
      assert.deepEqual(await columnsOf(sql, table), ['id', 'is_live_ad', 'out_of_stock']);
      await store.aggregator.upsert(table, [
        { id: 'c2', label: 'price_band', value: 'low' },
        { id: 'c3', label: 'out_of_stock', value: 'true' },
        { id: 'c1', label: 'is_live_ad', value: 'false' },
        { id: 'c1', label: 'is_live_ad', value: 'maybe' },
      ]);
      assert.deepEqual(await columnsOf(sql, table), ['id', 'is_live_ad', 'out_of_stock', 'price_band']);
      const all = await store.aggregator.read(table, ['c1', 'c2', 'c3', 'c4']);
      assert.deepEqual(Object.fromEntries(all), {
        c1: { is_live_ad: 'maybe', out_of_stock: 'false' },
        c2: { is_live_ad: 'false', price_band: 'low' },
        c3: { out_of_stock: 'true' },
      });
      const some = await store.aggregator.read(table, ['c1', 'c2'], ['out_of_stock', 'never_seen']);
      assert.deepEqual(Object.fromEntries(some), { c1: { out_of_stock: 'false' }, c2: {} });
      await store.aggregator.upsert(table, [{ id: 'c1', label: 'out_of_stock', value: null }]);
      assert.deepEqual((await store.aggregator.read(table, ['c1'])).get('c1'), { is_live_ad: 'maybe' });
    });

    test('a new label from concurrent writers gets one column, and every value lands', async () => {
      const { sql, store } = context();
      const { n } = await registerModel(store);
      const table = `agg_${n}`;
      await Promise.all(
        Array.from({ length: 6 }, (_, w) =>
          store.aggregator.upsert(table, [
            { id: `w${w}`, label: 'in_campaign', value: String(w) },
            { id: `w${w}`, label: `worker_${w % 2}`, value: 'x' },
          ]),
        ),
      );
      assert.deepEqual(await columnsOf(sql, table), ['id', 'in_campaign', 'worker_0', 'worker_1']);
      const read = await store.aggregator.read(table, ['w0', 'w5']);
      assert.deepEqual(read.get('w5'), { in_campaign: '5', worker_1: 'x' });
      await store.entityTables.addAttributeColumns(table, ['in_campaign', 'in_campaign']);
      await rejectsWith(
        store.entityTables.addAttributeColumns(table, ['ok', 'x; --']),
        'INVALID_ARGUMENT',
        'labels[1]',
      );
      assert.deepEqual(
        await columnsOf(sql, table),
        ['id', 'in_campaign', 'worker_0', 'worker_1'],
        'again: no-op',
      );
    });

    test('a label carrying SQL, or naming the key, is refused; the table is unchanged', async () => {
      const { sql, store } = context();
      const { n } = await registerModel(store);
      const table = `agg_${n}`;
      await store.aggregator.upsert(table, [{ id: 'c1', label: 'is_live_ad', value: 'true' }]);
      const columns = await columnsOf(sql, table);
      for (const label of [
        'x text); DROP TABLE vss_models; --',
        "is_live_ad\" = 'true'; DELETE FROM vss_stores; --",
        'Is_Live_Ad',
        'id',
        '',
        'a'.repeat(64),
      ]) {
        await rejectsWith(
          store.aggregator.upsert(table, [
            { id: 'c2', label: 'fine_label', value: 'v' },
            { id: 'c2', label, value: 'v' },
          ]),
          'INVALID_ARGUMENT',
          'data[1].label',
        );
        await rejectsWith(store.aggregator.read(table, ['c1'], [label]), 'INVALID_ARGUMENT', 'labels[0]');
      }
      await rejectsWith(
        store.aggregator.upsert(table, [{ id: '', label: 'is_live_ad', value: 'v' }]),
        'INVALID_ARGUMENT',
        'data[0].id',
      );
      await rejectsWith(
        store.aggregator.upsert('agg"; DROP TABLE vss_models; --', []),
        'INVALID_ARGUMENT',
        'aggregator_table',
      );
      assert.deepEqual(
        await columnsOf(sql, table),
        columns,
        'not even the valid label of the batch was added',
      );
      assert.equal(await countRows(sql, table), 1);
      assert.ok((await tablesOf(sql)).includes('vss_models'));
      assert.ok((await tablesOf(sql)).includes('vss_stores'));
      assert.equal((await store.aggregator.read(table, ['c1'])).get('c1')?.is_live_ad, 'true');
    });

    test('writing to a table no store created is NOT_FOUND', async () => {
      const { store } = context();
      await rejectsWith(
        store.aggregator.upsert('agg_never_created', [{ id: 'a', label: 'l', value: 'v' }]),
        'NOT_FOUND',
      );
    });
  });
}
