/**
 * An expired embedding is never served, through vss serving and consumers running together on
 * embedded defaults: a model with `embedding_store_ttl` of a few seconds and result caches on. Once
 * GetEmbeddings stops returning the candidates (their TTL passed), Search returns none of them (not
 * from the index, not from a page cached while they lived, not as a query by id), candidates written
 * since are served, and the expiry sweep removes the expired points from the index.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ExpirySweep } from '../../src/vss/consumers/expiry-sweep.js';
import { ClusterVectorDbs, collectionName } from '../../src/vss/model/index.js';
import { eventually, uniqueName } from '../support/servers.js';
import {
  type IngestModel,
  registerIngestModel,
  seededVector,
  serveVersion,
} from '../support/vss-ingest-catalog.js';
import { ingestEmbeddings, inProcessVssStack, type VssStack } from '../support/vss-stack.js';

const DIMENSION = 8;
const TTL_SECONDS = 5;
const OLD = Array.from({ length: 10 }, (_, i) => `old${i}`);
const NEW = Array.from({ length: 10 }, (_, i) => `new${i}`);

describe('vss: an expired embedding is never served', () => {
  let stack: VssStack;
  let model: IngestModel;

  before(async () => {
    stack = await inProcessVssStack();
    model = await registerIngestModel(stack.store, {
      entity: uniqueName('ttl').replace(/[^a-z0-9_]/g, '_'),
      dimension: DIMENSION,
      variants: { organic: {} },
      ttlSeconds: TTL_SECONDS,
    });
  });
  after(async () => {
    await stack?.close();
  });

  const ingest = (ids: readonly string[], seed: number) =>
    ingestEmbeddings(
      stack,
      model,
      ids.map((id, i) => ({ id, vector: seededVector(seed + i, DIMENSION) })),
    );

  async function served(query: { id?: string; seed?: number }): Promise<string[]> {
    const response = await stack.client.search({
      entity: model.entity,
      modelName: model.modelName,
      variant: 'organic',
      queries: [
        query.id === undefined
          ? { embedding: { values: seededVector(query.seed ?? 0, DIMENSION) }, filters: [], pageToken: '' }
          : { candidateId: query.id, filters: [], pageToken: '' },
      ],
      pageSize: 50,
    });
    const result = response.results[0]!;
    if (result.error !== '') throw new Error(result.error);
    return result.candidates.map((c) => c.id);
  }

  async function found(ids: readonly string[]): Promise<string[]> {
    const response = await stack.client.getEmbeddings({
      entity: model.entity,
      modelName: model.modelName,
      candidateIds: [...ids],
    });
    return response.embeddings.filter((e) => e.found).map((e) => e.id);
  }

  test('after its TTL a candidate leaves Search at once, and the sweep removes it from the index', async () => {
    await ingest(OLD, 0);
    await serveVersion(stack.store, model, ['organic'], 1);
    // Served, and the page cached (caches are on) while every candidate lives.
    await eventually(
      async () => (await served({ seed: 0 }).catch(() => [])).length === OLD.length,
      30_000,
      'served',
    );
    assert.equal((await found(OLD)).length, OLD.length);

    // Waiting for the TTL to pass: GetEmbeddings says when.
    await eventually(async () => (await found(OLD)).length === 0, 30_000, 'the TTL to pass');
    assert.deepEqual(await served({ seed: 0 }), [], 'the cached page is not served past its expiry');
    assert.deepEqual(await served({ seed: 3 }), [], 'nor any expired point');

    // Candidates written since are served; the expired ones stay out.
    await ingest(NEW, 100);
    await eventually(async () => (await served({ seed: 100 })).length > 0, 30_000, 'the new candidates');
    const now = await served({ seed: 0 });
    assert.ok(
      now.every((id) => NEW.includes(id)),
      `only live candidates: ${now.join(' ')}`,
    );
    await assert.rejects(
      served({ id: 'old1' }),
      /NOT_FOUND: candidate "old1"/,
      'no query from an expired embedding',
    );

    // The sweep removes the expired points from the index, not only the rows.
    const vectorDb = stack.vectorDb!;
    const collection = collectionName(model.entity, model.modelName, 1);
    assert.equal((await vectorDb.getPoints(collection, OLD)).filter(Boolean).length, OLD.length);
    await new ExpirySweep(stack.store, { vectorDbs: ClusterVectorDbs.single(vectorDb) }).sweepOnce();
    assert.equal((await vectorDb.getPoints(collection, OLD)).filter(Boolean).length, 0);
    const live = await found(NEW);
    if (live.length > 0) {
      // Those that have not expired yet keep their points.
      assert.equal((await vectorDb.getPoints(collection, live)).filter(Boolean).length, live.length);
    }
  });
});
