/**
 * The VectorDb contract: every adapter runs this suite (the embedded engine now, Qdrant later), so
 * they cannot drift apart. Each test works in collections of its own (names from `names()`), so the
 * suite can share one database and one server with other suites.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ErrorCode, isLatticeError } from '../../../src/platform/errors.js';
import type {
  CollectionSpec,
  Filter,
  Payload,
  PointInput,
  SearchHit,
  SearchRequest,
  VectorDb,
} from '../../../src/platform/vectordb/index.js';
import { eventually } from '../../support/servers.js';
import { clusteredFixture, cosine, exactSearch, recall } from '../../support/vector-fixtures.js';

export interface VectorDbContractTarget {
  name: string;
  open(): Promise<VectorDb>;
  /**
   * Keeps new points of `collection` out of the index until the returned function is called, so
   * `indexedOnly` can be observed. Omit it when the adapter cannot; that test is then skipped.
   */
  holdIndexing?(db: VectorDb, collection: string): Promise<() => Promise<void>>;
  cleanup?(): Promise<void>;
  skip?: string | false;
}

export async function rejectsWith(
  work: Promise<unknown>,
  code: ErrorCode,
  field?: string,
  message?: RegExp,
): Promise<void> {
  let caught: unknown;
  await assert.rejects(work, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(isLatticeError(caught), `expected a LatticeError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (field !== undefined) assert.equal(caught.field, field, caught.message);
  if (message) assert.match(caught.message, message);
}

const ids = (hits: SearchHit[] | undefined) => (hits ?? []).map((hit) => hit.id);
const sorted = (values: string[]) => [...values].sort();

/** Twelve 2-d points with payloads covering every value type, and fields missing on some. */
const FILTER_POINTS: PointInput[] = [
  { id: 'a', vector: [1, 0], payload: { color: 'red', size: 1, active: true, tags: ['x'] } },
  { id: 'b', vector: [0.9, 0.1], payload: { color: 'blue', size: 2, active: false, tags: ['y', 'z'] } },
  { id: 'c', vector: [0.8, 0.2], payload: { color: 'green', size: 3, active: true, tags: [] } },
  { id: 'd', vector: [0.7, 0.3], payload: { color: 'red', size: 4.5, tags: ['x', 'y'] } },
  { id: 'e', vector: [0.6, 0.4], payload: { color: 'blue', size: 5 } },
  { id: 'f', vector: [0.5, 0.5], payload: { size: 6, active: false } },
  { id: 'g', vector: [0.4, 0.6], payload: { color: '3', size: -1 } },
  { id: 'h', vector: [0.3, 0.7], payload: { color: 'red', size: '7' } },
  { id: 'i', vector: [0.2, 0.8], payload: {} },
  { id: 'j', vector: [0.1, 0.9], payload: { color: 'true', size: 0 } },
  { id: 'k', vector: [0, 1], payload: { color: 'RED', size: 10, active: true } },
  { id: 'l', vector: [-1, 0], payload: { size: 3 } },
];
const ALL = FILTER_POINTS.map((p) => p.id);

export function vectorDbContract(target: VectorDbContractTarget): void {
  describe(`VectorDb contract: ${target.name}`, { skip: target.skip ?? false }, () => {
    let db: VectorDb;
    let counter = 0;
    const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
    /** Collection names unique to one test. */
    const names = (...suffixes: string[]) => {
      counter++;
      return suffixes.map((suffix) => `contract_${run}_${counter}_${suffix}`);
    };
    const create = async (spec: Partial<CollectionSpec> & { name: string }) => {
      await db.createCollection({ dimension: 2, distance: 'DOT', ...spec });
      return spec.name;
    };
    const waitIndexed = async (name: string) =>
      eventually(
        async () => {
          const info = await db.collectionInfo(name);
          return info.indexedPoints === info.points && info.status === 'READY';
        },
        30_000,
        `collection ${name} to be indexed`,
      );
    const filterIds = async (name: string, filters: Filter[], extra: Partial<SearchRequest> = {}) => {
      const [hits] = await db.search({
        collection: name,
        queries: [{ vector: [1, 0] }],
        filters,
        limit: 100,
        ...extra,
      });
      return sorted(ids(hits));
    };

    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
      await target.cleanup?.();
    });

    test('a collection is created once, listed, described, and dropped', async () => {
      const [name] = names('life');
      await create({ name: name!, dimension: 3, distance: 'COSINE', hnsw: { m: 8 } });
      assert.ok((await db.listCollections()).includes(name!));
      const info = await db.collectionInfo(name!);
      assert.equal(info.name, name);
      assert.equal(info.dimension, 3);
      assert.equal(info.distance, 'COSINE');
      assert.equal(info.hnsw.m, 8);
      assert.ok(info.hnsw.efConstruction > 0 && info.hnsw.efSearch > 0, 'defaults fill the other parameters');
      assert.deepEqual([info.points, info.indexedPoints, info.status], [0, 0, 'READY']);
      // Admin steps are retried: creating the same collection again is fine, a different one is not.
      await create({ name: name!, dimension: 3, distance: 'COSINE', hnsw: { m: 8 } });
      await rejectsWith(
        create({ name: name!, dimension: 4, distance: 'COSINE' }),
        'ALREADY_EXISTS',
        'name',
        /dimension 3/,
      );
      assert.equal(await db.dropCollection(name!), true);
      assert.equal(await db.dropCollection(name!), false);
      assert.ok(!(await db.listCollections()).includes(name!));
      await rejectsWith(db.collectionInfo(name!), 'NOT_FOUND', 'collection');
    });

    test('an invalid collection spec is INVALID_ARGUMENT naming the field', async () => {
      const [name] = names('spec');
      await rejectsWith(
        db.createCollection({ name: name!, dimension: 0, distance: 'DOT' }),
        'INVALID_ARGUMENT',
        'dimension',
      );
      await rejectsWith(
        db.createCollection({ name: name!, dimension: 2.5, distance: 'DOT' }),
        'INVALID_ARGUMENT',
        'dimension',
      );
      await rejectsWith(
        db.createCollection({ name: name!, dimension: 2, distance: 'MANHATTAN' as 'DOT' }),
        'INVALID_ARGUMENT',
        'distance',
      );
      await rejectsWith(
        db.createCollection({ name: name!, dimension: 2, distance: 'DOT', hnsw: { m: 1 } }),
        'INVALID_ARGUMENT',
        'hnsw.m',
      );
      await rejectsWith(
        db.createCollection({ name: '../up', dimension: 2, distance: 'DOT' }),
        'INVALID_ARGUMENT',
        'name',
      );
      assert.ok(!(await db.listCollections()).includes(name!));
    });

    test('upsert stores vectors and payloads; getPoints answers aligned with the ids asked', async () => {
      const [name] = names('crud');
      await create({ name: name!, dimension: 3 });
      await db.upsert(name!, [
        { id: 'p1', vector: [1, 2, 3], payload: { color: 'red', rank: 2, live: true, tags: ['a', 'b'] } },
        { id: 'p2', vector: Float32Array.from([0.5, -1, 0]) },
      ]);
      const [p1, missing, p2] = await db.getPoints(name!, ['p1', 'nope', 'p2']);
      assert.deepEqual(p1, {
        id: 'p1',
        vector: Float32Array.from([1, 2, 3]),
        payload: { color: 'red', rank: 2, live: true, tags: ['a', 'b'] },
      });
      assert.equal(missing, undefined);
      assert.deepEqual(p2, { id: 'p2', vector: Float32Array.from([0.5, -1, 0]), payload: {} });
      const [bare] = await db.getPoints(name!, ['p1'], {
        withVector: false,
        withPayload: ['color', 'absent'],
      });
      assert.deepEqual(bare, { id: 'p1', payload: { color: 'red' } });
      assert.equal((await db.collectionInfo(name!)).points, 2);
    });

    test('upsert of an existing id replaces its vector and its whole payload', async () => {
      const [name] = names('replace');
      await create({ name: name! });
      await db.upsert(name!, [
        { id: 'x', vector: [1, 0], payload: { color: 'red', size: 1 } },
        { id: 'y', vector: [0, 1], payload: { color: 'blue' } },
      ]);
      await db.upsert(name!, [{ id: 'x', vector: [0, 2], payload: { shape: 'round' } }]);
      const [x] = await db.getPoints(name!, ['x']);
      assert.deepEqual(x, { id: 'x', vector: Float32Array.from([0, 2]), payload: { shape: 'round' } });
      const [hits] = await db.search({ collection: name!, queries: [{ vector: [0, 1] }], limit: 2 });
      assert.deepEqual(ids(hits), ['x', 'y'], 'the search uses the new vector');
      assert.deepEqual(await filterIds(name!, [{ field: 'color', op: 'EXISTS', values: [] }]), ['y']);
      assert.equal((await db.collectionInfo(name!)).points, 2);
      // Within one call the last occurrence of an id wins.
      await db.upsert(name!, [
        { id: 'z', vector: [1, 1], payload: { v: 1 } },
        { id: 'z', vector: [2, 2], payload: { v: 2 } },
      ]);
      assert.deepEqual(await db.getPoints(name!, ['z']), [
        { id: 'z', vector: Float32Array.from([2, 2]), payload: { v: 2 } },
      ]);
    });

    test('delete removes points from reads, searches and counts; unknown ids are ignored', async () => {
      const [name] = names('delete');
      await create({ name: name! });
      await db.upsert(
        name!,
        Array.from({ length: 10 }, (_, i) => ({
          id: `d${i}`,
          vector: [1, i],
          payload: { even: i % 2 === 0 },
        })),
      );
      assert.equal(await db.delete(name!, ['d1', 'd2', 'unknown', 'd2']), 2);
      assert.deepEqual(await db.getPoints(name!, ['d1', 'd3']), [
        undefined,
        { id: 'd3', vector: Float32Array.from([1, 3]), payload: { even: false } },
      ]);
      await waitIndexed(name!);
      const info = await db.collectionInfo(name!);
      assert.deepEqual([info.points, info.indexedPoints], [8, 8]);
      const [hits] = await db.search({ collection: name!, queries: [{ vector: [0, 1] }], limit: 10 });
      assert.deepEqual(ids(hits), ['d9', 'd8', 'd7', 'd6', 'd5', 'd4', 'd3', 'd0']);
      assert.deepEqual(await filterIds(name!, [{ field: 'even', op: 'IN', values: ['true'] }]), [
        'd0',
        'd4',
        'd6',
        'd8',
      ]);
      // A deleted id can come back.
      await db.upsert(name!, [{ id: 'd1', vector: [1, 100] }]);
      const [again] = await db.search({ collection: name!, queries: [{ vector: [0, 1] }], limit: 1 });
      assert.deepEqual(ids(again), ['d1']);
    });

    test('setPayload merges fields into existing points and the filters see the change', async () => {
      const [name] = names('merge');
      await create({ name: name! });
      await db.upsert(name!, [
        { id: 'm1', vector: [1, 0], payload: { color: 'red', to_be_indexed_ads: false, size: 1 } },
        { id: 'm2', vector: [0, 1], payload: { color: 'blue' } },
      ]);
      assert.equal(
        await db.setPayload(name!, ['m1', 'm2', 'ghost'], { to_be_indexed_ads: true, size: 9 }),
        2,
      );
      const points = await db.getPoints(name!, ['m1', 'm2'], { withVector: false });
      assert.deepEqual(points, [
        { id: 'm1', payload: { color: 'red', to_be_indexed_ads: true, size: 9 } },
        { id: 'm2', payload: { color: 'blue', to_be_indexed_ads: true, size: 9 } },
      ]);
      assert.deepEqual(await filterIds(name!, [{ field: 'to_be_indexed_ads', op: 'IN', values: ['true'] }]), [
        'm1',
        'm2',
      ]);
      assert.deepEqual(
        await filterIds(name!, [{ field: 'to_be_indexed_ads', op: 'IN', values: ['false'] }]),
        [],
      );
      assert.deepEqual(await filterIds(name!, [{ field: 'size', op: 'LT', values: ['5'] }]), []);
      await rejectsWith(
        db.setPayload(name!, ['m1'], { bad: { nested: 1 } as unknown as string }),
        'INVALID_ARGUMENT',
        'payload.bad',
      );
    });

    test('distance functions score known vectors: DOT and COSINE descend, EUCLIDEAN ascends by distance', async () => {
      const [dot, cosine, euclid] = names('dot', 'cosine', 'euclid');
      const points: PointInput[] = [
        { id: 'u', vector: [3, 4] },
        { id: 'v', vector: [1, 0] },
        { id: 'w', vector: [-2, 1] },
      ];
      for (const [name, distance] of [
        [dot, 'DOT'],
        [cosine, 'COSINE'],
        [euclid, 'EUCLIDEAN'],
      ] as const) {
        await create({ name: name!, distance });
        await db.upsert(name!, points);
      }
      const query = { queries: [{ vector: [1, 2] }], limit: 3 };
      const scores = async (collection: string) =>
        ((await db.search({ collection, ...query }))[0] ?? []).map((hit) => [hit.id, hit.score] as const);
      const close = (got: (readonly [string, number])[], want: [string, number][]) => {
        assert.deepEqual(
          got.map(([id]) => id),
          want.map(([id]) => id),
        );
        got.forEach(([, score], i) => {
          assert.ok(Math.abs(score - want[i]![1]) < 1e-5, `${score} ≈ ${want[i]![1]}`);
        });
      };
      // q = (1, 2): dot u = 11, v = 1, w = 0; |q| = √5.
      close(await scores(dot!), [
        ['u', 11],
        ['v', 1],
        ['w', 0],
      ]);
      close(await scores(cosine!), [
        ['u', 11 / (5 * Math.sqrt(5))],
        ['v', 1 / Math.sqrt(5)],
        ['w', 0],
      ]);
      // Distances: v √4 = 2, w √10, u √8.
      close(await scores(euclid!), [
        ['v', 2],
        ['u', Math.sqrt(8)],
        ['w', Math.sqrt(10)],
      ]);
    });

    test('every filter operator over strings, numbers, booleans and lists', async () => {
      const [name] = names('filters');
      await create({ name: name! });
      await db.upsert(name!, FILTER_POINTS);
      const expect = async (filters: Filter[], want: string[]) =>
        assert.deepEqual(await filterIds(name!, filters), sorted(want), JSON.stringify(filters));
      // IN: strings exactly (case matters), numbers numerically, booleans by "true"/"false", lists by any element.
      await expect([{ field: 'color', op: 'IN', values: ['red', 'blue'] }], ['a', 'b', 'd', 'e', 'h']);
      await expect([{ field: 'size', op: 'IN', values: ['4.50', '6', '7'] }], ['d', 'f', 'h']);
      await expect([{ field: 'color', op: 'IN', values: ['3'] }], ['g']);
      await expect([{ field: 'active', op: 'IN', values: ['true'] }], ['a', 'c', 'k']);
      await expect([{ field: 'color', op: 'IN', values: ['true'] }], ['j']);
      await expect([{ field: 'tags', op: 'IN', values: ['y'] }], ['b', 'd']);
      // NOT_IN: points without the field match.
      await expect(
        [{ field: 'color', op: 'NOT_IN', values: ['red', 'blue'] }],
        ['c', 'f', 'g', 'i', 'j', 'k', 'l'],
      );
      await expect(
        [{ field: 'tags', op: 'NOT_IN', values: ['x'] }],
        ['b', 'c', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'],
      );
      // EXISTS / NOT_EXISTS: an empty list counts as absent; values are ignored.
      await expect([{ field: 'tags', op: 'EXISTS', values: [] }], ['a', 'b', 'd']);
      await expect(
        [{ field: 'active', op: 'NOT_EXISTS', values: ['ignored'] }],
        ['d', 'e', 'g', 'h', 'i', 'j', 'l'],
      );
      await expect(
        [{ field: 'tags', op: 'NOT_EXISTS', values: [] }],
        ['c', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'],
      );
      // Ranges: numeric payload values only (h's size is the string "7").
      await expect([{ field: 'size', op: 'LT', values: ['3'] }], ['a', 'b', 'g', 'j']);
      await expect([{ field: 'size', op: 'LTE', values: ['3'] }], ['a', 'b', 'c', 'g', 'j', 'l']);
      await expect([{ field: 'size', op: 'GT', values: ['5'] }], ['f', 'k']);
      await expect([{ field: 'size', op: 'GTE', values: ['5'] }], ['e', 'f', 'k']);
      await expect([{ field: 'size', op: 'BETWEEN', values: ['1', '5'] }], ['b', 'c', 'd', 'l']);
      await expect(
        [{ field: 'size', op: 'BETWEEN_INCLUSIVE', values: ['1', '5'] }],
        ['a', 'b', 'c', 'd', 'e', 'l'],
      );
      await expect([{ field: 'size', op: 'BETWEEN_INCLUSIVE', values: ['-0.5', '0'] }], ['j']);
      await expect([{ field: 'color', op: 'LT', values: ['100'] }], []);
      // Filters combine with AND; a query's own filters add to the request's.
      await expect(
        [
          { field: 'color', op: 'IN', values: ['red'] },
          { field: 'size', op: 'GTE', values: ['2'] },
        ],
        ['d'],
      );
      await expect([{ field: 'unknown_field', op: 'IN', values: ['x'] }], []);
      await expect([{ field: 'unknown_field', op: 'NOT_EXISTS', values: [] }], ALL);
      const [withOwn, plain] = await db.search({
        collection: name!,
        queries: [
          { vector: [1, 0], filters: [{ field: 'active', op: 'IN', values: ['true'] }] },
          { vector: [1, 0] },
        ],
        filters: [{ field: 'color', op: 'IN', values: ['red', 'green'] }],
        limit: 100,
      });
      assert.deepEqual(sorted(ids(withOwn)), ['a', 'c']);
      assert.deepEqual(sorted(ids(plain)), ['a', 'c', 'd', 'h']);
    });

    test('malformed filters are INVALID_ARGUMENT naming the filter part', async () => {
      const [name] = names('badfilters');
      await create({ name: name! });
      await db.upsert(name!, FILTER_POINTS);
      const search = (filters: Filter[], perQuery = false) =>
        db.search({
          collection: name!,
          queries: [{ vector: [1, 0], ...(perQuery ? { filters } : {}) }],
          ...(perQuery ? {} : { filters }),
          limit: 5,
        });
      await rejectsWith(
        search([{ field: 'color', op: 'LIKE' as 'IN', values: ['r'] }]),
        'INVALID_ARGUMENT',
        'filters[0].op',
      );
      await rejectsWith(
        search([{ field: '', op: 'IN', values: ['r'] }]),
        'INVALID_ARGUMENT',
        'filters[0].field',
      );
      await rejectsWith(
        search([{ field: 'color', op: 'IN', values: [] }]),
        'INVALID_ARGUMENT',
        'filters[0].values',
      );
      await rejectsWith(
        search([
          { field: 'size', op: 'GT', values: ['1'] },
          { field: 'size', op: 'LT', values: ['ten'] },
        ]),
        'INVALID_ARGUMENT',
        'filters[1].values[0]',
      );
      await rejectsWith(
        search([{ field: 'size', op: 'LT', values: ['1', '2'] }]),
        'INVALID_ARGUMENT',
        'filters[0].values',
      );
      await rejectsWith(
        search([{ field: 'size', op: 'BETWEEN', values: ['1'] }]),
        'INVALID_ARGUMENT',
        'filters[0].values',
      );
      await rejectsWith(
        search([{ field: 'size', op: 'BETWEEN', values: ['5', '1'] }]),
        'INVALID_ARGUMENT',
        'filters[0].values',
      );
      await rejectsWith(
        search([{ field: 'size', op: 'GTE', values: [''] }], true),
        'INVALID_ARGUMENT',
        'queries[0].filters[0].values[0]',
      );
    });

    test('a smaller limit reads a prefix of the ranking', async () => {
      const [name] = names('prefixes');
      await create({ name: name!, distance: 'EUCLIDEAN' });
      const points = Array.from({ length: 60 }, (_, i) => ({
        id: `q${String(i).padStart(2, '0')}`,
        vector: [Math.cos(i), Math.sin(i) * (1 + i / 10)],
        payload: { odd: i % 2 === 1 },
      }));
      await db.upsert(name!, points);
      await waitIndexed(name!);
      for (const filters of [[], [{ field: 'odd', op: 'IN', values: ['true'] }]] as Filter[][]) {
        const total = filters.length === 0 ? 60 : 30;
        const search = async (limit: number) =>
          ids((await db.search({ collection: name!, queries: [{ vector: [0.3, 0.1] }], filters, limit }))[0]);
        const full = await search(100);
        assert.equal(full.length, total);
        for (const limit of [1, 7, 14, 29]) assert.deepEqual(await search(limit), full.slice(0, limit));
      }
    });

    test('a search widens its candidate list with efSearch; out of range is INVALID_ARGUMENT naming it', async () => {
      // A graph built as weakly as the port allows, searched at its own width (raised to the limit)
      // and at a wide one: the wide search finds the true neighbours, whatever the collection's width.
      const [name] = names('width');
      const fixture = clusteredFixture({ count: 3_000, dimension: 16, clusters: 30, seed: 11, spread: 1 });
      await create({
        name: name!,
        dimension: 16,
        distance: 'EUCLIDEAN',
        hnsw: { m: 6, efConstruction: 12, efSearch: 1 },
      });
      const points = fixture.ids.map((id, i) => ({ id, vector: fixture.vector(i) }));
      for (let at = 0; at < points.length; at += 1_000) await db.upsert(name!, points.slice(at, at + 1_000));
      await waitIndexed(name!);
      const queries = fixture.queries(20, 12);
      const truth = queries.map((q) =>
        exactSearch(fixture.vectors, 16, q, 10, 'EUCLIDEAN').indices.map((row) => fixture.ids[row]!),
      );
      const recallAt = async (efSearch?: number) =>
        recall(
          (
            await db.search({
              collection: name!,
              queries: queries.map((vector) => ({ vector })),
              limit: 10,
              indexedOnly: true,
              ...(efSearch === undefined ? {} : { efSearch }),
            })
          ).map(ids),
          truth,
        );
      const narrow = await recallAt();
      const wide = await recallAt(512);
      assert.ok(wide >= 0.95, `recall@10 at efSearch 512: ${wide} (at the collection's width: ${narrow})`);
      assert.ok(wide >= narrow, `a wider search found less: ${wide} < ${narrow}`);
      for (const efSearch of [0, 4_097, 1.5]) {
        await rejectsWith(
          db.search({ collection: name!, queries: [{ vector: queries[0]! }], limit: 10, efSearch }),
          'INVALID_ARGUMENT',
          'efSearch',
        );
      }
    });

    test('batch search answers each query in order; excluded ids never come back', async () => {
      const [name] = names('batch');
      await create({ name: name! });
      await db.upsert(name!, FILTER_POINTS);
      const results = await db.search({
        collection: name!,
        queries: [{ vector: [1, 0] }, { vector: [0, 1] }, { vector: [1, 0], excludeIds: ['a', 'nope'] }],
        limit: 2,
        withPayload: ['color'],
        withVector: true,
      });
      assert.equal(results.length, 3);
      assert.deepEqual(ids(results[0]), ['a', 'b']);
      assert.deepEqual(ids(results[1]), ['k', 'j']);
      assert.deepEqual(ids(results[2]), ['b', 'c']);
      assert.deepEqual(results[0]![0]!.payload, { color: 'red' });
      assert.deepEqual(results[0]![0]!.vector, Float32Array.from([1, 0]));
      assert.deepEqual(await db.search({ collection: name!, queries: [], limit: 3 }), []);
      const [bare] = await db.search({ collection: name!, queries: [{ vector: [1, 0] }], limit: 1 });
      assert.deepEqual(Object.keys(bare![0]!).sort(), ['id', 'score'], 'no payload or vector unless asked');
    });

    test('what vss serving relies on: an EXISTS search of limit 1 tells whether any point carries a field; epoch-ms ranges', async () => {
      // serving/filter-fields.ts asks this to accept a filter field; expiry filters compare epoch ms.
      const [name] = names('field_probe');
      await create({ name: name!, dimension: 2, distance: 'COSINE' });
      const now = 1_765_000_000_000;
      await db.upsert(
        name!,
        Array.from({ length: 300 }, (_, i) => ({
          id: `p${i}`,
          vector: [Math.cos(i), Math.sin(i)],
          payload: {
            embedding_expires_at: now + (i - 150) * 1000,
            ...(i === 299 ? { rare: 'x' } : {}),
          },
        })),
      );
      const probe = async (field: string) =>
        (
          await db.search({
            collection: name!,
            queries: [{ vector: [1, 0] }],
            filters: [{ field, op: 'EXISTS', values: [] }],
            limit: 1,
          })
        )[0]!.length;
      assert.equal(await probe('rare'), 1, 'carried by one point of 300, far from the query');
      assert.equal(await probe('embedding_expires_at'), 1);
      assert.equal(await probe('colour'), 0);
      await waitIndexed(name!);
      const unexpired = await db.search({
        collection: name!,
        queries: [{ vector: [1, 0] }],
        filters: [{ field: 'embedding_expires_at', op: 'GT', values: [String(now)] }],
        limit: 300,
        indexedOnly: true,
      });
      assert.deepEqual(
        sorted(ids(unexpired[0]!)),
        sorted(Array.from({ length: 149 }, (_, i) => `p${i + 151}`)),
      );
    });

    test('a filtered search returns exactly limit hits whenever that many match', async () => {
      const [name] = names('exact_limit');
      await create({ name: name!, dimension: 4, distance: 'COSINE' });
      const points = Array.from({ length: 400 }, (_, i) => ({
        id: `e${i}`,
        vector: [Math.sin(i), Math.cos(i * 0.7), Math.sin(i * 1.3), 1],
        payload: { bucket: i % 40, rare: i % 97 === 0 },
      }));
      await db.upsert(name!, points);
      await waitIndexed(name!);
      const search = async (filters: Filter[], limit: number) =>
        (
          await db.search({
            collection: name!,
            queries: [{ vector: [1, 0, 0, 1] }],
            filters,
            limit,
            indexedOnly: true,
          })
        )[0]!;
      assert.equal((await search([{ field: 'bucket', op: 'LT', values: ['4'] }], 40)).length, 40);
      assert.equal((await search([{ field: 'bucket', op: 'IN', values: ['7'] }], 10)).length, 10);
      assert.equal((await search([{ field: 'rare', op: 'IN', values: ['true'] }], 10)).length, 5);
      assert.equal((await search([{ field: 'bucket', op: 'NOT_IN', values: ['1'] }], 300)).length, 300);
    });

    test('exact: true answers the true ranking (brute force), whatever the index parameters', async () => {
      // The weakest graph the port accepts, on tight clusters: its approximate search misses, the
      // exact one must not (it is the ground truth of the admin's recall gate).
      const [name] = names('exact_search');
      const dimension = 16;
      await create({
        name: name!,
        dimension,
        distance: 'COSINE',
        hnsw: { m: 2, efConstruction: 4, efSearch: 1 },
      });
      let seed = 7;
      const random = () => {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        return seed / 2_147_483_648;
      };
      const centres = Array.from({ length: 30 }, () =>
        Array.from({ length: dimension }, () => random() * 2 - 1),
      );
      const points: PointInput[] = Array.from({ length: 3_000 }, (_, i) => ({
        id: `x${String(i).padStart(4, '0')}`,
        vector: centres[i % 30]!.map((c) => Math.fround(c + (random() - 0.5) * 0.3)),
        payload: { half: i % 2 },
      }));
      await db.upsert(name!, points);
      await waitIndexed(name!);
      for (let q = 0; q < 20; q++) {
        const vector = centres[(q * 7) % 30]!.map((c) => c + (random() - 0.5) * 0.3);
        const filters: Filter[] = q % 2 === 0 ? [] : [{ field: 'half', op: 'IN', values: ['1'] }];
        const admitted = points.filter((p) => filters.length === 0 || p.payload!.half === 1);
        // The true top 10 scores (compared as scores: ties and float32 rounding cannot reorder them).
        const truth = admitted
          .map((p) => cosine(vector, p.vector as number[]))
          .sort((a, b) => b - a)
          .slice(0, 10);
        const [hits] = await db.search({
          collection: name!,
          queries: [{ vector }],
          filters,
          limit: 10,
          indexedOnly: true,
          exact: true,
        });
        assert.equal(hits!.length, 10);
        hits!.forEach((hit, i) => {
          assert.ok(
            Math.abs(hit.score - truth[i]!) < 1e-4,
            `query ${q}, hit ${i}: ${hit.score} vs ${truth[i]}`,
          );
        });
      }
    });

    test('indexedOnly searches see only indexed points', {
      skip: !target.holdIndexing && 'the adapter cannot hold indexing back',
    }, async () => {
      const [name] = names('indexed');
      await create({ name: name! });
      await db.upsert(name!, [
        { id: 'old1', vector: [1, 0] },
        { id: 'old2', vector: [0, 1] },
      ]);
      await waitIndexed(name!);
      const release = await target.holdIndexing!(db, name!);
      await db.upsert(name!, [
        { id: 'new1', vector: [2, 0], payload: { fresh: true } },
        { id: 'new2', vector: [0, 2], payload: { fresh: true } },
      ]);
      const info = await db.collectionInfo(name!);
      assert.deepEqual([info.points, info.indexedPoints, info.status], [4, 2, 'INDEXING']);
      const request: SearchRequest = { collection: name!, queries: [{ vector: [1, 1] }], limit: 10 };
      assert.deepEqual(sorted(ids((await db.search({ ...request, indexedOnly: true }))[0])), [
        'old1',
        'old2',
      ]);
      assert.deepEqual(sorted(ids((await db.search(request))[0])), ['new1', 'new2', 'old1', 'old2']);
      const fresh: Filter[] = [{ field: 'fresh', op: 'IN', values: ['true'] }];
      assert.deepEqual(ids((await db.search({ ...request, filters: fresh, indexedOnly: true }))[0]), []);
      assert.deepEqual(sorted(ids((await db.search({ ...request, filters: fresh }))[0])), ['new1', 'new2']);
      await release();
      await waitIndexed(name!);
      assert.deepEqual(sorted(ids((await db.search({ ...request, indexedOnly: true }))[0])), [
        'new1',
        'new2',
        'old1',
        'old2',
      ]);
    });

    test('info counts points and indexed points through upserts and deletes', async () => {
      const [name] = names('counts');
      await create({ name: name! });
      await db.upsert(
        name!,
        Array.from({ length: 50 }, (_, i) => ({ id: `c${i}`, vector: [i, 1] })),
      );
      assert.equal((await db.collectionInfo(name!)).points, 50);
      await waitIndexed(name!);
      await db.delete(name!, ['c0', 'c1', 'c2']);
      await db.upsert(name!, [{ id: 'c3', vector: [-3, 1] }]);
      const info = await db.collectionInfo(name!);
      assert.equal(info.points, 47);
      await waitIndexed(name!);
      assert.equal((await db.collectionInfo(name!)).indexedPoints, 47);
    });

    test('a vector of the wrong dimension is INVALID_ARGUMENT naming it, and nothing is written', async () => {
      const [name] = names('dimension');
      await create({ name: name!, dimension: 3 });
      await rejectsWith(
        db.upsert(name!, [
          { id: 'ok', vector: [1, 2, 3] },
          { id: 'short', vector: [1, 2] },
        ]),
        'INVALID_ARGUMENT',
        'points[1].vector',
        /dimension 3/,
      );
      assert.deepEqual(await db.getPoints(name!, ['ok']), [undefined], 'a rejected batch writes nothing');
      await rejectsWith(
        db.upsert(name!, [{ id: 'nan', vector: [1, Number.NaN, 3] }]),
        'INVALID_ARGUMENT',
        'points[0].vector',
      );
      await rejectsWith(
        db.upsert(name!, [{ id: '', vector: [1, 2, 3] }]),
        'INVALID_ARGUMENT',
        'points[0].id',
      );
      await rejectsWith(
        db.search({
          collection: name!,
          queries: [{ vector: [1, 2, 3] }, { vector: [1, 2, 3, 4] }],
          limit: 3,
        }),
        'INVALID_ARGUMENT',
        'queries[1].vector',
        /4 values.*dimension 3/,
      );
      await rejectsWith(
        db.search({ collection: name!, queries: [{ vector: [1, 2, 3] }], limit: 0 }),
        'INVALID_ARGUMENT',
        'limit',
      );
    });

    test('every operation on an unknown collection is NOT_FOUND', async () => {
      const [name] = names('ghost');
      const calls: Promise<unknown>[] = [
        db.collectionInfo(name!),
        db.upsert(name!, [{ id: 'a', vector: [1, 2] }]),
        db.delete(name!, ['a']),
        db.setPayload(name!, ['a'], { x: 1 }),
        db.getPoints(name!, ['a']),
        db.search({ collection: name!, queries: [{ vector: [1, 2] }], limit: 1 }),
      ];
      for (const call of calls) await rejectsWith(call, 'NOT_FOUND', 'collection', new RegExp(name!));
    });

    test('payload values must be strings, finite numbers, booleans or lists of strings', async () => {
      const [name] = names('payload');
      await create({ name: name! });
      const bad = [{ nested: { a: 1 } }, { n: Number.POSITIVE_INFINITY }, { list: [1, 2] }, { none: null }];
      for (const payload of bad) {
        const field = `points[0].payload.${Object.keys(payload)[0]}`;
        await rejectsWith(
          db.upsert(name!, [{ id: 'p', vector: [1, 2], payload: payload as unknown as Payload }]),
          'INVALID_ARGUMENT',
          field,
        );
      }
    });

    test('a closed database answers UNAVAILABLE', async () => {
      const other = await target.open();
      await other.close();
      await other.close();
      await rejectsWith(other.listCollections(), 'UNAVAILABLE');
    });
  });
}
