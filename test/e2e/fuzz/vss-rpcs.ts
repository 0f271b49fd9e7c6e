/**
 * vss serving's three RPCs as fuzz targets, over the harness world (test/vss/serving/harness.ts:
 * entity `catalog`, model `clip` of dimension 8, variants `organic` and `ad`, attributes brand,
 * price, tag): valid requests, structurally wrong variants with the status and field each must get,
 * and the known-good requests checked between batches.
 */
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import {
  type Filter,
  FilterOp,
  GetEmbeddingsRequest,
  type Query,
  ScoreCandidatesRequest,
  SearchRequest,
} from '../../../src/gen/vss/v1/vss.js';
import { SEARCH_LIMITS } from '../../../src/vss/serving/request-limits.js';
import type { VectorFixture } from '../../support/vector-fixtures.js';
import { Client as VssClient } from '../../vss/serving/harness.js';
import { concat, INVALID_UTF8, lengthDelimited } from './byte-mutations.js';
import { type Expectation, type FuzzCase, type FuzzRpc, hostileString, sized } from './fuzz-runner.js';
import type { Random } from './random.js';

const ENTITY = 'catalog';
const MODEL = 'clip';

const FIELDS = [
  'entity',
  'model_name',
  'variant',
  'queries',
  'page_size',
  'attributes',
  'filters',
  'candidate_id',
  'embedding',
  'page_token',
  'candidate_ids',
  'values',
];

const IA = (field?: RegExp): Expectation => ({ codes: [status.INVALID_ARGUMENT], field });
const ONLY = (...codes: status[]): Expectation => ({ codes });

/** What a fuzzed vss request is built from: the world's vectors and page tokens of real queries. */
export interface VssWorldView {
  fixture: VectorFixture;
  /** `next_page_token`s from known-good searches (for tokens sent with another query). */
  tokens: string[];
}

function vector(r: Random, dimension: number): number[] {
  return Array.from({ length: dimension }, () => r.next() * 2 - 1);
}

function validFilter(r: Random): Filter {
  return r.pick<Filter>([
    { field: 'brand', op: FilterOp.FILTER_OP_IN, values: ['a', 'b'] },
    { field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values: ['c'] },
    { field: 'price', op: FilterOp.FILTER_OP_LT, values: ['25'] },
    { field: 'price', op: FilterOp.FILTER_OP_BETWEEN_INCLUSIVE, values: ['5', '40'] },
    { field: 'tag', op: FilterOp.FILTER_OP_EXISTS, values: [] },
  ]);
}

function validQuery(r: Random, world: VssWorldView): Query {
  const byId = r.chance(0.4);
  return {
    candidateId: byId ? world.fixture.ids[r.int(world.fixture.ids.length)] : undefined,
    embedding: byId ? undefined : { values: vector(r, world.fixture.dimension) },
    pageToken: '',
    filters: r.chance(0.3) ? [validFilter(r)] : [],
  };
}

function validSearch(r: Random, world: VssWorldView): SearchRequest {
  return {
    entity: ENTITY,
    modelName: MODEL,
    variant: r.pick(['organic', 'ad']),
    queries: Array.from({ length: 1 + r.int(3) }, () => validQuery(r, world)),
    pageSize: r.int(30),
    searchWidth: r.chance(0.2) ? 1 + r.int(512) : 0,
    attributes: r.chance(0.5) ? ['brand', 'price'] : [],
    filters: r.chance(0.3) ? [validFilter(r)] : [],
  };
}

type Mutation<T> = (
  request: T,
  r: Random,
  world: VssWorldView,
) => { summary: string; expect: Expectation; raw?: Uint8Array };

/** Mutations of the names every vss request starts with (fields 1 entity, 2 model_name). */
function nameMutations<T extends { entity: string; modelName: string }>(): Mutation<T>[] {
  return [
    (q, r) => {
      const which = r.chance(0.5) ? 'entity' : 'model_name';
      if (which === 'entity') q.entity = '';
      else q.modelName = '';
      return { summary: `empty ${which}`, expect: IA(new RegExp(`^${which}$`)) };
    },
    (q, r) => {
      const name = r.pick([
        'nope',
        'catalog\u0000',
        'CATALOG',
        sized('e', 100_000),
        'ünïcode',
        '../catalog',
        hostileString(r) || 'x',
      ]);
      if (r.chance(0.5)) q.entity = name;
      else q.modelName = name;
      // A name outside the allowed alphabet may be refused as malformed rather than looked up.
      return {
        summary: 'unknown entity or model',
        expect: { codes: [status.NOT_FOUND, status.INVALID_ARGUMENT], field: /^(entity|model_name)$/ },
      };
    },
    (_q, r) => ({
      summary: 'invalid UTF-8 entity or model',
      expect: ONLY(status.INVALID_ARGUMENT, status.NOT_FOUND),
      raw: lengthDelimited(1 + r.int(2), r.pick(INVALID_UTF8)),
    }),
  ];
}

const SEARCH: Mutation<SearchRequest>[] = [
  ...nameMutations<SearchRequest>(),
  (q, r) => {
    q.variant = r.pick(['', 'nope', 'organic\u0000', sized('v', 10_000)]);
    return {
      summary: 'empty or unknown variant',
      expect: { codes: [status.INVALID_ARGUMENT, status.NOT_FOUND], field: /^variant$/ },
    };
  },
  (q, r) => {
    q.pageSize = r.pick([-1, -(2 ** 31), SEARCH_LIMITS.pageSize + 1, 2 ** 31 - 1, 100_000]);
    return { summary: `page_size ${q.pageSize}`, expect: IA(/^page_size$/) };
  },
  (q, r) => {
    q.searchWidth = r.pick([-1, -(2 ** 31), SEARCH_LIMITS.searchWidth + 1, 2 ** 31 - 1]);
    return { summary: `search_width ${q.searchWidth}`, expect: IA(/^search_width$/) };
  },
  (q) => {
    q.queries = [];
    return { summary: 'no queries', expect: IA(/^queries$/) };
  },
  (q, r, w) => {
    q.queries = Array.from({ length: SEARCH_LIMITS.queries + 1 }, () => validQuery(r, w));
    return { summary: 'queries over the limit', expect: IA(/^queries$/) };
  },
  (q, r) => {
    const i = r.int(q.queries.length);
    q.queries[i] = { candidateId: undefined, embedding: undefined, pageToken: '', filters: [] };
    return { summary: 'query with neither id nor embedding', expect: IA(new RegExp(`^queries\\[${i}\\]`)) };
  },
  (q, r, w) => {
    const i = r.int(q.queries.length);
    const n = r.pick([0, 1, w.fixture.dimension - 1, w.fixture.dimension + 1, 10_000]);
    q.queries[i] = { ...q.queries[i]!, candidateId: undefined, embedding: { values: vector(r, n) } };
    return {
      summary: `embedding of ${n} values`,
      expect: IA(new RegExp(`^queries\\[${i}\\]\\.embedding\\.values$`)),
    };
  },
  (q, r, w) => {
    const i = r.int(q.queries.length);
    const values = vector(r, w.fixture.dimension);
    values[r.int(values.length)] = r.pick([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
    q.queries[i] = { ...q.queries[i]!, candidateId: undefined, embedding: { values } };
    return {
      summary: 'non-finite embedding value',
      expect: IA(new RegExp(`^queries\\[${i}\\]\\.embedding\\.values`)),
    };
  },
  (q, r, w) => {
    const i = r.int(q.queries.length);
    // All zeros: no direction for COSINE.
    q.queries[i] = {
      ...q.queries[i]!,
      candidateId: undefined,
      embedding: { values: new Array<number>(w.fixture.dimension).fill(0) },
    };
    return { summary: 'zero embedding', expect: ONLY(status.OK, status.INVALID_ARGUMENT) };
  },
  (q, r) => {
    const i = r.int(q.queries.length);
    q.queries[i] = {
      ...q.queries[i]!,
      candidateId: r.pick(['p999999', 'nope', '\u0000', 'p1\u0000', 'ünïcode']),
      embedding: undefined,
    };
    // Documented per query: the result carries a NOT_FOUND error, the call succeeds.
    return { summary: 'unknown candidate id', expect: ONLY(status.OK) };
  },
  (q, r) => {
    const i = r.int(q.queries.length);
    q.queries[i] = {
      ...q.queries[i]!,
      candidateId: sized('p', r.pick([1000, 100_000])),
      embedding: undefined,
    };
    return {
      summary: 'huge candidate id',
      expect: { codes: [status.OK, status.INVALID_ARGUMENT], field: /^queries\[\d+\]\.candidate_id$/ },
    };
  },
  (q, r) => {
    const global = r.chance(0.5);
    const i = r.int(q.queries.length);
    const bad: Filter = { field: 'brand', op: r.pick([0, 11, 99, -1]) as FilterOp, values: ['a'] };
    if (global) q.filters.push(bad);
    else q.queries[i]!.filters.push(bad);
    return {
      summary: `filter op ${bad.op}`,
      expect: IA(
        global ? /^filters\[\d+\]\.op$/ : new RegExp(`^queries\\[${i}\\]\\.filters\\[\\d+\\]\\.op$`),
      ),
    };
  },
  (q, r) => {
    const global = r.chance(0.5);
    const i = r.int(q.queries.length);
    const bad: Filter = {
      field: r.pick(['nope', '', 'brand\u0000', 'id', 'Brand', sized('f', 5000), 'to_be_indexed_nope']),
      op: FilterOp.FILTER_OP_IN,
      values: ['a'],
    };
    if (global) q.filters.push(bad);
    else q.queries[i]!.filters.push(bad);
    return {
      summary: 'unknown filter field',
      expect: IA(
        global ? /^filters\[\d+\]\.field$/ : new RegExp(`^queries\\[${i}\\]\\.filters\\[\\d+\\]\\.field$`),
      ),
    };
  },
  (q, r) => {
    const bad = r.pick<Filter>([
      { field: 'price', op: FilterOp.FILTER_OP_LT, values: ['cheap'] },
      { field: 'price', op: FilterOp.FILTER_OP_LT, values: [] },
      { field: 'price', op: FilterOp.FILTER_OP_GTE, values: ['1', '2'] },
      { field: 'price', op: FilterOp.FILTER_OP_BETWEEN, values: ['5'] },
      { field: 'price', op: FilterOp.FILTER_OP_BETWEEN_INCLUSIVE, values: ['40', '5'] },
      { field: 'price', op: FilterOp.FILTER_OP_BETWEEN, values: ['NaN', '5'] },
      { field: 'brand', op: FilterOp.FILTER_OP_IN, values: [] },
    ]);
    q.filters.push(bad);
    return {
      summary: `filter values ${FilterOp[bad.op]} ${JSON.stringify(bad.values)}`,
      expect: IA(/^filters\[\d+\]/),
    };
  },
  (q, r) => {
    const count = r.pick([1, 1000, 20_000]);
    const values = Array.from({ length: count }, (_, i) =>
      count === 1 ? hostileString(r) : `${r.pick(['a', '\u0000', 'ü', ''])}${i}`,
    );
    q.filters.push({ field: 'brand', op: FilterOp.FILTER_OP_IN, values });
    return { summary: 'many or hostile filter values', expect: ONLY(status.OK, status.INVALID_ARGUMENT) };
  },
  (q, r) => {
    const i = r.int(3);
    q.attributes = ['brand', 'price', 'tag'];
    q.attributes[i] = r.pick(['', 'Brand', 'a b', '\u0000', 'id', sized('a', 100), '1x']);
    return { summary: 'malformed attribute name', expect: IA(new RegExp(`^attributes\\[${i}\\]$`)) };
  },
  (q, r) => {
    q.attributes = r.pick([['nope'], ['brand', 'brand'], ['to_be_indexed_organic']]);
    return { summary: 'unknown or duplicate attribute', expect: ONLY(status.OK, status.INVALID_ARGUMENT) };
  },
  (q, r, w) => {
    const i = r.int(q.queries.length);
    const token = r.pick([
      'garbage',
      '.',
      'a.b',
      sized('x', 100_000),
      '\u0000',
      'ünïcode.tøken',
      w.tokens.length > 0 ? `${w.tokens[0]!.slice(0, -2)}AA` : 'eyJ9.x',
      w.tokens.length > 0 ? w.tokens[0]!.split('.').reverse().join('.') : 'x.eyJ9',
    ]);
    q.queries[i]!.pageToken = token;
    return { summary: 'bad page token', expect: IA(new RegExp(`^queries\\[${i}\\]\\.page_token$`)) };
  },
  (q, r, w) => {
    if (w.tokens.length === 0) return { summary: 'valid request (no token yet)', expect: ONLY(status.OK) };
    const i = r.int(q.queries.length);
    // A real token, sent with another query or other filters.
    q.queries[i]!.pageToken = r.pick(w.tokens);
    q.queries[i]!.filters.push({ field: 'brand', op: FilterOp.FILTER_OP_IN, values: ['z'] });
    return {
      summary: 'page token of another query',
      expect: IA(new RegExp(`^queries\\[${i}\\]\\.page_token$`)),
    };
  },
];

function validIds(r: Random, world: VssWorldView): string[] {
  return Array.from({ length: 1 + r.int(20) }, () =>
    r.chance(0.9) ? world.fixture.ids[r.int(world.fixture.ids.length)]! : `missing${r.int(100)}`,
  );
}

function idMutations<T extends { candidateIds: string[] }>(): Mutation<T>[] {
  return [
    (q) => {
      q.candidateIds = [];
      return { summary: 'no candidate ids', expect: IA(/^candidate_ids$/) };
    },
    (q, r, w) => {
      q.candidateIds = Array.from(
        { length: SEARCH_LIMITS.candidateIds + 1 },
        () => w.fixture.ids[r.int(w.fixture.ids.length)]!,
      );
      return { summary: 'candidate ids over the limit', expect: IA(/^candidate_ids$/) };
    },
    (q, r) => {
      const i = r.int(q.candidateIds.length);
      q.candidateIds[i] = '';
      return { summary: 'empty candidate id', expect: IA(new RegExp(`^candidate_ids\\[${i}\\]$`)) };
    },
    (q, r) => {
      const i = r.int(q.candidateIds.length);
      q.candidateIds[i] = r.pick(['\u0000', 'p1\u0000', 'ünïcode', sized('p', 100_000), 'nope', '%s']);
      return {
        summary: 'hostile candidate id',
        expect: { codes: [status.OK, status.INVALID_ARGUMENT], field: /^candidate_ids\[\d+\]$/ },
      };
    },
    (q) => {
      q.candidateIds = [...q.candidateIds, ...q.candidateIds];
      return { summary: 'duplicate candidate ids', expect: ONLY(status.OK) };
    },
    (_q, r) => ({
      summary: 'invalid UTF-8 candidate id',
      expect: ONLY(status.OK, status.INVALID_ARGUMENT),
      raw: lengthDelimited(r.pick([3, 4]), r.pick(INVALID_UTF8)),
    }),
  ];
}

const GET_EMBEDDINGS: Mutation<GetEmbeddingsRequest>[] = [
  ...nameMutations<GetEmbeddingsRequest>(),
  ...idMutations<GetEmbeddingsRequest>(),
];

const SCORE: Mutation<ScoreCandidatesRequest>[] = [
  ...nameMutations<ScoreCandidatesRequest>(),
  ...idMutations<ScoreCandidatesRequest>().filter((_, i) => i !== 5),
  (q, r, w) => {
    const n = r.pick([0, 1, w.fixture.dimension - 1, w.fixture.dimension + 1, 10_000]);
    q.embedding = r.chance(0.2) ? undefined : { values: vector(r, n) };
    return {
      summary: `embedding of ${q.embedding?.values.length ?? 'no'} values`,
      expect: IA(/^embedding\.values$/),
    };
  },
  (q, r, w) => {
    const values = vector(r, w.fixture.dimension);
    values[r.int(values.length)] = r.pick([Number.NaN, Number.POSITIVE_INFINITY]);
    q.embedding = { values };
    return { summary: 'non-finite embedding value', expect: IA(/^embedding\.values/) };
  },
  (_q, r) => ({
    summary: 'invalid UTF-8 candidate id',
    expect: ONLY(status.OK, status.INVALID_ARGUMENT),
    raw: lengthDelimited(4, r.pick(INVALID_UTF8)),
  }),
];

/** Draws a mutation; the last `bigCount` (large messages) only rarely. */
function draw<T>(pool: Mutation<T>[], r: Random, isBig: (m: Mutation<T>) => boolean): Mutation<T> {
  const m = r.pick(pool);
  return isBig(m) && !r.chance(0.1) ? draw(pool, r, isBig) : m;
}

export function vssRpcs(world: VssWorldView): FuzzRpc[] {
  const byteLevel = [status.OK, status.INVALID_ARGUMENT, status.NOT_FOUND, status.FAILED_PRECONDITION];
  const bigSearch = new Set([SEARCH[6]]);
  const bigIds = new Set([GET_EMBEDDINGS[4], SCORE[4]]);
  const rpc = <T>(
    method: string,
    valid: (r: Random) => T,
    encode: (t: T) => Uint8Array,
    pool: Mutation<T>[],
    big: Set<Mutation<T> | undefined>,
  ): FuzzRpc => ({
    service: 'vss',
    path: `/vss.v1.SimilaritySearch/${method}`,
    fieldNames: FIELDS,
    valid: (r) => encode(valid(r)),
    structural: (r): FuzzCase => {
      const q = valid(r);
      const { summary, expect, raw } = draw(pool, r, (m) => big.has(m))(q, r, world);
      return { bytes: raw ? concat(encode(q), raw) : encode(q), summary, expect };
    },
    byteLevel,
  });
  return [
    rpc(
      'Search',
      (r) => validSearch(r, world),
      (q) => SearchRequest.encode(q).finish(),
      SEARCH,
      bigSearch,
    ),
    rpc(
      'GetEmbeddings',
      (r): GetEmbeddingsRequest => ({ entity: ENTITY, modelName: MODEL, candidateIds: validIds(r, world) }),
      (q) => GetEmbeddingsRequest.encode(q).finish(),
      GET_EMBEDDINGS,
      bigIds,
    ),
    rpc(
      'ScoreCandidates',
      (r): ScoreCandidatesRequest => ({
        entity: ENTITY,
        modelName: MODEL,
        embedding: { values: vector(r, world.fixture.dimension) },
        candidateIds: validIds(r, world),
      }),
      (q) => ScoreCandidatesRequest.encode(q).finish(),
      SCORE,
      bigIds,
    ),
  ];
}

/** The known-good requests: a search by a point's own vector finds it first; its embedding and its score against itself come back. */
export function vssKnownGood(
  address: string,
  world: VssWorldView,
): { check(): Promise<void>; close(): void } {
  const client = new VssClient(address);
  const { fixture } = world;
  const own = (i: number) => Array.from(fixture.vector(i));
  return {
    check: async () => {
      const search = await client.search(
        {
          variant: 'organic',
          queries: [{ embedding: { values: own(0) }, pageToken: '', filters: [] }],
          pageSize: 5,
        },
        10_000,
      );
      const result = search.results[0]!;
      assert.equal(result.error, '', 'known-good search error');
      assert.equal(result.candidates.length, 5, 'known-good search page size');
      assert.equal(result.candidates[0]!.id, fixture.ids[0], 'known-good search: the point itself first');
      if (result.nextPageToken && world.tokens.length < 4) world.tokens.push(result.nextPageToken);
      const { embeddings } = await client.getEmbeddings({
        entity: ENTITY,
        modelName: MODEL,
        candidateIds: [fixture.ids[1]!],
      });
      assert.equal(embeddings[0]!.found, true, 'known-good embedding found');
      embeddings[0]!.embedding!.values.forEach((v, d) => {
        assert.ok(Math.abs(v - own(1)[d]!) < 1e-6, 'known-good embedding values');
      });
      const { scores } = await client.scoreCandidates({
        entity: ENTITY,
        modelName: MODEL,
        embedding: { values: own(2) },
        candidateIds: [fixture.ids[2]!],
      });
      assert.equal(scores[0]!.found, true, 'known-good score found');
      assert.ok(
        Math.abs(scores[0]!.score - 1) < 1e-4,
        `known-good cosine of a point with itself: ${scores[0]!.score}`,
      );
    },
    close: () => client.close(),
  };
}
