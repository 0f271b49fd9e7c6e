/**
 * Issue 13 (robustness) on vss serving: every request limit is INVALID_ARGUMENT naming the limit and
 * the field, names and ids are checked at the boundary (NUL, length, UTF-8), a GetEmbeddings answer
 * fits one message, messages quote at most 64 characters of the client's text, and a Search stops its
 * work when its call is cancelled and shares the event loop while it runs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientUnaryCall, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { FilterOp, GetEmbeddingsRequest, type Query, SearchRequest } from '../../../src/gen/vss/v1/vss.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import type { SearchRequest as PortSearch, VectorDb } from '../../../src/platform/vectordb/index.js';
import { PageTokens } from '../../../src/vss/serving/index.js';
import { digest } from '../../../src/vss/serving/page-token.js';
import { DIMENSION, ENTITY, expectStatus, MODEL, openWorld, type World } from './harness.js';

const vectorQuery = (world: World, i: number, pageToken = ''): Query => ({
  embedding: { values: Array.from(world.fixture.vector(i % world.fixture.ids.length)) },
  pageToken,
  filters: [],
});

const statusOf = async (work: Promise<unknown>): Promise<ServiceError> => {
  try {
    await work;
  } catch (err) {
    return err as ServiceError;
  }
  assert.fail('the call succeeded');
};

describe('vss serving request limits (issue 13)', () => {
  let world: World;
  before(async () => {
    world = await openWorld();
  });
  after(async () => {
    await world?.close();
  });

  test('filter values past max_filter_values (the request filters count once per query) are INVALID_ARGUMENT naming filters', async () => {
    const values = Array.from({ length: 60_000 }, (_, i) => `brand-${i}`);
    const err = await expectStatus(
      world.client.search({
        queries: [vectorQuery(world, 0), vectorQuery(world, 1)],
        filters: [{ field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values }],
      }),
      status.INVALID_ARGUMENT,
      'filters',
    );
    assert.match(err.details, /120000 filter values .* max_filter_values \(100000\)/);
    // One query with the same filter is within the limit, and filtered.
    const ok = await world.client.search({
      queries: [vectorQuery(world, 0)],
      filters: [{ field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values: [...values, 'a'] }],
      attributes: ['brand'],
    });
    assert.ok(ok.results[0]!.candidates.length > 0);
    for (const c of ok.results[0]!.candidates) assert.notEqual(c.attributes.brand, 'a');
  });

  test("the issue's request (256 queries, NOT_IN of 500,000 values) is refused before it is decoded", async () => {
    const values = Array.from({ length: 500_000 }, (_, i) => `${i}`);
    const err = await expectStatus(
      world.client.search({
        queries: Array.from({ length: 256 }, (_, i) => vectorQuery(world, i)),
        filters: [{ field: 'brand', op: FilterOp.FILTER_OP_NOT_IN, values }],
      }),
      status.INVALID_ARGUMENT,
      'filters',
    );
    assert.match(err.details, /max_filter_values/);
  });

  test('queries × page_size past max_search_depth is INVALID_ARGUMENT naming queries', async () => {
    const queries = Array.from({ length: 256 }, (_, i) => vectorQuery(world, i));
    const err = await expectStatus(
      world.client.search({ queries, pageSize: 1000 }),
      status.INVALID_ARGUMENT,
      'queries',
    );
    assert.match(err.details, /256000 candidates .* max_search_depth \(12800\)/);
    const atLimit = await world.client.search({ queries: queries.slice(0, 12), pageSize: 1000 });
    assert.equal(atLimit.results.length, 12);
  });

  test('page depth counts: three queries whose tokens are 4,900 deep pass max_search_depth', async () => {
    const tokens = new PageTokens('test-secret');
    const queries = Array.from({ length: 3 }, (_, i) => {
      const vector = world.fixture.vector(i);
      const token = tokens.encode({
        query: digest(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength)),
        filters: digest('[]'),
        readVersion: 1,
        offset: 4900,
        lastScore: 0,
        lastId: world.fixture.ids[0]!,
      });
      return vectorQuery(world, i, token);
    });
    const err = await expectStatus(
      world.client.search({ queries, pageSize: 100 }),
      status.INVALID_ARGUMENT,
      'queries',
    );
    assert.match(err.details, /15000 candidates .* max_search_depth/);
    const two = await world.client.search({ queries: queries.slice(0, 2), pageSize: 100 });
    assert.equal(two.results.length, 2);
  });

  test('a Search stops calling the vector DB once its call is cancelled', async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived!: () => void;
    const first = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const metrics = new Metrics();
    const gated = await openWorld({
      server: { metrics },
      wrap: (db) =>
        new Proxy(db, {
          get(target, key, receiver) {
            if (key !== 'search') return Reflect.get(target, key, receiver);
            return async (request: PortSearch) => {
              calls++;
              arrived();
              await gate;
              return target.search(request);
            };
          },
        }) as VectorDb,
    });
    try {
      const request = SearchRequest.fromPartial({
        entity: ENTITY,
        modelName: MODEL,
        variant: 'organic',
        queries: Array.from({ length: 256 }, (_, i) => vectorQuery(gated, i)),
        pageSize: 10,
      });
      let call!: ClientUnaryCall;
      const answered = new Promise<ServiceError | null>((resolve) => {
        call = gated.client.raw.search(request, new Metadata(), (err) => resolve(err));
      });
      await first;
      call.cancel();
      assert.equal((await answered)?.code, status.CANCELLED);
      // The server's handler ends CANCELLED (counted) while its vector DB calls are still held...
      const deadline = Date.now() + 10_000;
      while (
        !/vss_serving_errors_total\{[^}]*code="CANCELLED"[^}]*\} 1/.test((await metrics.scrape()).body)
      ) {
        assert.ok(Date.now() < deadline, 'the Search handler never ended CANCELLED');
        await new Promise((resolve) => setImmediate(resolve));
      }
      // ...and once they answer, it starts no further query.
      release();
      for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
      assert.ok(
        calls <= 8,
        `${calls} vector DB calls (at most the 8 queries in flight when it was cancelled)`,
      );
    } finally {
      release();
      await gated.close();
    }
  });

  test('a large Search gives the event loop back: a small one sent after it is answered first', async () => {
    const big = world.client.search({
      queries: Array.from({ length: 256 }, (_, i) => vectorQuery(world, i)),
      pageSize: 50,
    });
    const order: string[] = [];
    const bigDone = big.then(() => order.push('big'));
    await world.client.search({ queries: [vectorQuery(world, 3)], pageSize: 5 });
    order.push('small');
    await bigDone;
    assert.deepEqual(order, ['small', 'big']);
  });
});

describe('vss serving boundary checks (issue 13, items 6 and 8)', () => {
  let world: World;
  before(async () => {
    world = await openWorld();
  });
  after(async () => {
    await world?.close();
  });

  test('a NUL in entity, model_name or variant is INVALID_ARGUMENT naming it (never a PostgreSQL error)', async () => {
    for (const [field, request] of [
      ['entity', { entity: 'catalog\u0000' }],
      ['model_name', { modelName: 'clip\u0000' }],
      ['variant', { variant: 'organic\u0000' }],
    ] as const) {
      const err = await expectStatus(
        world.client.search({ ...request, queries: [vectorQuery(world, 0)] }),
        status.INVALID_ARGUMENT,
        field,
      );
      assert.doesNotMatch(err.details, /SQLSTATE|byte sequence/);
    }
    await expectStatus(
      world.client.getEmbeddings({ entity: 'catalog\u0000', modelName: MODEL, candidateIds: ['p1'] }),
      status.INVALID_ARGUMENT,
      'entity',
    );
    await expectStatus(
      world.client.search({
        queries: [vectorQuery(world, 0)],
        filters: [{ field: 'brand\u0000', op: FilterOp.FILTER_OP_IN, values: ['a'] }],
      }),
      status.INVALID_ARGUMENT,
      'filters[0].field',
    );
  });

  test('a candidate id with a NUL is not found: per query in Search, found=false in the look-ups', async () => {
    const search = await world.client.search({
      queries: [{ candidateId: 'p1\u0000', pageToken: '', filters: [] }, vectorQuery(world, 0)],
      pageSize: 3,
    });
    assert.match(search.results[0]!.error, /^NOT_FOUND/);
    assert.equal(search.results[1]!.candidates.length, 3);
    const id = world.fixture.ids[0]!;
    const got = await world.client.getEmbeddings({
      entity: ENTITY,
      modelName: MODEL,
      candidateIds: [id, '\u0000', `${id}\u0000`],
    });
    assert.deepEqual(
      got.embeddings.map((e) => e.found),
      [true, false, false],
    );
    const scored = await world.client.scoreCandidates({
      entity: ENTITY,
      modelName: MODEL,
      embedding: { values: new Array<number>(DIMENSION).fill(1) },
      candidateIds: ['\u0000', id],
    });
    assert.deepEqual(
      scored.scores.map((s) => s.found),
      [false, true],
    );
  });

  test('a candidate id over 1,024 characters is INVALID_ARGUMENT naming its own field', async () => {
    await expectStatus(
      world.client.getEmbeddings({
        entity: ENTITY,
        modelName: MODEL,
        candidateIds: ['p1', 'p'.repeat(2000)],
      }),
      status.INVALID_ARGUMENT,
      'candidate_ids[1]',
    );
    await expectStatus(
      world.client.search({ queries: [{ candidateId: 'p'.repeat(2000), pageToken: '', filters: [] }] }),
      status.INVALID_ARGUMENT,
      'queries[0].candidate_id',
    );
  });

  test('invalid UTF-8 in a string field is INVALID_ARGUMENT naming it', async () => {
    const bad = Buffer.from([0xc0, 0x80]);
    const cases: [string, Uint8Array][] = [
      [
        'entity',
        Buffer.concat([
          Buffer.from([0x0a, 2]), // field 1 (entity), 2 bytes
          bad,
          SearchRequest.encode(
            SearchRequest.fromPartial({
              modelName: MODEL,
              variant: 'organic',
              queries: [vectorQuery(world, 0)],
            }),
          ).finish(),
        ]),
      ],
      [
        'queries[0].candidate_id',
        SearchRequest.encode(
          SearchRequest.fromPartial({
            entity: ENTITY,
            modelName: MODEL,
            variant: 'organic',
            queries: [{ candidateId: 'x' }],
          }),
        ).finish(),
      ],
    ];
    // Patch the candidate id's one byte into an invalid one (0xff never appears in UTF-8).
    const second = cases[1]![1];
    second[second.lastIndexOf('x'.charCodeAt(0))] = 0xff;
    for (const [field, bytes] of cases) {
      const err = await statusOf(rawCall(world, '/vss.v1.SimilaritySearch/Search', bytes));
      assert.equal(err.code, status.INVALID_ARGUMENT, err.details);
      assert.equal(err.metadata.get('field')[0], field);
      assert.match(err.details, /not valid UTF-8/);
    }
    const ids = Buffer.concat([
      GetEmbeddingsRequest.encode({ entity: ENTITY, modelName: MODEL, candidateIds: ['p1'] }).finish(),
      Buffer.from([0x1a, 2]),
      bad,
    ]);
    const err = await statusOf(rawCall(world, '/vss.v1.SimilaritySearch/GetEmbeddings', ids));
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.equal(err.metadata.get('field')[0], 'candidate_ids[1]');
  });

  test('error messages quote at most 64 characters of a name, field or id', async () => {
    const long = 'z'.repeat(100_000);
    for (const request of [
      { entity: long },
      { modelName: long },
      { variant: long },
      { filters: [{ field: long, op: FilterOp.FILTER_OP_IN, values: ['a'] }] },
      { filters: [{ field: 'price', op: FilterOp.FILTER_OP_LT, values: [long] }] },
      { queries: [{ candidateId: `${long}\u0000`, pageToken: '', filters: [] }] },
    ]) {
      const err = await world.client
        .search({ queries: [vectorQuery(world, 0)], ...request })
        .then((r) => ({ details: r.results[0]!.error }))
        .catch((e: ServiceError) => e);
      assert.ok(err.details.length < 400, `${err.details.length} characters: ${err.details.slice(0, 120)}`);
      assert.ok(!err.details.includes('z'.repeat(65)), err.details.slice(0, 200));
    }
  });
});

describe('GetEmbeddings answers fit one message (issue 13, item 7)', () => {
  let world: World;
  before(async () => {
    // 1 KiB of vectors per id (dimension 64: two vectors of 256 bytes each, then the id): with a
    // 256 KiB message, about 480 ids fit.
    world = await openWorld({
      fixture: { count: 600, dimension: 64, clusters: 4 },
      server: { maxMessageBytes: 256 * 1024 },
    });
  });
  after(async () => {
    await world?.close();
  });

  test('ids whose answer would pass the message size are INVALID_ARGUMENT naming candidate_ids, not RESOURCE_EXHAUSTED', async () => {
    const ids = world.fixture.ids.slice(0, 600);
    const err = await expectStatus(
      world.client.getEmbeddings({ entity: ENTITY, modelName: MODEL, candidateIds: ids }),
      status.INVALID_ARGUMENT,
      'candidate_ids',
    );
    assert.match(err.details, /max_embeddings_answer_bytes allows about (\d+) ids/);
    const fits = Number(/about (\d+) ids/.exec(err.details)![1]);
    assert.ok(fits > 400 && fits < 600, err.details);
    const answer = await world.client.getEmbeddings({
      entity: ENTITY,
      modelName: MODEL,
      candidateIds: ids.slice(0, fits),
    });
    assert.equal(answer.embeddings.length, fits);
    assert.ok(answer.embeddings.every((e) => e.found && e.embedding!.values.length === 64));
  });
});

function rawCall(world: World, path: string, bytes: Uint8Array): Promise<unknown> {
  return new Promise((resolve, reject) => {
    world.client.raw.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(bytes),
      new Metadata(),
      {},
      (err, value) => (err ? reject(err) : resolve(value)),
    );
  });
}
