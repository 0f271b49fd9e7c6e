/**
 * Ingestion seen through vss serving (the gRPC server of test/vss/serving/harness.ts): what the
 * embedding processor writes is what Search, GetEmbeddings and ScoreCandidates answer from, and an
 * expired embedding-store row is not found.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EmbeddingProcessor } from '../../../src/vss/consumers/embedding-processor.js';
import { collectionName } from '../../../src/vss/model/index.js';
import { type EmbeddedWorld, ENTITY, MODEL, openWorld } from '../serving/harness.js';
import { parsedEmbedding } from './ingestion-world.js';

/** A direction no fixture vector is near: the top hit of a search with it is the candidate itself. */
const FRESH = [9, -9, 9, -9, 9, -9, 9, -9];
/** Slightly different queries, so no answer comes from the result cache of an earlier one. */
const near = (k: number) => FRESH.map((x, i) => (i === 0 ? x + k * 1e-3 : x));

describe('ingested embeddings through vss serving', () => {
  let world: EmbeddedWorld;
  let processor: EmbeddingProcessor;
  const deliver = async (event: Record<string, unknown>) => {
    const outcomes = await processor.apply([parsedEmbedding(event)]);
    assert.deepEqual(outcomes, [undefined]);
    await world.db.waitForIndexing(collectionName(ENTITY, MODEL, 1));
  };
  const event = (operation: string, space: Record<string, unknown> = {}) => ({
    entity: ENTITY,
    model_name: MODEL,
    candidate_id: 'fresh-1',
    version: 1,
    index_space: {
      variants_version_map: '{"organic":1,"ad":1}',
      variants_index_map: '{"organic":true,"ad":false}',
      embedding: operation === 'A' ? FRESH : [],
      operation,
      payload: '{"brand":"z"}',
      ...space,
    },
  });
  const topHit = async (variant: string, k: number) => {
    const response = await world.client.search({
      variant,
      queries: [{ embedding: { values: near(k) }, filters: [], pageToken: '' }],
      pageSize: 1,
      attributes: ['brand'],
    });
    return response.results[0]!.candidates[0];
  };

  before(async () => {
    world = await openWorld();
    processor = new EmbeddingProcessor({ store: world.store, vectorDb: world.db, vectorDbType: 'EMBEDDED' });
  });
  after(async () => {
    await world?.close();
  });

  test('an added candidate is found by the variants whose membership it has, with its attributes', async () => {
    await deliver(event('A'));
    const hit = await topHit('organic', 1);
    assert.equal(hit?.id, 'fresh-1');
    assert.deepEqual(hit?.attributes, { brand: 'z' });
    assert.notEqual((await topHit('ad', 2))?.id, 'fresh-1', 'not in ad: its index flag is false');

    const { embeddings } = await world.client.getEmbeddings({
      entity: ENTITY,
      modelName: MODEL,
      candidateIds: ['fresh-1'],
    });
    assert.equal(embeddings[0]!.found, true);
    assert.deepEqual(embeddings[0]!.embedding!.values, FRESH);
    const { scores } = await world.client.scoreCandidates({
      entity: ENTITY,
      modelName: MODEL,
      embedding: { values: FRESH },
      candidateIds: ['fresh-1'],
    });
    assert.equal(scores[0]!.found, true);
    assert.ok(Math.abs(scores[0]!.score - 1) < 1e-6, `cosine with itself: ${scores[0]!.score}`);
  });

  test('a payload update moves it into another variant', async () => {
    await deliver(event('P', { variants_index_map: '{"ad":true}', payload: '{}' }));
    assert.equal((await topHit('ad', 3))?.id, 'fresh-1');
  });

  test('an expired embedding-store row is not found by GetEmbeddings, though its point remains', async () => {
    await world.sql.query(`UPDATE emb SET expires_at = now() - interval '1 second' WHERE id = 'fresh-1'`);
    const { embeddings } = await world.client.getEmbeddings({
      entity: ENTITY,
      modelName: MODEL,
      candidateIds: ['fresh-1'],
    });
    assert.equal(embeddings[0]!.found, false);
    const { scores } = await world.client.scoreCandidates({
      entity: ENTITY,
      modelName: MODEL,
      embedding: { values: FRESH },
      candidateIds: ['fresh-1'],
    });
    assert.equal(scores[0]!.found, false);
  });

  test('a delete removes it from every variant', async () => {
    await deliver(event('A'));
    await deliver(event('D'));
    assert.notEqual((await topHit('organic', 4))?.id, 'fresh-1');
    const { embeddings } = await world.client.getEmbeddings({
      entity: ENTITY,
      modelName: MODEL,
      candidateIds: ['fresh-1'],
    });
    assert.equal(embeddings[0]!.found, false);
  });
});
