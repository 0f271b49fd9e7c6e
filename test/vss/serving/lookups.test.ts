import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { LatticeError } from '../../../src/platform/errors.js';
import type {
  CollectionInfo,
  CollectionSpec,
  GetPointsOptions,
  Payload,
  PointInput,
  SearchHit,
  SearchRequest,
  StoredPoint,
  VectorDb,
} from '../../../src/platform/vectordb/index.js';
import { collectionName, EXPIRES_AT_FIELD } from '../../../src/vss/model/index.js';
import type { DistanceFunction } from '../../../src/vss/store/index.js';
import { eventually } from '../../support/servers.js';
import { engineSkip, VECTOR_ENGINES } from '../../support/vector-engines.js';
import { clusteredFixture, exactSearch } from '../../support/vector-fixtures.js';
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

/** Delegates to the engine's DB, counting searches; can be made to fail or to stall. */
class ControlledDb implements VectorDb {
  searches = 0;
  /** Searches started and not yet ended (a stalled one outlives its caller's deadline). */
  searching = 0;
  failing = false;
  delayMs = 0;
  constructor(private readonly inner: VectorDb) {}
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

/** The organic candidates nearest `query` by the world's distance, best first, `accept`ed ones only. */
function organicRanking(world: World, query: Float32Array, accept: (id: string) => boolean): string[] {
  const { indices } = exactSearch(
    world.fixture.vectors,
    DIMENSION,
    query,
    COUNT,
    world.distance,
    (row) => world.payloads[row]!.to_be_indexed_organic === true && accept(world.fixture.ids[row]!),
  );
  return indices.map((row) => world.fixture.ids[row]!);
}

/** Sets a model column and makes the server see it at once. */
async function setModel(world: World, column: string, value: boolean | number): Promise<void> {
  await world.sql.query(`UPDATE vss_models SET ${column} = $3 WHERE entity = $1 AND model_name = $2`, [
    ENTITY,
    MODEL,
    value,
  ]);
  await world.server.config.refresh();
}

// One world per engine; its tests run in order: the first two put back what they change, the flip
// moves the world to version 2, and the breaker, left open, comes last.
for (const engine of VECTOR_ENGINES) {
  describe(`vss serving: caches, versions, resilience on ${engine}`, {
    skip: await engineSkip(engine),
  }, () => {
    let world: World;
    let db: ControlledDb;
    before(async () => {
      world = await openWorld({
        engine,
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
      await world?.close();
    });

    test('with the embedding store off, GetEmbeddings and ScoreCandidates read the vector DB points', async () => {
      // A model without an embedding store has no rows: the candidates' points are all there is.
      const looked = ['p3', 'p7'];
      await world.sql.query('DELETE FROM emb WHERE id = ANY($1)', [looked]);
      await setModel(world, 'embedding_store_enabled', false);
      try {
        const { embeddings } = await world.client.getEmbeddings({
          entity: ENTITY,
          modelName: MODEL,
          candidateIds: ['p3', 'zz'],
        });
        assert.deepEqual(
          embeddings.map((e) => [e.id, e.found]),
          [
            ['p3', true],
            ['zz', false],
          ],
        );
        const written = Array.from(world.fixture.vector(3));
        // Qdrant normalises a COSINE collection's vectors when it stores them (qdrant.test.ts), so its
        // point holds the unit vector of the same direction: what a cosine score sees, not the bytes.
        const norm = Math.hypot(...written);
        const stored = engine === 'qdrant' ? written.map((v) => v / norm) : written;
        const got = embeddings[0]!.embedding!.values;
        assert.equal(got.length, DIMENSION);
        got.forEach((v, d) => {
          assert.ok(Math.abs(v - stored[d]!) < 1e-6, `value ${d}: ${v} vs ${stored[d]}`);
        });
        assert.deepEqual(embeddings[0]!.searchEmbedding!.values, got);

        const query = [0.5, -1, 2, 0.25, 1, -0.5, 0, 3];
        const { scores } = await world.client.scoreCandidates({
          entity: ENTITY,
          modelName: MODEL,
          embedding: { values: query },
          candidateIds: ['p7', 'missing'],
        });
        assert.deepEqual(
          scores.map((s) => [s.id, s.found]),
          [
            ['p7', true],
            ['missing', false],
          ],
        );
        const expected = expectedScore('COSINE', query, Array.from(world.fixture.vector(7)));
        assert.ok(Math.abs(scores[0]!.score - expected) <= 1e-4, `${scores[0]!.score} vs ${expected}`);
      } finally {
        await setModel(world, 'embedding_store_enabled', true);
        await world.store.embeddings.upsert('emb', {
          modelName: MODEL,
          version: 1,
          rows: looked.map((id) => {
            const i = Number(id.slice(1));
            return {
              id,
              embedding: world.fixture.vector(i),
              toBeIndexed: {
                organic: world.payloads[i]!.to_be_indexed_organic === true,
                ad: world.payloads[i]!.to_be_indexed_ad === true,
              },
            };
          }),
        });
      }
    });

    test('an expired embedding is neither searched, nor a query, nor looked up; live ones are served', async () => {
      const collection = collectionName(ENTITY, MODEL, 1);
      const expired = ['p0', 'p4', 'p8', 'p12'];
      const live = world.fixture.ids.filter((id) => !expired.includes(id));
      // Time passed as the consumers would have recorded it: the points' expiry in their payloads,
      // the rows' in the embedding store, and the model's TTL on.
      const now = Date.now();
      await world.db.setPayload(collection, live, { [EXPIRES_AT_FIELD]: now + 3_600_000 });
      await world.db.setPayload(collection, expired, { [EXPIRES_AT_FIELD]: now - 1000 });
      await world.sql.query(`UPDATE emb SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, [
        expired,
      ]);
      await setModel(world, 'embedding_store_ttl', 3600);
      try {
        const query = world.fixture.vector(0);
        const { results } = await world.client.search({
          queries: [
            { embedding: vec(query), pageToken: '', filters: [] },
            { candidateId: 'p4', pageToken: '', filters: [] },
            { candidateId: 'p1', pageToken: '', filters: [] },
          ],
          pageSize: 30,
        });
        assert.deepEqual(
          results[0]!.candidates.map((c) => c.id),
          organicRanking(world, query, (id) => !expired.includes(id)).slice(0, 30),
        );
        assert.match(results[1]!.error, /NOT_FOUND/);
        assert.deepEqual(
          results[2]!.candidates.map((c) => c.id),
          organicRanking(world, world.fixture.vector(1), (id) => id !== 'p1' && !expired.includes(id)).slice(
            0,
            30,
          ),
        );
        const { embeddings } = await world.client.getEmbeddings({
          entity: ENTITY,
          modelName: MODEL,
          candidateIds: ['p8', 'p9'],
        });
        assert.deepEqual(
          embeddings.map((e) => [e.id, e.found]),
          [
            ['p8', false],
            ['p9', true],
          ],
        );
      } finally {
        await setModel(world, 'embedding_store_ttl', 0);
        await world.sql.query('UPDATE emb SET expires_at = NULL WHERE id = ANY($1)', [expired]);
      }
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
}

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

// Scores come from the embedding store (the vector DB is read only with the store off, tested above
// on every engine): the distance functions are checked on the embedded engine alone.
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
