/**
 * Migrations 6 and 7 on a database written before them: embeddings tables with `real[]` vectors and
 * an ingestion ledger keyed by text. Vectors come out of the conversion bit for bit, flags stay, the
 * ledger still counts a redelivered event once, and a `real[]` table adopted by a new store is
 * converted the same way. On PGlite (a fresh database) and PostgreSQL (a fresh schema).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSqlClient, migrate, type SqlClient } from '../../../src/platform/sql/index.js';
import {
  migrateVssStore,
  openVssStore,
  VSS_MIGRATIONS_TABLE,
  vssMigrations,
} from '../../../src/vss/store/index.js';
import { ModelsRepository } from '../../../src/vss/store/models-repository.js';
import { realServer, uniqueName } from '../../support/servers.js';
import { newModel } from './fixtures.js';

/** The embeddings table as EntityTables created it before migration 6. */
const legacyTable = (name: string) => `
  CREATE TABLE ${name} (
    model_name text NOT NULL,
    version integer NOT NULL CHECK (version > 0),
    id text NOT NULL,
    embedding real[] NOT NULL,
    search_embedding real[],
    expires_at timestamptz,
    to_be_indexed_organic boolean,
    PRIMARY KEY (model_name, version, id)
  )`;

/** Values as SQL text wrote them, and the float32 each must become. */
const LITERALS = [
  '-0',
  'Infinity',
  '-Infinity',
  'NaN',
  '1.4e-45',
  '-1.1754942e-38',
  '3.4028235e38',
  '0.1',
  '-2.5',
];
const EXPECTED = Float32Array.from([
  -0,
  Infinity,
  -Infinity,
  Number.NaN,
  1.4e-45,
  -1.1754942e-38,
  3.4028235e38,
  0.1,
  -2.5,
]);
const bitsOf = (vector: Float32Array) =>
  [...new Uint32Array(vector.buffer, vector.byteOffset, vector.length)].map((b) => b.toString(16));
const key = (i: number) => i.toString(16).padStart(32, 'a');

function legacyLayoutSuite(name: string, open: () => Promise<SqlClient>, skip: string | false = false) {
  describe(`migrations 6 and 7 on a legacy layout, ${name}`, { skip }, () => {
    let sql: SqlClient | undefined;
    after(() => sql?.close());

    test('real[] vectors become float32 bytes bit for bit; the ledger keeps counting each event once', async () => {
      sql = await open();
      await migrate(
        sql,
        vssMigrations.filter((m) => m.version <= 5),
        { table: VSS_MIGRATIONS_TABLE },
      );
      await sql.query(
        `INSERT INTO vss_stores (store_id, entity, db_conf_id, embeddings_table, aggregator_table)
         VALUES (1, 'legacy', 'main', 'legacy_emb', 'legacy_agg')`,
      );
      await sql.query('CREATE TABLE legacy_agg (id text PRIMARY KEY)');
      await sql.query(legacyTable('legacy_emb'));
      await sql.query(legacyTable('orphan_emb')); // a store registered later adopts it
      await new ModelsRepository(sql).create(newModel('legacy', 1));
      const literal = `'{${LITERALS.join(',')}}'::real[]`;
      for (const table of ['legacy_emb', 'orphan_emb']) {
        await sql.query(
          `INSERT INTO ${table} (model_name, version, id, embedding, search_embedding, to_be_indexed_organic)
           VALUES ('m1', 1, 'special', ${literal}, NULL, true),
                  ('m1', 1, 'searched', '{1,2}'::real[], ${literal}, NULL)`,
        );
      }
      // Three events of job j1 processed before the upgrade.
      await sql.query(
        `INSERT INTO vss_ingestion_events (entity, model_name, version, event_key, job_id, rejected, points)
         VALUES ('legacy', 'm1', 1, $1, 'j1', false, 1), ('legacy', 'm1', 1, $2, 'j1', false, 1),
                ('legacy', 'm1', 1, $3, 'j1', true, 0)`,
        [key(1), key(2), key(3)],
      );

      assert.deepEqual(await migrateVssStore(sql), {
        applied: vssMigrations.filter((m) => m.version > 5).map((m) => m.version),
        current: vssMigrations.length,
      });
      const store = await openVssStore(sql);
      const types = await sql.query<{ type: string }>(
        `SELECT DISTINCT format_type(atttypid, atttypmod) AS type FROM pg_attribute
          WHERE attrelid = 'legacy_emb'::regclass AND attname IN ('embedding', 'search_embedding')`,
      );
      assert.deepEqual(types.rows, [{ type: 'bytea' }]);
      const rows = await store.embeddings.read('legacy_emb', {
        modelName: 'm1',
        version: 1,
        ids: ['special', 'searched'],
      });
      assert.deepEqual(bitsOf(rows.get('special')!.embedding), bitsOf(EXPECTED));
      assert.deepEqual(bitsOf(rows.get('special')!.searchEmbedding), bitsOf(EXPECTED));
      assert.deepEqual(rows.get('special')!.toBeIndexed, { organic: true });
      assert.deepEqual([...rows.get('searched')!.embedding], [1, 2]);
      assert.deepEqual(bitsOf(rows.get('searched')!.searchEmbedding), bitsOf(EXPECTED));

      // The orphan table is converted when a store adopts it.
      await store.stores.create({
        storeId: 2,
        entity: 'adopter',
        dbConfId: 'main',
        embeddingsTable: 'orphan_emb',
        aggregatorTable: 'adopter_agg',
      });
      const adopted = await store.embeddings.read('orphan_emb', {
        modelName: 'm1',
        version: 1,
        ids: ['special'],
      });
      assert.deepEqual(bitsOf(adopted.get('special')!.embedding), bitsOf(EXPECTED));

      // Event 2 delivered again after the upgrade, and a new one: four distinct events, not five.
      const event = (i: number, rejected = false) => ({
        entity: 'legacy',
        modelName: 'm1',
        version: 1,
        eventKey: key(i),
        jobId: 'j1',
        rejected,
        points: rejected ? 0 : 1,
      });
      await store.ingestion.recordEvents([event(2), event(4)]);
      const outcome = await store.ingestion.recordMarker(
        { entity: 'legacy', modelName: 'm1', version: 1, jobId: 'j1', partition: 0 },
        1,
      );
      assert.deepEqual(outcome.completed?.counts, { events: 4, applied: 3, rejected: 1, pointsWritten: 3 });
    });
  });
}

legacyLayoutSuite('PGlite', () => createSqlClient({ kind: 'pglite' }));

const url = await realServer('postgres');
const schema = uniqueName('lattice_vss_legacy').toLowerCase();
let admin: SqlClient | undefined;
legacyLayoutSuite(
  'PostgreSQL',
  async () => {
    admin = await createSqlClient({ kind: 'postgres', url: url ?? '', poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    return createSqlClient({ kind: 'postgres', url: url ?? '', searchPath: schema, poolSize: 2 });
  },
  url === undefined ? 'PostgreSQL is not reachable' : false,
);
after(async () => {
  await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin?.close();
});
