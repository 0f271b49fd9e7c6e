/**
 * The Qdrant adapter: the VectorDb contract against a real Qdrant whenever QDRANT_URL is set, and
 * always against the in-process REST stand-in (test/support/qdrant-stand-in.ts), plus what is
 * particular to the adapter (id mapping, ties, errors, the translation of Qdrant's answers).
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { isLatticeError } from '../../../src/platform/errors.js';
import { createVectorDb, QdrantVectorDb, type VectorDb } from '../../../src/platform/vectordb/index.js';
import { type QdrantStandIn, startQdrantStandIn } from '../../support/qdrant-stand-in.js';
import { rejectsWith, vectorDbContract } from './contract.js';

const QDRANT_URL = process.env.QDRANT_URL;
/** Collections of this run on a real server, so cleanup drops them and nothing else. */
const realPrefix = `lattice_test_${process.pid.toString(36)}${Date.now().toString(36)}_`;

vectorDbContract({
  name: `qdrant at QDRANT_URL (${QDRANT_URL ?? 'unset'})`,
  open: () =>
    createVectorDb({
      kind: 'qdrant',
      url: QDRANT_URL!,
      apiKey: process.env.QDRANT_API_KEY || undefined,
      collectionPrefix: realPrefix,
    }),
  cleanup: async () => {
    if (!QDRANT_URL) return;
    const db = new QdrantVectorDb({
      url: QDRANT_URL,
      apiKey: process.env.QDRANT_API_KEY || undefined,
      collectionPrefix: realPrefix,
    });
    for (const name of await db.listCollections()) await db.dropCollection(name);
    await db.close();
  },
  skip: QDRANT_URL
    ? false
    : 'QDRANT_URL is not set: no Qdrant server to run against (the REST stand-in run below covers the adapter)',
});

let contractStandIn: QdrantStandIn | undefined;
vectorDbContract({
  name: 'qdrant adapter against the REST stand-in',
  open: async () => {
    contractStandIn ??= await startQdrantStandIn();
    return createVectorDb({ kind: 'qdrant', url: contractStandIn.url });
  },
  holdIndexing: async (_db, collection) => {
    const release = contractStandIn!.holdIndexing(collection);
    return async () => release();
  },
  cleanup: async () => contractStandIn?.stop(),
});

/** A TCP port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const ids = (hits: { id: string }[] | undefined) => (hits ?? []).map((hit) => hit.id);

describe('qdrant adapter', () => {
  let standIn: QdrantStandIn;
  let db: VectorDb;
  let counter = 0;
  const fresh = () => `adapter_${++counter}`;

  before(async () => {
    standIn = await startQdrantStandIn();
    db = await createVectorDb({ kind: 'qdrant', url: standIn.url });
  });
  after(async () => {
    await db?.close();
    await standIn?.stop();
  });

  test('odd string ids map to UUIDs and back, and the id field stays hidden', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 2, distance: 'DOT' });
    const odd = [
      'a/b?c#d',
      ' spaced ',
      '123',
      '0',
      'ünïcödé 🚀',
      '6f1c2b3a-0000-4000-8000-000000000001',
      'quote"back\\slash',
      'x'.repeat(1024),
    ];
    await db.upsert(
      name,
      odd.map((id, i) => ({ id, vector: [1, i], payload: { rank: i } })),
    );
    const stored = standIn.stored(name);
    assert.equal(stored.length, odd.length);
    for (const point of stored) {
      assert.match(String(point.id), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    assert.ok(!stored.some((p) => p.id === odd[5]), 'a UUID-looking id is mapped like any other');
    const points = await db.getPoints(name, [...odd, 'missing']);
    assert.deepEqual(
      points.map((p) => p?.id),
      [...odd, undefined],
    );
    odd.forEach((id, i) => {
      assert.deepEqual(points[i], { id, vector: Float32Array.from([1, i]), payload: { rank: i } });
    });
    const [hits] = await db.search({
      collection: name,
      queries: [{ vector: [0, 1], excludeIds: [odd[7]!] }],
      limit: 10,
      withPayload: true,
    });
    assert.deepEqual(ids(hits), odd.slice(0, 7).reverse());
    assert.deepEqual(hits![0]!.payload, { rank: 6 });
    // The mapping is deterministic: another process (another adapter) finds the same points.
    const other = new QdrantVectorDb({ url: standIn.url });
    assert.deepEqual((await other.getPoints(name, [odd[4]!], { withVector: false }))[0], {
      id: odd[4],
      payload: { rank: 4 },
    });
    await other.close();
    assert.equal(await db.delete(name, [odd[0]!, odd[6]!]), 2);
    assert.equal((await db.collectionInfo(name)).points, odd.length - 2);
    // Callers cannot write the reserved field, nor filter on it.
    await rejectsWith(
      db.upsert(name, [{ id: 'p', vector: [1, 1], payload: { __lattice_id: 'other' } }]),
      'INVALID_ARGUMENT',
      'points[0].payload.__lattice_id',
    );
    await rejectsWith(
      db.setPayload(name, ['123'], { __lattice_id: 'x' }),
      'INVALID_ARGUMENT',
      'payload.__lattice_id',
    );
    await rejectsWith(
      db.search({
        collection: name,
        queries: [{ vector: [1, 0] }],
        filters: [{ field: '__lattice_id', op: 'IN', values: ['123'] }],
        limit: 1,
      }),
      'INVALID_ARGUMENT',
      'filters[0].field',
    );
  });

  test('payload fields with dots and spaces are filtered and selected as whole names', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 2, distance: 'DOT' });
    await db.upsert(name, [
      { id: 'a', vector: [1, 0], payload: { 'a.b': 'x', 'with space': 1, a: 'plain' } },
      { id: 'b', vector: [0, 1], payload: { 'a.b': 'y', 'with space': 2 } },
    ]);
    const [hits] = await db.search({
      collection: name,
      queries: [{ vector: [1, 1] }],
      filters: [
        { field: 'a.b', op: 'IN', values: ['x'] },
        { field: 'with space', op: 'LT', values: ['2'] },
      ],
      limit: 5,
      withPayload: ['a.b'],
    });
    assert.deepEqual(hits, [{ id: 'a', score: 1, payload: { 'a.b': 'x' } }]);
    await rejectsWith(
      db.search({
        collection: name,
        queries: [{ vector: [1, 1] }],
        filters: [{ field: 'say "hi"', op: 'EXISTS', values: [] }],
        limit: 5,
      }),
      'INVALID_ARGUMENT',
      'filters[0].field',
      /cannot filter/,
    );
  });

  test('equal scores are ordered by id, wherever the limit cuts them', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 2, distance: 'EUCLIDEAN' });
    const tied = Array.from({ length: 25 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    await db.upsert(name, [
      ...tied.map((id) => ({ id, vector: [1, 1] })),
      { id: 'near', vector: [0, 0] },
      { id: 'far', vector: [5, 5] },
    ]);
    const want = ['near', ...tied, 'far'];
    const [all] = await db.search({ collection: name, queries: [{ vector: [0, 0] }], limit: 100 });
    assert.deepEqual(ids(all), want);
    for (let limit = 1; limit <= want.length; limit += 4) {
      const [cut] = await db.search({ collection: name, queries: [{ vector: [0, 0] }], limit });
      assert.deepEqual(ids(cut), want.slice(0, limit), `limit ${limit}`);
    }
  });

  test('a filtered search that HNSW answers short is asked again exactly', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 2, distance: 'DOT', hnsw: { efSearch: 16 } });
    await db.upsert(
      name,
      Array.from({ length: 40 }, (_, i) => ({
        id: `p${i}`,
        vector: [1, i / 40],
        payload: { even: i % 2 === 0 },
      })),
    );
    standIn.faults.lossyFilteredSearch = true;
    try {
      const [hits] = await db.search({
        collection: name,
        queries: [{ vector: [1, 1] }],
        filters: [{ field: 'even', op: 'IN', values: ['true'] }],
        limit: 18,
        indexedOnly: true,
      });
      assert.equal(hits!.length, 18);
      assert.deepEqual(
        ids(hits),
        Array.from({ length: 18 }, (_, i) => `p${38 - 2 * i}`),
      );
    } finally {
      standIn.faults.lossyFilteredSearch = false;
    }
    const searches = standIn.requests.filter((r) => r.path.endsWith('/points/search'));
    const last = searches.at(-1)!.body as { params: Record<string, unknown>; limit: number };
    assert.equal(last.params.exact, true);
    assert.equal(last.params.indexed_only, true);
    assert.ok((last.params.hnsw_ef as number) >= 18, 'ef is raised to the limit');
  });

  test('writes wait for Qdrant to apply them', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 2, distance: 'DOT' });
    await db.upsert(name, [{ id: 'a', vector: [1, 0] }]);
    await db.setPayload(name, ['a'], { x: 1 });
    await db.delete(name, ['a']);
    const writes = standIn.requests.filter(
      (r) =>
        r.path.startsWith(`/collections/${name}/points`) &&
        (r.method === 'PUT' || /delete|payload/.test(r.path)),
    );
    assert.equal(writes.length, 3);
    for (const write of writes) assert.equal(write.query.get('wait'), 'true', write.path);
  });

  test('collection info maps Qdrant statuses and keeps efSearch in the collection metadata', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 3, distance: 'COSINE', hnsw: { m: 12, efSearch: 99 } });
    await db.upsert(name, [
      { id: 'a', vector: [3, 4, 0] },
      { id: 'b', vector: [0, 0, 2] },
    ]);
    // Small collections are searched exactly: Qdrant reports 0 indexed vectors but green.
    assert.deepEqual(await db.collectionInfo(name), {
      name,
      dimension: 3,
      distance: 'COSINE',
      hnsw: { m: 12, efConstruction: 128, efSearch: 99 },
      points: 2,
      indexedPoints: 2,
      status: 'READY',
    });
    standIn.setStatus(name, 'yellow', 1);
    assert.deepEqual(await db.collectionInfo(name).then((i) => [i.status, i.indexedPoints]), ['INDEXING', 1]);
    standIn.setStatus(name, 'red');
    assert.equal((await db.collectionInfo(name)).status, 'FAILED');
    // A second process reads the same spec back, so an identical create is still a no-op.
    const other = new QdrantVectorDb({ url: standIn.url });
    await other.createCollection({ name, dimension: 3, distance: 'COSINE', hnsw: { m: 12, efSearch: 99 } });
    await rejectsWith(
      other.createCollection({ name, dimension: 3, distance: 'COSINE', hnsw: { m: 12 } }),
      'ALREADY_EXISTS',
      'name',
      /ef_search 99/,
    );
    await other.close();
    // Qdrant normalises COSINE vectors on write: they come back with unit length.
    const [a] = await db.getPoints(name, ['a']);
    assert.deepEqual(Array.from(a!.vector!), [0.6000000238418579, 0.800000011920929, 0]);
  });

  test('a collection prefix keeps deployments apart on one server', async () => {
    const tenant = new QdrantVectorDb({ url: standIn.url, collectionPrefix: 'tenant1_' });
    await tenant.createCollection({ name: 'shared', dimension: 2, distance: 'DOT' });
    assert.deepEqual(await tenant.listCollections(), ['shared']);
    assert.ok(!(await db.listCollections()).includes('shared'));
    assert.ok((await db.listCollections()).includes('tenant1_shared'));
    assert.equal(await tenant.dropCollection('shared'), true);
    await tenant.close();
  });

  test('an api key is sent; a wrong one is UNAUTHENTICATED', async () => {
    const guarded = await startQdrantStandIn({ apiKey: 's3cret' });
    const warn = console.warn;
    console.warn = () => {}; // the client warns about an api key over plain http
    try {
      const good = await createVectorDb({ kind: 'qdrant', url: guarded.url, apiKey: 's3cret' });
      assert.deepEqual(await good.listCollections(), []);
      await good.close();
      await rejectsWith(
        createVectorDb({ kind: 'qdrant', url: guarded.url, apiKey: 'wrong' }),
        'UNAUTHENTICATED',
        undefined,
        new RegExp(guarded.url),
      );
    } finally {
      console.warn = warn;
      await guarded.stop();
    }
  });

  test('a refused connection is UNAVAILABLE naming the URL and the refusal, without waiting for the timeout', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    // The refusal is the reason, not "did not answer within" the (long) timeout.
    const refused = new RegExp(`${url.replaceAll('.', '\\.')} cannot be reached: .*ECONNREFUSED`);
    await rejectsWith(
      createVectorDb({ kind: 'qdrant', url, timeoutMs: 60_000 }),
      'UNAVAILABLE',
      undefined,
      refused,
    );
    const lazy = new QdrantVectorDb({ url, timeoutMs: 60_000 });
    await rejectsWith(lazy.collectionInfo('any'), 'UNAVAILABLE', undefined, refused);
    await lazy.close();
  });

  // The test's timeout only turns a hang (no request timeout) into a failure.
  test('a server that never answers is UNAVAILABLE after timeoutMs', { timeout: 60_000 }, async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      const started = Date.now();
      await rejectsWith(
        createVectorDb({ kind: 'qdrant', url, timeoutMs: 300 }),
        'UNAVAILABLE',
        undefined,
        /did not answer within 300 ms/,
      );
      // Not before the timeout (a lower bound holds however busy the machine is).
      const took = Date.now() - started;
      assert.ok(took >= 250, `took ${took} ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test('a server error is not mistaken for a missing collection', async () => {
    const broken = createHttpServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: { error: 'Service unavailable: shutting down' } }));
    });
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(broken.address() as { port: number }).port}`;
    try {
      const lazy = new QdrantVectorDb({ url });
      await rejectsWith(lazy.collectionInfo('x'), 'UNAVAILABLE', undefined, /503: Service unavailable/);
      await lazy.close();
    } finally {
      await new Promise<void>((resolve) => broken.close(() => resolve()));
    }
  });

  test('after close() every call is UNAVAILABLE naming the URL; close is idempotent', async () => {
    const name = fresh();
    await db.createCollection({ name, dimension: 2, distance: 'DOT' });
    const closing = await createVectorDb({ kind: 'qdrant', url: standIn.url });
    await closing.close();
    await closing.close();
    const calls: Promise<unknown>[] = [
      closing.listCollections(),
      closing.createCollection({ name: 'n', dimension: 2, distance: 'DOT' }),
      closing.dropCollection(name),
      closing.collectionInfo(name),
      closing.upsert(name, [{ id: 'a', vector: [1, 2] }]),
      closing.delete(name, ['a']),
      closing.setPayload(name, ['a'], { x: 1 }),
      closing.getPoints(name, ['a']),
      closing.search({ collection: name, queries: [{ vector: [1, 2] }], limit: 1 }),
    ];
    for (const call of calls) {
      await rejectsWith(
        call,
        'UNAVAILABLE',
        undefined,
        new RegExp(`${standIn.url.replaceAll('.', '\\.')}.*closed`),
      );
    }
    assert.ok((await db.listCollections()).includes(name), 'closing one adapter leaves the server alone');
  });

  test('options are checked', () => {
    assert.throws(
      () => new QdrantVectorDb({ url: 'qdrant:6333' }),
      (err: unknown) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'url',
    );
    assert.throws(
      () => new QdrantVectorDb({ url: 'http://q:6333', timeoutMs: 0 }),
      (err: unknown) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'timeoutMs',
    );
    assert.throws(
      () => new QdrantVectorDb({ url: 'http://q:6333', collectionPrefix: 'a/b' }),
      (err: unknown) => isLatticeError(err, 'INVALID_ARGUMENT') && err.field === 'collectionPrefix',
    );
  });
});
