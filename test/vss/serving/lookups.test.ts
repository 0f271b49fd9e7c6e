import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { LatticeError } from '../../../src/platform/errors.js';
import type {
  CollectionInfo,
  CollectionSpec,
  EmbeddedVectorDb,
  GetPointsOptions,
  Payload,
  PointInput,
  SearchHit,
  SearchRequest,
  StoredPoint,
  VectorDb,
} from '../../../src/platform/vectordb/index.js';
import type { DistanceFunction } from '../../../src/vss/store/index.js';
import { eventually } from '../../support/servers.js';
import { clusteredFixture } from '../../support/vector-fixtures.js';
import {
  COUNT,
  DIMENSION,
  ENTITY,
  expectStatus,
  MODEL,
  openWorld,
  readyVariant,
  type World,
  writeVersion,
} from './harness.js';

/** Delegates to the embedded DB, counting searches; can be made to fail or to stall. */
class ControlledDb implements VectorDb {
  searches = 0;
  /** Searches started and not yet ended (a stalled one outlives its caller's deadline). */
  searching = 0;
  failing = false;
  delayMs = 0;
  constructor(private readonly inner: EmbeddedVectorDb) {}
  createCollection(spec: CollectionSpec): Promise<void> {
    return this.inner.createCollection(spec);
  }
  dropCollection(name: string): Promise<boolean> {
    return this.inner.dropCollection(name);
  }
  listCollections(): Promise<string[]> {
    return this.inner.listCollections();
  }
  collectionInfo(name: string): Promise<CollectionInfo> {
    return this.inner.collectionInfo(name);
  }
  upsert(collection: string, points: readonly PointInput[]): Promise<void> {
    return this.inner.upsert(collection, points);
  }
  delete(collection: string, ids: readonly string[]): Promise<number> {
    return this.inner.delete(collection, ids);
  }
  setPayload(collection: string, ids: readonly string[], payload: Payload): Promise<number> {
    return this.inner.setPayload(collection, ids, payload);
  }
  getPoints(
    collection: string,
    ids: readonly string[],
    options?: GetPointsOptions,
  ): Promise<(StoredPoint | undefined)[]> {
    return this.inner.getPoints(collection, ids, options);
  }
  async search(request: SearchRequest): Promise<SearchHit[][]> {
    // Recall samples search the whole collection; only serving searches are counted.
    if (request.limit < COUNT) this.searches++;
    this.searching++;
    try {
      // A stalled database (the scenario), not a wait for a condition.
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      if (this.failing) throw new LatticeError('UNAVAILABLE', 'vector database is down');
      return await this.inner.search(request);
    } finally {
      this.searching--;
    }
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

const vec = (v: Float32Array) => ({ values: Array.from(v) });

describe('vss serving: caches, versions, resilience', () => {
  let world: World;
  let db: ControlledDb;
  before(async () => {
    world = await openWorld({
      wrap: (inner) => {
        db = new ControlledDb(inner);
        return db;
      },
      server: {
        recallSampleRate: 1,
        vectorDbGuard: { timeoutMs: 1000, consecutiveFailures: 5, halfOpenAfterMs: 60_000 },
      },
    });
  });
  after(async () => {
    await world.close();
  });

  test('a repeated query is served from the cache; a read-version flip changes the key', async () => {
    const q = world.fixture.queries(1, 21)[0]!;
    const request = { queries: [{ embedding: vec(q), pageToken: '', filters: [] }], attributes: ['brand'] };
    const first = await world.client.search(request);
    const before = db.searches;
    const second = await world.client.search(request);
    assert.equal(db.searches, before, 'no vector DB search on a repeat');
    assert.deepEqual(second, first);
    assert.ok(
      (world.server.servingMetrics.snapshot({ entity: ENTITY, model: MODEL, variant: 'organic' })
        .cacheHitRatio ?? 0) > 0,
    );

    // Page 2 of version 1, kept for later.
    const page2Token = first.results[0]!.nextPageToken;

    const v2 = clusteredFixture({ count: COUNT, dimension: DIMENSION, clusters: 4, seed: 8 });
    await writeVersion(world.store, db, v2, 2, world.distance);
    await readyVariant(world.store, 'organic', 2);
    await world.server.config.refresh();
    const third = await world.client.search(request);
    assert.equal(db.searches, before + 1, 'the flip invalidated the cached page');
    assert.notDeepEqual(third.results[0]!.candidates, first.results[0]!.candidates);

    // Version 1 is still served to `ad`: an old token keeps paging in version 1.
    const stillV1 = await world.client.search({
      queries: [{ embedding: vec(q), pageToken: page2Token, filters: [] }],
    });
    assert.equal(stillV1.results[0]!.candidates.length, 10);

    // Once no variant reads version 1 and it is dropped, the token is FAILED_PRECONDITION.
    await readyVariant(world.store, 'ad', 2);
    await world.store.versions.transition(
      { entity: ENTITY, modelName: MODEL, version: 1 },
      'RETIRED',
      'DROPPED',
    );
    await db.dropCollection(`${ENTITY}__${MODEL}__v1`);
    await world.server.config.refresh();
    await expectStatus(
      world.client.search({
        queries: [{ embedding: vec(q), pageToken: page2Token, filters: [] }],
        pageSize: 11,
      }),
      status.FAILED_PRECONDITION,
      'queries[0].page_token',
    );
  });

  test('GetEmbeddings returns embedding and search embedding with found flags', async () => {
    const { embeddings } = await world.client.getEmbeddings({
      entity: ENTITY,
      modelName: MODEL,
      candidateIds: ['p3', 'zz'],
    });
    assert.equal(embeddings.length, 2);
    assert.equal(embeddings[0]!.found, true);
    assert.equal(embeddings[0]!.embedding!.values.length, DIMENSION);
    assert.deepEqual(embeddings[0]!.searchEmbedding!.values, embeddings[0]!.embedding!.values);
    assert.equal(embeddings[1]!.found, false);
    await expectStatus(
      world.client.getEmbeddings({ entity: ENTITY, modelName: MODEL, candidateIds: [] }),
      status.INVALID_ARGUMENT,
      'candidate_ids',
    );
    await expectStatus(
      world.client.getEmbeddings({ entity: ENTITY, modelName: 'x', candidateIds: ['p1'] }),
      status.NOT_FOUND,
      'model_name',
    );
  });

  test('a deadline shorter than the vector DB is DEADLINE_EXCEEDED', async () => {
    db.delayMs = 300;
    try {
      const q = world.fixture.queries(1, 41)[0]!;
      await expectStatus(
        world.client.search({ queries: [{ embedding: vec(q), pageToken: '', filters: [] }] }, 100),
        status.DEADLINE_EXCEEDED,
      );
    } finally {
      db.delayMs = 0;
    }
    // The stalled search ends on its own: let it, before the next test counts searches.
    await eventually(() => db.searching === 0, 10_000, 'the stalled search to end');
  });

  test('vector DB failures are UNAVAILABLE; after 5 the breaker opens and sheds without calling it', async () => {
    db.failing = true;
    for (let i = 0; i < 5; i++) {
      const q = world.fixture.queries(1, 50 + i)[0]!;
      await expectStatus(
        world.client.search({ queries: [{ embedding: vec(q), pageToken: '', filters: [] }] }),
        status.UNAVAILABLE,
      );
    }
    const calls = db.searches;
    const q = world.fixture.queries(1, 60)[0]!;
    const err = await expectStatus(
      world.client.search({ queries: [{ embedding: vec(q), pageToken: '', filters: [] }] }),
      status.UNAVAILABLE,
    );
    assert.match(err.details, /circuit is open/);
    assert.equal(db.searches, calls);
    db.failing = false;
  });
});

function expectedScore(distance: DistanceFunction, a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let sq = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
    sq += (a[i]! - b[i]!) ** 2;
  }
  if (distance === 'DOT') return dot;
  if (distance === 'COSINE') return dot / Math.sqrt(na * nb);
  return Math.sqrt(sq);
}

for (const distance of ['DOT', 'COSINE', 'EUCLIDEAN'] as const) {
  describe(`vss serving: ScoreCandidates (${distance})`, () => {
    let world: World;
    before(async () => {
      world = await openWorld({ distance });
    });
    after(async () => {
      await world.close();
    });

    test('scores by the model distance function, with found flags', async () => {
      const query = [0.5, -1, 2, 0.25, 1, -0.5, 0, 3];
      const { scores } = await world.client.scoreCandidates({
        entity: ENTITY,
        modelName: MODEL,
        embedding: { values: query },
        candidateIds: ['p5', 'missing', 'p6'],
      });
      assert.deepEqual(
        scores.map((s) => [s.id, s.found]),
        [
          ['p5', true],
          ['missing', false],
          ['p6', true],
        ],
      );
      for (const s of [scores[0]!, scores[2]!]) {
        const row = Array.from(world.fixture.vector(Number(s.id.slice(1))));
        const expected = expectedScore(distance, query, row);
        assert.ok(
          Math.abs(s.score - expected) <= 1e-4 * Math.max(1, Math.abs(expected)),
          `${s.score} vs ${expected}`,
        );
      }
      assert.equal(scores[1]!.score, 0);
      await expectStatus(
        world.client.scoreCandidates({
          entity: ENTITY,
          modelName: MODEL,
          embedding: { values: [1] },
          candidateIds: ['p1'],
        }),
        status.INVALID_ARGUMENT,
        'embedding.values',
      );
    });

    if (distance === 'EUCLIDEAN') {
      test('EUCLIDEAN search ascends by distance', async () => {
        const { results } = await world.client.search({
          queries: [{ candidateId: 'p2', pageToken: '', filters: [] }],
        });
        const scores = results[0]!.candidates.map((c) => c.score);
        assert.deepEqual(
          [...scores].sort((a, b) => a - b),
          scores,
        );
      });
    }
  });
}
