/**
 * Search filters on every attribute a point carries, with every operator, through vss serving and
 * consumers running together on embedded defaults (as `lattice vss` runs them): embedding events
 * carry `brand` (text), `tag` (on some) and `price` (a number on even ids, numeric text on odd ones,
 * as a CSV-born training file or a producer sends it), and a real-time label `stock` arrives as text,
 * as every real-time value does. Each filter answers exactly the ids its predicate admits; numbers
 * compare as numbers whatever their source; a filtered page holds exactly `page_size` whenever that
 * many match; a field no point carries is INVALID_ARGUMENT naming it. The scenario runs on each vector
 * database from a test file of its own (vss-filters.test.ts, vss-filters-pgvector.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type Filter, FilterOp } from '../../src/gen/vss/v1/vss.js';
import type { VectorDbType } from '../../src/vss/store/index.js';
import { eventually, uniqueName } from '../support/servers.js';
import {
  type IngestModel,
  realtimeEventJson,
  registerIngestModel,
  seededVector,
  serveVersion,
} from '../support/vss-ingest-catalog.js';
import { ingestEmbeddings, type VssStack } from '../support/vss-stack.js';
import { expectStatus } from '../vss/serving/harness.js';

const DIMENSION = 8;
const COUNT = 40;
const ids = Array.from({ length: COUNT }, (_, i) => i);
const brand = (i: number) => (i % 2 === 0 ? 'acme' : 'globex');
const price = (i: number) => (i % 2 === 0 ? i : i + 0.5);
const stock = (i: number) => COUNT - i;
const encoder = new TextEncoder();

/** The scenario on one vector database: `open` starts the stack, `vectorDbType` is its variants'. */
export function filtersScenario(
  name: string,
  open: () => Promise<VssStack>,
  vectorDbType: VectorDbType,
): void {
  describe(`vss Search filters: every attribute, every operator, as its type (${name})`, () => {
    let stack: VssStack;
    let model: IngestModel;

    before(async () => {
      stack = await open();
      model = await registerIngestModel(stack.store, {
        entity: uniqueName('flt').replace(/[^a-z0-9_]/g, '_'),
        dimension: DIMENSION,
        variants: { organic: {} },
        cachesOff: true,
        vectorDbType,
      });
      await ingestEmbeddings(
        stack,
        model,
        ids.map((i) => ({
          id: `c${i}`,
          vector: seededVector(i, DIMENSION),
          payload: {
            brand: brand(i),
            // Numeric text on odd ids: a number by the documented rule.
            price: i % 2 === 0 ? price(i) : String(price(i)),
            ...(i % 3 === 0 ? { tag: 'hot' } : {}),
          },
        })),
      );
      await serveVersion(stack.store, model, ['organic'], 1);
      await eventually(
        async () => (await matching([]).catch(() => [])).length === COUNT,
        30_000,
        'every point served',
      );
      await stack.queue.publish(
        stack.consumers.realtimeTopic,
        encoder.encode(
          realtimeEventJson(
            model,
            1000,
            ids.map((i) => [`c${i}`, 'stock', String(stock(i))] as const),
          ),
        ),
        { key: 'c0' },
      );
      await eventually(
        async () =>
          // Until the label's first value lands, no point carries it: an unknown field.
          (await matching([filter('stock', FilterOp.FILTER_OP_EXISTS)]).catch(() => [])).length === COUNT,
        30_000,
        'the real-time label on every point',
      );
    });
    after(async () => {
      await stack?.close();
    });

    function filter(field: string, op: FilterOp, ...values: string[]): Filter {
      return { field, op, values };
    }

    async function search(filters: Filter[], pageSize: number, ownFilters: Filter[] = []) {
      const response = await stack.client.search({
        entity: model.entity,
        modelName: model.modelName,
        variant: 'organic',
        queries: [{ embedding: { values: seededVector(3, DIMENSION) }, filters: ownFilters, pageToken: '' }],
        filters,
        pageSize,
        attributes: ['brand', 'price', 'stock', 'tag'],
      });
      const result = response.results[0]!;
      assert.equal(result.error, '', result.error);
      return result.candidates;
    }

    /** Ids the filters admit, in id order. */
    async function matching(filters: Filter[]): Promise<number[]> {
      return (await search(filters, 100)).map((c) => Number(c.id.slice(1))).sort((a, b) => a - b);
    }

    test('each operator on a training-data attribute, a numeric-text attribute and a real-time label', async () => {
      const { FILTER_OP_IN: IN, FILTER_OP_NOT_IN: NOT_IN, FILTER_OP_EXISTS: EXISTS } = FilterOp;
      const { FILTER_OP_NOT_EXISTS: NOT_EXISTS, FILTER_OP_LT: LT, FILTER_OP_LTE: LTE } = FilterOp;
      const { FILTER_OP_GT: GT, FILTER_OP_GTE: GTE, FILTER_OP_BETWEEN: BETWEEN } = FilterOp;
      const { FILTER_OP_BETWEEN_INCLUSIVE: BETWEEN_INCLUSIVE } = FilterOp;
      const cases: [Filter, (i: number) => boolean][] = [
        [filter('brand', IN, 'acme'), (i) => brand(i) === 'acme'],
        [filter('brand', NOT_IN, 'acme'), (i) => brand(i) !== 'acme'],
        [filter('tag', EXISTS), (i) => i % 3 === 0],
        [filter('tag', NOT_EXISTS), (i) => i % 3 !== 0],
        [filter('price', LT, '20'), (i) => price(i) < 20],
        [filter('price', LTE, '20'), (i) => price(i) <= 20],
        [filter('price', GT, '20'), (i) => price(i) > 20],
        [filter('price', GTE, '21.5'), (i) => price(i) >= 21.5],
        [filter('price', BETWEEN, '10', '20.5'), (i) => price(i) > 10 && price(i) < 20.5],
        [filter('price', BETWEEN_INCLUSIVE, '10', '20.5'), (i) => price(i) >= 10 && price(i) <= 20.5],
        [filter('price', IN, '7.5', '8'), (i) => i === 7 || i === 8],
        [filter('price', NOT_IN, '7.50'), (i) => i !== 7],
        [filter('stock', LT, '10'), (i) => stock(i) < 10],
        [filter('stock', GTE, '35'), (i) => stock(i) >= 35],
        [filter('stock', BETWEEN_INCLUSIVE, '5', '8'), (i) => stock(i) >= 5 && stock(i) <= 8],
        [filter('stock', IN, '12'), (i) => stock(i) === 12],
        [filter('to_be_indexed_organic', IN, 'true'), () => true],
      ];
      for (const [f, admits] of cases) {
        const label = `${f.field} ${FilterOp[f.op]} ${f.values.join(',')}`;
        assert.deepEqual(await matching([f]), ids.filter(admits), label);
      }
      // Together (AND), shared and per query.
      const both = await search([filter('brand', IN, 'globex')], 100, [filter('stock', LT, '20')]);
      assert.deepEqual(
        both.map((c) => Number(c.id.slice(1))).sort((a, b) => a - b),
        ids.filter((i) => brand(i) === 'globex' && stock(i) < 20),
      );
      for (const c of both) {
        assert.equal(c.attributes.brand, 'globex');
        assert.ok(Number(c.attributes.stock) < 20, JSON.stringify(c.attributes));
      }
    });

    test('a filtered page holds exactly page_size whenever that many match', async () => {
      for (const pageSize of [1, 3, 5, 7]) {
        const page = await search([filter('brand', FilterOp.FILTER_OP_IN, 'acme')], pageSize, [
          filter('price', FilterOp.FILTER_OP_LT, '30'),
        ]);
        assert.equal(page.length, pageSize);
        for (const c of page) assert.equal(c.attributes.brand, 'acme');
      }
      // 15 match: a larger page holds the 15.
      const all = await search([filter('brand', FilterOp.FILTER_OP_IN, 'acme')], 50, [
        filter('price', FilterOp.FILTER_OP_LT, '30'),
      ]);
      assert.equal(all.length, 15);
    });

    test('a field no point carries is INVALID_ARGUMENT naming it', async () => {
      const request = (filters: Filter[], own: Filter[] = []) =>
        stack.client.search({
          entity: model.entity,
          modelName: model.modelName,
          variant: 'organic',
          queries: [{ embedding: { values: seededVector(3, DIMENSION) }, filters: own, pageToken: '' }],
          filters,
        });
      const err = await expectStatus(
        request([filter('colour', FilterOp.FILTER_OP_IN, 'red')]),
        status.INVALID_ARGUMENT,
        'filters[0].field',
      );
      assert.match(err.details, /unknown filter field "colour"/);
      await expectStatus(
        request(
          [],
          [filter('brand', FilterOp.FILTER_OP_IN, 'acme'), filter('Weight', FilterOp.FILTER_OP_NOT_EXISTS)],
        ),
        status.INVALID_ARGUMENT,
        'queries[0].filters[1].field',
      );
    });
  });
}
