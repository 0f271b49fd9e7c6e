import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isLatticeError } from '../../src/platform/errors.js';
import { HttpServer } from '../../src/platform/http/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Metrics } from '../../src/platform/metrics/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';
import { createSqlClient } from '../../src/platform/sql/index.js';
import { EmbeddedVectorDb, PgvectorVectorDb } from '../../src/platform/vectordb/index.js';
import { startQdrantStandIn } from '../support/qdrant-stand-in.js';
import { eventually, realServer, uniqueName } from '../support/servers.js';

const logger = createLogger('test', { level: 'silent' });
const postgresUrl = await realServer('postgres');

function platformOn(env: Record<string, string>): Platform {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-platform-'));
  return new Platform(loadSettings({ env: { LATTICE_DATA_DIR: dataDir, ...env } }), {
    logger,
    metrics: new Metrics(),
  });
}

async function readyz(platform: Platform): Promise<{ status: number; checks: Record<string, string> }> {
  const ops = new HttpServer({
    name: 'ops',
    host: '127.0.0.1',
    port: 0,
    logger,
    metrics: platform.metrics,
    readiness: platform.readiness(),
  });
  const port = await ops.start();
  try {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`);
    const body = (await response.json()) as { checks: Record<string, string> };
    return { status: response.status, checks: body.checks };
  } finally {
    await ops.stop();
  }
}

describe('Platform owns the vector database', () => {
  test('builds the embedded one by default, in <dataDir>/vectordb, once per process', async () => {
    const platform = platformOn({});
    try {
      const [db, again] = await Promise.all([platform.vectorDb(), platform.vectorDb()]);
      assert.equal(db, again);
      assert.ok(db instanceof EmbeddedVectorDb);
      assert.ok(existsSync(platform.settings.vss.vectorDb.dir));
      assert.equal(platform.settings.vss.vectorDb.dir, join(platform.settings.dataDir, 'vectordb'));
    } finally {
      await platform.close();
    }
  });

  test('/readyz reports it, and fails while it fails', async () => {
    const platform = platformOn({});
    try {
      const db = await platform.vectorDb();
      const ready = await readyz(platform);
      assert.equal(ready.status, 200, JSON.stringify(ready));
      assert.equal(ready.checks.vectorDb, 'ok');

      await db.close(); // broken underneath the platform: later calls fail UNAVAILABLE
      const notReady = await readyz(platform);
      assert.equal(notReady.status, 503, JSON.stringify(notReady));
      assert.notEqual(notReady.checks.vectorDb, 'ok');
    } finally {
      await platform.close();
    }
  });

  test('a Qdrant vector database is built from settings; readiness fails when the server goes away', async () => {
    const qdrant = await startQdrantStandIn({ apiKey: 'qdrant-key' });
    const platform = platformOn({
      LATTICE_VSS_VECTOR_DB: 'qdrant',
      LATTICE_QDRANT_URL: qdrant.url,
      LATTICE_QDRANT_API_KEY: 'qdrant-key',
      LATTICE_QDRANT_TIMEOUT_MS: '2000',
    });
    try {
      const db = await platform.vectorDb();
      await db.createCollection({ name: 'platform_probe', dimension: 2, distance: 'DOT' });
      assert.ok(qdrant.requests.some((r) => r.path.includes('platform_probe')));
      await platform.readiness().vectorDb!();
      await qdrant.stop();
      await assert.rejects(platform.readiness().vectorDb!(), (err) => isLatticeError(err, 'UNAVAILABLE'));
    } finally {
      await platform.close();
    }
  });

  test('pgvector is built on the SQL database from settings, each cluster in tables of its own', async () => {
    // On the default PGlite, which then loads the extension.
    const platform = platformOn({
      LATTICE_VSS_VECTOR_DB: 'pgvector',
      LATTICE_VSS_PRODUCTION_VECTOR_DB: 'pgvector',
    });
    try {
      const [experiment, production] = [await platform.vectorDb(), await platform.productionVectorDb()];
      assert.ok(experiment instanceof PgvectorVectorDb);
      assert.ok(production instanceof PgvectorVectorDb);
      assert.notEqual(experiment, production);
      await experiment.createCollection({ name: 'platform_probe', dimension: 2, distance: 'DOT' });
      assert.deepEqual(await production.listCollections(), []);
      const sql = await platform.sqlClient();
      const { rows } = await sql.query<{ name: string }>('SELECT name FROM vectordb_collections');
      assert.deepEqual(rows, [{ name: 'platform_probe' }]);
      await platform.readiness().vectorDb!();
      await platform.readiness().productionVectorDb!();
    } finally {
      await platform.close();
    }
  });

  test('close() closes it: the embedded directory is released and later calls fail UNAVAILABLE', async () => {
    const platform = platformOn({});
    const db = await platform.vectorDb();
    await platform.close();
    await assert.rejects(db.listCollections(), (err) => isLatticeError(err, 'UNAVAILABLE'));
    assert.deepEqual(platform.readiness(), {});
    // The directory lock is gone: another process (here, another open) may use it.
    const reopened = await EmbeddedVectorDb.open({ dir: platform.settings.vss.vectorDb.dir });
    await reopened.close();
  });
});

describe('Platform readiness', () => {
  test('bounds each adapter check by metrics.readyTimeoutMs and names the port that hung', async () => {
    const platform = platformOn({ LATTICE_READY_TIMEOUT_MS: '100' });
    try {
      assert.equal(platform.settings.metrics.readyTimeoutMs, 100);
      await platform.cache();
      // An adapter whose check never answers, as a hung server would.
      (
        platform as unknown as {
          opened: { name: string; ready: () => Promise<void>; close: () => Promise<void> }[];
        }
      ).opened.push({
        name: 'queue',
        ready: () => new Promise<void>(() => {}),
        close: async () => {},
      });
      const checks = platform.readiness();
      await assert.rejects(checks.queue!(), (err) => {
        assert.ok(isLatticeError(err, 'UNAVAILABLE'));
        assert.equal(err.message, 'queue: readiness check timed out after 100 ms');
        return true;
      });
      const { status, checks: answered } = await readyz(platform);
      assert.equal(status, 503);
      assert.deepEqual(answered, { cache: 'ok', queue: 'queue: readiness check timed out after 100 ms' });
    } finally {
      await platform.close();
    }
  });
});

describe('Platform SQL settings', () => {
  test('sql.statementTimeoutMs bounds the statements of the embedded database', async () => {
    const platform = platformOn({ LATTICE_SQL_STATEMENT_TIMEOUT_MS: '200' });
    try {
      const sql = await platform.sqlClient();
      await assert.rejects(sql.query('SELECT pg_sleep(1)'), (err) => {
        assert.ok(isLatticeError(err, 'DEADLINE_EXCEEDED'));
        assert.match(err.message, /statement timeout of 200 ms/);
        return true;
      });
      // PGlite cannot interrupt the sleep: a statement queued behind it fails on time too, and the
      // connection answers again once the sleep has run to its end.
      let answered: unknown;
      await eventually(
        () =>
          sql.query('SELECT 1 AS ok').then(
            ({ rows }) => {
              answered = rows;
              return true;
            },
            (err: unknown) => {
              assert.ok(isLatticeError(err, 'DEADLINE_EXCEEDED'), String(err));
              return false;
            },
          ),
        30_000,
        'the connection to answer after the sleep',
      );
      assert.deepEqual(answered, [{ ok: 1 }]);
    } finally {
      await platform.close();
    }
  });
});

describe('Platform SQL settings on PostgreSQL', { skip: postgresUrl === undefined }, () => {
  test('sql.schema with pgvector: the tables in the schema, the vector extension found where it was created', async () => {
    const schema = uniqueName('lattice_platform').toLowerCase();
    const admin = await createSqlClient({ kind: 'postgres', url: postgresUrl!, poolSize: 1 });
    let platform: Platform | undefined;
    try {
      // Where an administrator creates it, once per database (public, the default schema).
      await admin.query('CREATE EXTENSION IF NOT EXISTS vector');
      const { rows: at } = await admin.query<{ schema: string }>(
        `SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'vector'`,
      );
      assert.notEqual(at[0]?.schema, schema);
      await admin.query(`CREATE SCHEMA ${schema}`);
      platform = platformOn({
        LATTICE_SQL: 'postgres',
        LATTICE_POSTGRES_URL: postgresUrl!,
        LATTICE_POSTGRES_SCHEMA: schema,
        LATTICE_VSS_VECTOR_DB: 'pgvector',
      });
      const db = await platform.vectorDb();
      await db.createCollection({ name: 'schema_probe', dimension: 2, distance: 'EUCLIDEAN' });
      await db.upsert('schema_probe', [
        { id: 'a', vector: [0, 0] },
        { id: 'b', vector: [3, 4] },
      ]);
      const [hits] = await db.search({ collection: 'schema_probe', queries: [{ vector: [3, 3] }], limit: 1 });
      assert.deepEqual(
        hits!.map((h) => h.id),
        ['b'],
      );
      const sql = await platform.sqlClient();
      assert.deepEqual((await sql.query('SELECT current_schema() AS s')).rows, [{ s: schema }]);
      const { rows } = await admin.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
        [schema, 'vectordb_collections'],
      );
      assert.deepEqual(rows, [{ n: 1 }], 'the catalog lives in the schema');
    } finally {
      await platform?.close();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    }
  });
});

describe('Platform queue', () => {
  test('counts what the memory queue discards in queue_discarded_messages_total{topic,reason}', async () => {
    const platform = platformOn({});
    try {
      const queue = await platform.queue();
      await queue.ensureTopic('bounded', { maxBytes: 2048, deadLetterTopic: false });
      for (let i = 0; i < 5; i++) await queue.publish('bounded', new Uint8Array(1000));
      assert.deepEqual(await queue.topicStats('bounded'), { messages: 2, bytes: 2000 });
      const { body } = await platform.metrics.scrape();
      assert.match(body, /queue_discarded_messages_total\{topic="bounded",reason="bytes"\} 3\b/);
    } finally {
      await platform.close();
    }
  });
});
