/**
 * The pgvector adapter: the VectorDb contract on PGlite (which loads the extension) and on a real
 * PostgreSQL with pgvector (LATTICE_TEST_POSTGRES_URL; scripts/test-services.sh builds the vendored
 * 0.8.6 when the server lacks it), plus what is particular to the adapter: the planner's exact scan
 * under selective filters, halfvec above 2,000 dimensions, a truthful indexed count, and a
 * collection created again under a name another process still holds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqlClient, type SqlClient } from '../../../src/platform/sql/index.js';
import {
  createVectorDb,
  type DistanceFunction,
  type Filter,
  PgvectorVectorDb,
} from '../../../src/platform/vectordb/index.js';
import { uniqueName } from '../../support/servers.js';
import { ensureVectorExtension, pgvectorServer } from '../../support/vector-engines.js';
import { clusteredFixture, exactSearch, recall } from '../../support/vector-fixtures.js';
import { rejectsWith, vectorDbContract } from './contract.js';

/**
 * The real server, when it has pgvector to offer: without it these tests skip, saying why, as tests of
 * an absent server do; under CI it is required.
 */
const postgresUrl = await pgvectorServer();

/**
 * A database to open adapters on. One SQL client per backend serves the whole file (opening PGlite
 * takes seconds); adapters on it leave it open when they close.
 */
interface Backend {
  name: string;
  skip: string | false;
  sql(): Promise<SqlClient>;
}

const shared = new Map<string, Promise<SqlClient>>();
function backend(name: string, skip: string | false, open: () => Promise<SqlClient>): Backend {
  return {
    name,
    skip,
    sql: () => {
      let client = shared.get(name);
      if (client === undefined) {
        client = open();
        shared.set(name, client);
      }
      return client;
    },
  };
}

const pglite = backend('PGlite', false, () => createSqlClient({ kind: 'pglite', vector: true }));

/**
 * A schema of this run on the real server. The extension is created in `public` (once per
 * database: its types must be visible to every schema), and the client searches both.
 */
const schema = uniqueName('lattice_pgvector').toLowerCase();
const postgres = backend(
  'PostgreSQL',
  postgresUrl === undefined ? 'PostgreSQL with pgvector is not reachable' : false,
  () =>
    createSqlClient({ kind: 'postgres', url: postgresUrl!, searchPath: `${schema}, public`, poolSize: 4 }),
);

let admin: SqlClient | undefined;
before(async () => {
  if (postgresUrl === undefined) return;
  admin = await createSqlClient({ kind: 'postgres', url: postgresUrl, poolSize: 1 });
  await ensureVectorExtension(admin);
  await admin.query(`CREATE SCHEMA ${schema}`);
});
after(async () => {
  for (const client of shared.values()) await (await client).close();
  await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin?.close();
});

for (const target of [pglite, postgres]) {
  vectorDbContract({
    name: `pgvector on ${target.name}`,
    skip: target.skip,
    open: async () => createVectorDb({ kind: 'pgvector', sql: await target.sql() }),
  });
}

const ids = (hits: { id: string }[] | undefined) => (hits ?? []).map((hit) => hit.id);

for (const target of [pglite, postgres]) {
  describe(`pgvector adapter on ${target.name}`, { skip: target.skip }, () => {
    let db: PgvectorVectorDb;
    let sql: SqlClient;
    let counter = 0;
    const fresh = () => `pgv_${process.pid}_${++counter}`;

    before(async () => {
      sql = await target.sql();
      db = await PgvectorVectorDb.open({ sql });
    });
    after(async () => {
      await db?.close();
    });

    test('a 1 % filter returns exactly limit hits, those of an exact search, by an exact scan', async () => {
      const name = fresh();
      const distance: DistanceFunction = 'COSINE';
      const fixture = clusteredFixture({
        count: 2000,
        dimension: 8,
        clusters: 4,
        seed: 38,
        flags: { rare: 0.01, common: 0.6 },
      });
      // A small graph (m 8, ef_construction 32) builds fast in PGlite; the broad filter still reaches 0.9.
      await db.createCollection({ name, dimension: 8, distance, hnsw: { m: 8, efConstruction: 32 } });
      await db.upsert(
        name,
        fixture.ids.map((id, i) => ({ id, vector: fixture.vector(i), payload: fixture.payloads[i] })),
      );
      const queries = fixture.queries(5, 7);
      const limit = 10;
      const rare: Filter[] = [{ field: 'rare', op: 'IN', values: ['true'] }];
      const statsBefore = db.searchStats();
      const answers = await db.search({
        collection: name,
        queries: queries.map((vector) => ({ vector })),
        filters: rare,
        limit,
        indexedOnly: true,
      });
      const truth = queries.map((q) =>
        exactSearch(
          fixture.vectors,
          8,
          q,
          limit,
          distance,
          (row) => fixture.payloads[row]!.rare === true,
        ).indices.map((row) => fixture.ids[row]!),
      );
      answers.forEach((hits, q) => {
        assert.equal(hits.length, limit);
        assert.deepEqual(ids(hits), truth[q]);
      });
      const statsAfter = db.searchStats();
      assert.equal(statsAfter.exact - statsBefore.exact, queries.length, 'planned as exact scans');
      assert.equal(statsAfter.hnsw, statsBefore.hnsw);

      // A broad filter goes through the HNSW index, and still answers `limit` hits of good recall.
      const common: Filter[] = [{ field: 'common', op: 'IN', values: ['true'] }];
      const broad = await db.search({
        collection: name,
        queries: queries.map((vector) => ({ vector })),
        filters: common,
        limit,
      });
      const broadTruth = queries.map((q) =>
        exactSearch(
          fixture.vectors,
          8,
          q,
          limit,
          distance,
          (row) => fixture.payloads[row]!.common === true,
        ).indices.map((row) => fixture.ids[row]!),
      );
      for (const hits of broad) assert.equal(hits.length, limit);
      assert.ok(recall(broad.map(ids), broadTruth) >= 0.9, 'HNSW recall on a broad filter');
      assert.ok(db.searchStats().hnsw > statsAfter.hnsw, 'the broad filter went through the index');
    });

    test('an HNSW pass that comes back short is answered by an exact scan', async () => {
      // A planner that never scans exactly, and points the graph cannot return: pgvector leaves
      // zero vectors out of a cosine index. The filter admits only those, so the HNSW pass finds
      // nothing. 3,000 points, so that PostgreSQL takes the index for the ORDER BY … LIMIT even with
      // statistics (on 400 it scans the table once it has analysed it); a small graph builds fast.
      const forced = await PgvectorVectorDb.open({
        sql,
        planner: { exactScanRatio: 0, exactScanMinCandidates: 0 },
      });
      try {
        const name = fresh();
        await forced.createCollection({
          name,
          dimension: 4,
          distance: 'COSINE',
          hnsw: { m: 4, efConstruction: 16 },
        });
        await forced.upsert(
          name,
          Array.from({ length: 3000 }, (_, i) => ({
            id: i < 20 ? `z${String(i).padStart(2, '0')}` : `n${i}`,
            vector: i < 20 ? [0, 0, 0, 0] : [Math.sin(i), Math.cos(i), Math.sin(i * 3), 1],
            payload: { kind: i < 20 ? 'zero' : 'normal' },
          })),
        );
        const [hits] = await forced.search({
          collection: name,
          queries: [{ vector: [1, 0, 0, 1] }],
          filters: [{ field: 'kind', op: 'NOT_IN', values: ['normal'] }],
          limit: 10,
        });
        assert.deepEqual(
          ids(hits),
          Array.from({ length: 10 }, (_, i) => `z0${i}`),
        );
        assert.ok(hits!.every((hit) => hit.score === 0));
        const stats = forced.searchStats();
        assert.deepEqual(stats, { exact: 0, hnsw: 0, hnswShort: 1, candidateCounts: 1 });
      } finally {
        await forced.close();
      }
    });

    test('concurrent searches of different widths on one client each search at their own width', async () => {
      // A weak graph (as the contract's width test builds), where a narrow search misses neighbours a
      // wide one finds. Searched alone, then all at once interleaved: on PostgreSQL each search's
      // hnsw.ef_search stays on the pooled connection after it (sql-client.ts, queryWithSettings),
      // so a search that ran under another's width would answer differently.
      const name = fresh();
      const fixture = clusteredFixture({ count: 3_000, dimension: 16, clusters: 30, seed: 11, spread: 1 });
      await db.createCollection({
        name,
        dimension: 16,
        distance: 'EUCLIDEAN',
        hnsw: { m: 6, efConstruction: 12, efSearch: 1 },
      });
      const points = fixture.ids.map((id, i) => ({ id, vector: fixture.vector(i) }));
      for (let at = 0; at < points.length; at += 1_000) await db.upsert(name, points.slice(at, at + 1_000));
      const queries = fixture.queries(12, 12);
      const search = async (vector: Float32Array, efSearch: number) =>
        ids((await db.search({ collection: name, queries: [{ vector }], limit: 10, efSearch }))[0]);
      const widths = [1, 400];
      const alone = new Map<string, string[]>();
      for (const [q, vector] of queries.entries()) {
        for (const ef of widths) alone.set(`${q}@${ef}`, await search(vector, ef));
      }
      const differ = queries.filter((_, q) => alone.get(`${q}@1`)!.join() !== alone.get(`${q}@400`)!.join());
      assert.ok(differ.length >= 3, `the widths answer differently for only ${differ.length} queries`);
      const before = db.searchStats();
      const together = await Promise.all(
        [...queries.entries()].flatMap(([q, vector]) =>
          [...widths, ...widths].map(async (ef) => ({ key: `${q}@${ef}`, hits: await search(vector, ef) })),
        ),
      );
      for (const { key, hits } of together) assert.deepEqual(hits, alone.get(key), key);
      assert.equal(
        db.searchStats().hnsw - before.hnsw,
        together.length,
        'every search went through the index',
      );
    });

    test('a filter counted broad plans later searches without counting until a write makes it selective', async () => {
      const name = fresh();
      await db.createCollection({
        name,
        dimension: 4,
        distance: 'EUCLIDEAN',
        hnsw: { m: 8, efConstruction: 32 },
      });
      const total = 2_000;
      await db.upsert(
        name,
        Array.from({ length: total }, (_, i) => ({
          id: `p${String(i).padStart(4, '0')}`,
          vector: [Math.sin(i), Math.cos(i), Math.sin(i * 3), Math.cos(i * 5)],
          payload: { group: 'a' },
        })),
      );
      const filters: Filter[] = [{ field: 'group', op: 'IN', values: ['a'] }];
      const search = async () =>
        (
          await db.search({ collection: name, queries: [{ vector: [0.5, 0.5, 0, 0] }], filters, limit: 10 })
        )[0]!;
      const start = db.searchStats();
      // Three at once share one count; the next is planned from it.
      for (const hits of await Promise.all([search(), search(), search()])) assert.equal(hits.length, 10);
      assert.equal((await search()).length, 10);
      const broad = db.searchStats();
      assert.equal(broad.candidateCounts - start.candidateCounts, 1, 'counted once, then remembered');
      assert.equal(broad.hnsw - start.hnsw, 4, 'a filter matching every point goes through the index');
      // All but five points leave the group: the remembered count would send the next search through
      // the index, which finds five of 2,000 only by walking far (or comes back short).
      const kept = new Set(['p0003', 'p0500', 'p0999', 'p1400', 'p1999']);
      const leaving = Array.from({ length: total }, (_, i) => `p${String(i).padStart(4, '0')}`).filter(
        (id) => !kept.has(id),
      );
      await db.setPayload(name, leaving, { group: 'b' });
      const hits = await search();
      assert.deepEqual(ids(hits).sort(), [...kept].sort());
      const selective = db.searchStats();
      assert.equal(selective.candidateCounts - broad.candidateCounts, 1, 'counted again after the write');
      assert.equal(selective.exact - broad.exact, 1, 'planned as an exact scan');
      assert.equal(selective.hnsw + selective.hnswShort, broad.hnsw + broad.hnswShort, 'no HNSW pass');
      // Deleting points forgets the count too.
      await db.delete(name, ['p0003']);
      assert.equal((await search()).length, 4);
      assert.equal(
        db.searchStats().candidateCounts - selective.candidateCounts,
        1,
        'counted after the delete',
      );
    });

    test('vector up to 2,000 dimensions, halfvec up to 4,000, INVALID_ARGUMENT beyond', async () => {
      const typeOf = async (collection: string) => {
        const { rows } = await sql.query<{ type: string }>(
          `SELECT format_type(a.atttypid, a.atttypmod) AS type
             FROM vectordb_collections c
             JOIN pg_attribute a ON a.attrelid = to_regclass('vectordb_points_' || c.table_id) AND a.attname = 'embedding'
            WHERE c.name = $1`,
          [collection],
        );
        return rows[0]?.type;
      };
      const [small, half, huge] = [fresh(), fresh(), fresh()];
      await db.createCollection({ name: small, dimension: 2000, distance: 'DOT' });
      await db.createCollection({ name: half, dimension: 2500, distance: 'COSINE', hnsw: { m: 4 } });
      assert.equal(await typeOf(small), 'vector(2000)');
      assert.equal(await typeOf(half), 'halfvec(2500)');
      await rejectsWith(
        db.createCollection({ name: huge, dimension: 4001, distance: 'DOT' }),
        'INVALID_ARGUMENT',
        'dimension',
        /at most 4000/,
      );
      assert.ok(!(await db.listCollections()).includes(huge));

      const vector = (seed: number) => Array.from({ length: 2500 }, (_, d) => Math.sin(seed * 7 + d) / 3);
      await db.upsert(
        half,
        Array.from({ length: 20 }, (_, i) => ({ id: `h${i}`, vector: vector(i) })),
      );
      const [stored] = await db.getPoints(half, ['h3']);
      // Half precision: close to the float32 written, not equal to it.
      const written = Float32Array.from(vector(3));
      assert.equal(stored!.vector!.length, 2500);
      assert.ok(stored!.vector!.every((v, d) => Math.abs(v - written[d]!) < 1e-3));
      assert.ok(
        stored!.vector!.some((v, d) => v !== written[d]),
        'stored as halfvec',
      );
      const [hits] = await db.search({ collection: half, queries: [{ vector: vector(3) }], limit: 3 });
      assert.equal(hits![0]!.id, 'h3');
      assert.ok(Math.abs(hits![0]!.score - 1) < 1e-3);
    });

    test('info is truthful: every committed point is indexed, and an invalid index indexes none', async () => {
      const name = fresh();
      await db.createCollection({
        name,
        dimension: 3,
        distance: 'EUCLIDEAN',
        hnsw: { m: 6, efConstruction: 40 },
      });
      await db.upsert(
        name,
        Array.from({ length: 30 }, (_, i) => ({ id: `t${i}`, vector: [i, 1, -i] })),
      );
      assert.deepEqual(await db.collectionInfo(name), {
        name,
        dimension: 3,
        distance: 'EUCLIDEAN',
        hnsw: { m: 6, efConstruction: 40, efSearch: 96 },
        points: 30,
        indexedPoints: 30,
        status: 'READY',
      });
      const { rows } = await sql.query<{ table_id: number }>(
        'SELECT table_id FROM vectordb_collections WHERE name = $1',
        [name],
      );
      const table = `vectordb_points_${rows[0]!.table_id}`;
      const index = await sql.query<{ def: string }>(`SELECT pg_get_indexdef(to_regclass($1)) AS def`, [
        `${table}_hnsw`,
      ]);
      assert.match(
        index.rows[0]!.def,
        /USING hnsw \(embedding vector_l2_ops\) WITH \(m='?6'?, ef_construction='?40'?\)/,
      );
      // An index PostgreSQL marks invalid (a failed concurrent build) answers nothing.
      await sql.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass($1)`, [
        `${table}_hnsw`,
      ]);
      const info = await db.collectionInfo(name);
      assert.deepEqual([info.points, info.indexedPoints, info.status], [30, 0, 'FAILED']);
    });

    test('a collection dropped and created again by another process is found again', async () => {
      const name = fresh();
      await db.createCollection({ name, dimension: 2, distance: 'DOT' });
      await db.upsert(name, [{ id: 'a', vector: [1, 0] }]);
      // Another adapter on the same database, as another process would be.
      const other = await PgvectorVectorDb.open({ sql });
      try {
        assert.equal(await other.dropCollection(name), true);
        await other.createCollection({ name, dimension: 3, distance: 'DOT' });
      } finally {
        await other.close();
      }
      // This adapter still holds the old table: it finds it gone and reads the catalog again.
      await db.upsert(name, [{ id: 'b', vector: [1, 2, 3] }]);
      assert.deepEqual(await db.getPoints(name, ['a', 'b'], { withVector: false }), [
        undefined,
        { id: 'b', payload: {} },
      ]);
      assert.equal((await db.collectionInfo(name)).dimension, 3);
    });
  });
}
