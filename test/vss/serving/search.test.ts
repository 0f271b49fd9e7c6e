/**
 * Search as clients see it, on every vector database (test/support/vector-engines.ts): by embedding,
 * by candidate id and batched; every filter operator, global and per query, against the exact
 * filtered ranking; attributes; page walks and their tokens; the status codes of bad requests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { FilterOp, type Filter as WireFilter } from '../../../src/gen/vss/v1/vss.js';
import { compileFilters, type Filter, matchesAll } from '../../../src/platform/vectordb/index.js';
import { engineSkip, VECTOR_ENGINES } from '../../support/vector-engines.js';
import { exactSearch, seededRandom } from '../../support/vector-fixtures.js';
import { COUNT, DIMENSION, expectStatus, openWorld, type World } from './harness.js';

const OP_NAMES: Record<number, Filter['op']> = {
  [FilterOp.FILTER_OP_IN]: 'IN',
  [FilterOp.FILTER_OP_NOT_IN]: 'NOT_IN',
  [FilterOp.FILTER_OP_EXISTS]: 'EXISTS',
  [FilterOp.FILTER_OP_NOT_EXISTS]: 'NOT_EXISTS',
  [FilterOp.FILTER_OP_LT]: 'LT',
  [FilterOp.FILTER_OP_LTE]: 'LTE',
  [FilterOp.FILTER_OP_GT]: 'GT',
  [FilterOp.FILTER_OP_GTE]: 'GTE',
  [FilterOp.FILTER_OP_BETWEEN]: 'BETWEEN',
  [FilterOp.FILTER_OP_BETWEEN_INCLUSIVE]: 'BETWEEN_INCLUSIVE',
};

/** The exact ranking of the variant's space under the filters, self excluded. */
function exactIds(
  world: World,
  query: Float32Array,
  filters: WireFilter[],
  variant = 'organic',
  exclude?: string,
) {
  const compiled = compileFilters(
    [
      { field: `to_be_indexed_${variant}`, op: 'IN', values: ['true'] },
      ...filters.map((f) => ({ field: f.field, op: OP_NAMES[f.op]!, values: f.values })),
    ],
    'filters',
  );
  const { indices } = exactSearch(
    world.fixture.vectors,
    DIMENSION,
    query,
    COUNT,
    world.distance,
    (row) => world.fixture.ids[row] !== exclude && matchesAll(world.payloads[row]!, compiled),
  );
  return indices.map((row) => world.fixture.ids[row]!);
}

const vec = (v: Float32Array) => ({ values: Array.from(v) });

for (const engine of VECTOR_ENGINES) {
  describe(`vss serving: Search on ${engine}`, { skip: await engineSkip(engine) }, () => {
    let world: World;
    before(async () => {
      world = await openWorld({ engine });
    });
    after(async () => {
      await world?.close();
    });

    test('by embedding: the exact top page of the variant, default page size 10', async () => {
      const [q] = world.fixture.queries(1, 11);
      const { results } = await world.client.search({
        queries: [{ embedding: vec(q!), pageToken: '', filters: [] }],
      });
      assert.equal(results.length, 1);
      const ids = results[0]!.candidates.map((c) => c.id);
      assert.deepEqual(ids, exactIds(world, q!, []).slice(0, 10));
      assert.notEqual(results[0]!.nextPageToken, '');
      assert.equal(results[0]!.error, '');
    });

    test('by candidate id: searches with its embedding and never returns it', async () => {
      const { results } = await world.client.search({
        queries: [{ candidateId: 'p0', pageToken: '', filters: [] }],
        pageSize: 20,
      });
      const ids = results[0]!.candidates.map((c) => c.id);
      assert.ok(!ids.includes('p0'));
      assert.deepEqual(ids, exactIds(world, world.fixture.vector(0), [], 'organic', 'p0').slice(0, 20));
    });

    test('a batch answers each query in order; an unknown candidate fails alone', async () => {
      const [q] = world.fixture.queries(1, 12);
      const { results } = await world.client.search({
        queries: [
          { candidateId: 'nope', pageToken: '', filters: [] },
          { embedding: vec(q!), pageToken: '', filters: [] },
        ],
      });
      assert.match(results[0]!.error, /NOT_FOUND/);
      assert.equal(results[1]!.candidates.length, 10);
    });

    test('each filter operator, global and per query, matches the exact filtered ranking', async () => {
      const [q] = world.fixture.queries(1, 13);
      const cases: WireFilter[] = [
        { field: 'brand', op: FilterOp.FILTER_OP_IN, values: ['a', 'c'] },
        { field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values: ['a'] },
        { field: 'tag', op: FilterOp.FILTER_OP_EXISTS, values: [] },
        { field: 'tag', op: FilterOp.FILTER_OP_NOT_EXISTS, values: [] },
        { field: 'price', op: FilterOp.FILTER_OP_LT, values: ['10'] },
        { field: 'price', op: FilterOp.FILTER_OP_LTE, values: ['10'] },
        { field: 'price', op: FilterOp.FILTER_OP_GT, values: ['40'] },
        { field: 'price', op: FilterOp.FILTER_OP_GTE, values: ['40'] },
        { field: 'price', op: FilterOp.FILTER_OP_BETWEEN, values: ['10', '20'] },
        { field: 'price', op: FilterOp.FILTER_OP_BETWEEN_INCLUSIVE, values: ['10', '20'] },
      ];
      for (const filter of cases) {
        const global = await world.client.search({
          queries: [{ embedding: vec(q!), pageToken: '', filters: [] }],
          filters: [filter],
          pageSize: 15,
        });
        const expected = exactIds(world, q!, [filter]).slice(0, 15);
        assert.equal(expected.length, 15);
        assert.deepEqual(
          global.results[0]!.candidates.map((c) => c.id),
          expected,
          `global ${OP_NAMES[filter.op]}`,
        );
        const own = await world.client.search({
          queries: [{ embedding: vec(q!), pageToken: '', filters: [filter] }],
          filters: [{ field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values: ['b'] }],
          pageSize: 5,
        });
        const both = exactIds(world, q!, [
          { field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values: ['b'] },
          filter,
        ]);
        assert.deepEqual(
          own.results[0]!.candidates.map((c) => c.id),
          both.slice(0, 5),
          `query ${OP_NAMES[filter.op]}`,
        );
      }
    });

    test('the ad variant searches its own indexed space', async () => {
      const [q] = world.fixture.queries(1, 14);
      const { results } = await world.client.search({
        variant: 'ad',
        queries: [{ embedding: vec(q!), pageToken: '', filters: [] }],
        pageSize: 30,
      });
      const ids = results[0]!.candidates.map((c) => c.id);
      assert.deepEqual(ids, exactIds(world, q!, [], 'ad').slice(0, 30));
      for (const id of ids) assert.equal(Number(id.slice(1)) % 2, 0);
    });

    test('requested attributes come back, absent ones are left out', async () => {
      const { results } = await world.client.search({
        queries: [{ candidateId: 'p1', pageToken: '', filters: [] }],
        attributes: ['brand', 'price', 'tag'],
        pageSize: 40,
      });
      for (const c of results[0]!.candidates) {
        const i = Number(c.id.slice(1));
        const p = world.payloads[i]!;
        const expected: Record<string, string> = { brand: String(p.brand), price: String(p.price) };
        if (p.tag !== undefined) expected.tag = String(p.tag);
        assert.deepEqual(c.attributes, expected);
      }
    });

    test('pagination: 50 pages of random queries and filters neither overlap nor skip', async () => {
      const random = seededRandom(99);
      const filterChoices: WireFilter[][] = [
        [],
        [{ field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values: ['b'] }],
        [{ field: 'price', op: FilterOp.FILTER_OP_GTE, values: ['5'] }],
      ];
      for (let round = 0; round < 3; round++) {
        const byId = random() < 0.5;
        const row = Math.floor(random() * COUNT);
        const q = world.fixture.queries(1, 1000 + round)[0]!;
        const filters = filterChoices[Math.floor(random() * filterChoices.length)]!;
        const pageSize = 1 + Math.floor(random() * 4);
        const expected = exactIds(
          world,
          byId ? world.fixture.vector(row) : q,
          filters,
          'organic',
          byId ? `p${row}` : undefined,
        );
        const seen: string[] = [];
        let token = '';
        for (let page = 0; page < 50; page++) {
          const query = byId
            ? { candidateId: `p${row}`, pageToken: token, filters }
            : { embedding: vec(q), pageToken: token, filters };
          const { results } = await world.client.search({ queries: [query], pageSize });
          const result = results[0]!;
          assert.equal(result.error, '');
          seen.push(...result.candidates.map((c) => c.id));
          token = result.nextPageToken;
          if (token === '') break;
          assert.equal(result.candidates.length, pageSize);
        }
        assert.deepEqual(seen, expected.slice(0, seen.length), `round ${round}`);
        assert.equal(new Set(seen).size, seen.length);
      }
    });

    test('a walk to the end returns every candidate once and an empty last token', async () => {
      const filters: WireFilter[] = [{ field: 'price', op: FilterOp.FILTER_OP_LT, values: ['3'] }];
      const q = world.fixture.queries(1, 77)[0]!;
      const expected = exactIds(world, q, filters);
      const seen: string[] = [];
      let token = '';
      do {
        const { results } = await world.client.search({
          queries: [{ embedding: vec(q), pageToken: token, filters }],
          pageSize: 4,
        });
        seen.push(...results[0]!.candidates.map((c) => c.id));
        token = results[0]!.nextPageToken;
      } while (token !== '');
      assert.deepEqual(seen, expected);
    });

    test('a tampered or foreign page token is INVALID_ARGUMENT', async () => {
      const q = world.fixture.queries(1, 15)[0]!;
      const { results } = await world.client.search({
        queries: [{ embedding: vec(q), pageToken: '', filters: [] }],
      });
      const token = results[0]!.nextPageToken;
      const [payload, signature] = token.split('.');
      const body = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
      body.o = 0;
      const forged = `${Buffer.from(JSON.stringify(body)).toString('base64url')}.${signature}`;
      for (const bad of [forged, 'garbage', `${payload}.AAAA`]) {
        const err = await expectStatus(
          world.client.search({ queries: [{ embedding: vec(q), pageToken: bad, filters: [] }] }),
          status.INVALID_ARGUMENT,
          'queries[0].page_token',
        );
        assert.match(err.details, /bad page_token/);
      }
      // A genuine token used with other filters.
      await expectStatus(
        world.client.search({
          queries: [
            {
              embedding: vec(q),
              pageToken: token,
              filters: [{ field: 'tag', op: FilterOp.FILTER_OP_EXISTS, values: [] }],
            },
          ],
        }),
        status.INVALID_ARGUMENT,
        'queries[0].page_token',
      );
    });

    test('malformed requests are INVALID_ARGUMENT naming the field', async () => {
      const q = vec(world.fixture.queries(1, 16)[0]!);
      const one = (extra: object = {}) => ({ embedding: q, pageToken: '', filters: [], ...extra });
      const cases: [Parameters<World['client']['search']>[0], string][] = [
        [{ queries: [] }, 'queries'],
        [{ queries: [one()], pageSize: 1001 }, 'page_size'],
        [{ queries: [one()], pageSize: -1 }, 'page_size'],
        [
          { queries: [{ embedding: { values: [1, 2] }, pageToken: '', filters: [] }] },
          'queries[0].embedding.values',
        ],
        [{ queries: [{ pageToken: '', filters: [] }] }, 'queries[0]'],
        [
          { queries: [one()], filters: [{ field: 'colour', op: FilterOp.FILTER_OP_IN, values: ['x'] }] },
          'filters[0].field',
        ],
        [
          {
            queries: [
              one({
                filters: [
                  { field: 'brand', op: FilterOp.FILTER_OP_IN, values: ['a'] },
                  { field: 'nope', op: FilterOp.FILTER_OP_EXISTS, values: [] },
                ],
              }),
            ],
          },
          'queries[0].filters[1].field',
        ],
        [
          { queries: [one()], filters: [{ field: 'brand', op: FilterOp.FILTER_OP_UNSPECIFIED, values: [] }] },
          'filters[0].op',
        ],
        [
          { queries: [one()], filters: [{ field: 'price', op: FilterOp.FILTER_OP_LT, values: ['x'] }] },
          'filters[0].values[0]',
        ],
        [{ queries: [one()], attributes: ['Bad Name'] }, 'attributes[0]'],
        [{ queries: [one()], entity: '' }, 'entity'],
      ];
      for (const [request, field] of cases) {
        const err = await expectStatus(world.client.search(request), status.INVALID_ARGUMENT, field);
        assert.ok(err.details.includes(field.split('[')[0]!), err.details);
      }
    });

    test('unknown entity, model or variant is NOT_FOUND; a variant with no ready version FAILED_PRECONDITION', async () => {
      const queries = [{ candidateId: 'p0', pageToken: '', filters: [] }];
      await expectStatus(world.client.search({ queries, entity: 'nobody' }), status.NOT_FOUND, 'entity');
      await expectStatus(
        world.client.search({ queries, modelName: 'nomodel' }),
        status.NOT_FOUND,
        'model_name',
      );
      await expectStatus(world.client.search({ queries, variant: 'novariant' }), status.NOT_FOUND, 'variant');
      await world.store.variants.create({
        entity: 'catalog',
        modelName: 'clip',
        variant: 'commerce',
        vssFilter: {},
        vectorDbType: 'EMBEDDED',
        vectorDbConfig: {},
        jobFrequency: 'FREQ_1D',
      });
      await expectStatus(
        world.client.search({ queries, variant: 'commerce' }),
        status.FAILED_PRECONDITION,
        'variant',
      );
    });
  });
}
