/**
 * vss scaled out on PostgreSQL + NATS JetStream + pgvector (issue 38): two `lattice vss` processes
 * share one model, each running serving and the consumers (a share of the partitions each: `0-3`
 * and `4-7`), admin in the first only (`lattice vss --no-admin` for the second), with the variant's
 * vector database pgvector on the same PostgreSQL (LATTICE_VSS_VECTOR_DB=pgvector), in a schema of
 * its own (the `vector` extension in public, where an administrator creates it).
 *
 * The model is onboarded through the admin API and reset twice, from its training data as a user
 * resets (JSON Lines files under `training_data_path`: the admin's job publishes them as embedding
 * events and EOF markers, both processes' consumers ingest them): version 1 (a small one, ids `a…`),
 * then version 2 of 30,000 rows (ids `b…`), during whose `ingesting` step the admin process is
 * SIGKILLed and restarted at once (its job is taken over when its lease lapses, what its consumers
 * held comes back after the ack wait).
 *
 * Throughout, a search loop asks both processes the same queries at once. Each answer is of one
 * version (its ids' prefix); whenever both answer from the same version, they answer the same
 * candidates; a process never goes back to version 1 once it answered from version 2; and the flip
 * to version 2 reaches both within one second of each other (the configuration's LISTEN/NOTIFY).
 * At the end every row of version 2 is in the embedding store and the collection exactly once, with
 * its vector, and the reset counted it once: the operation's ingestion counts, the job's rows and
 * the version's `ingested_count` are all 30,000, with no retry.
 *
 * VSS_SCALE_OUT_SEED replays a run's kill point (each run prints its seed).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { seededRandom } from '../../src/platform/random.js';
import { createSqlClient, type SqlClient } from '../../src/platform/sql/index.js';
import { createVectorDb } from '../../src/platform/vectordb/index.js';
import { collectionName } from '../../src/vss/model/index.js';
import { openVssStore } from '../../src/vss/store/index.js';
import { adminCall, registerModelBody } from '../support/admin-http.js';
import { type LatticeVssProcess, startLatticeVss } from '../support/lattice-vss-process.js';
import { assertResetIngestedOnce } from '../support/reset-checks.js';
import { eventually, realServer } from '../support/servers.js';
import { seededVector, storedRows } from '../support/vss-ingest-catalog.js';
import { type IsolatedSettings, isolatedDistributedSettings } from '../support/vss-stack.js';
import { writeJsonLinesFile } from '../vss/admin/jobs/training-data.js';
import { Client } from '../vss/serving/harness.js';

const ROWS = 30_000;
const FIRST_ROWS = 500;
const FILES = 3;
const DIMENSION = 16;
const ENTITY = 'scaled';
const MODEL = 'shared';
const VARIANT = 'all';
const TABLE = 'scaled_embeddings';
const QUERIES = 2;
/** The search loop's pause between rounds, ms: how finely it sees each process's flip. */
const ROUND_PAUSE_MS = 20;
const SEED = Number(process.env.VSS_SCALE_OUT_SEED ?? Math.floor(Math.random() * 2 ** 31));

const [natsUrl, postgresUrl] = [await realServer('nats'), await realServer('postgres')];

/**
 * The server, when it has pgvector to offer (scripts/test-services.sh builds it there), with the
 * extension created in public as an administrator does; without it the test skips saying why, as
 * tests of an absent server do (CI requires it).
 */
async function pgvectorServer(): Promise<string | undefined> {
  if (postgresUrl === undefined) return undefined;
  const sql = await createSqlClient({ kind: 'postgres', url: postgresUrl, poolSize: 1 });
  try {
    const { rows } = await sql.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    if (rows.length > 0) {
      await sql.query('CREATE EXTENSION IF NOT EXISTS vector').catch(() => {}); // another test's at once
      return postgresUrl;
    }
  } finally {
    await sql.close();
  }
  const reason = `PostgreSQL at ${postgresUrl} has no pgvector extension (scripts/test-services.sh builds it)`;
  if (process.env.CI) throw new Error(`${reason}; CI requires it`);
  console.log(`# skipping the pgvector scale-out test: ${reason}`);
  return undefined;
}
const pgvectorUrl = await pgvectorServer();

/** Version 1's rows are `a<i>`, version 2's `b<i>`: an answer's ids say which version it came from. */
const idOf = (prefix: 'a' | 'b', i: number) => `${prefix}${i}`;
/** Version 2's vectors differ from version 1's (another seed range) so the two answer differently. */
const vectorOf = (prefix: 'a' | 'b', i: number) =>
  seededVector(prefix === 'a' ? 1_000_000 + i : i, DIMENSION);

function writeTraining(dir: string, prefix: 'a' | 'b', rows: number): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const per = Math.ceil(rows / FILES);
  for (let f = 0; f < FILES; f++) {
    const lines = [];
    for (let i = f * per; i < Math.min(rows, (f + 1) * per); i++) {
      lines.push({ id: idOf(prefix, i), emb: vectorOf(prefix, i), flag: true });
    }
    writeJsonLinesFile(join(dir, `part-${f}.jsonl`), lines);
  }
}

/** One process of the pair: how to start it again after a kill, and a client of its serving. */
class Member {
  process: LatticeVssProcess | undefined;
  client: Client | undefined;
  /** Searches it did not answer (down, starting), and the last reason. */
  unanswered = 0;
  lastRefusal = '';
  constructor(
    readonly name: string,
    private readonly start: () => Promise<LatticeVssProcess>,
  ) {}

  async run(): Promise<void> {
    this.process = await this.start();
    this.client = new Client(this.process.servingAddress!);
  }

  async kill(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    client?.close();
    await this.process?.kill();
    this.process = undefined;
  }

  /** The ids of a Search's candidates, or undefined when the process does not answer. */
  async search(query: readonly number[]): Promise<string[] | undefined> {
    const client = this.client;
    if (client === undefined) return this.refused('down');
    try {
      const response = await client.search({
        entity: ENTITY,
        modelName: MODEL,
        variant: VARIANT,
        queries: [{ embedding: { values: [...query] }, filters: [], pageToken: '' }],
        pageSize: 10,
      });
      const result = response.results[0]!;
      if (result.error !== '') return this.refused(result.error);
      return result.candidates.map((c) => c.id);
    } catch (err) {
      return this.refused(err instanceof Error ? err.message : String(err));
    }
  }

  private refused(reason: string): undefined {
    this.unanswered++;
    this.lastRefusal = reason;
    return undefined;
  }
}

/** One answer of the search loop: when it was asked and answered, and from which version. */
interface Answer {
  sentAt: number;
  answeredAt: number;
  version: 1 | 2;
}

/**
 * Asks both members each query at once, round after round, until stopped, and checks each round as
 * it comes: every answer is of one version; when both answer from the same version they answer the
 * same candidates; and every answer to a query from a version is the one first given to it (a
 * version's collection does not change once it serves). Keeps each member's answers, in order, for
 * the flip checks.
 */
class SearchLoop {
  readonly answers = new Map<string, Answer[]>();
  rounds = 0;
  /** Queries both answered from the same version. */
  compared = 0;
  failure: Error | undefined;
  /** The first answer to each query from each version. */
  private readonly first = new Map<string, string[]>();
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(
    private readonly members: readonly Member[],
    private readonly queries: readonly (readonly number[])[],
  ) {
    for (const m of members) this.answers.set(m.name, []);
    this.done = this.loop().catch((err: Error) => {
      this.failure = err;
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      for (const [q, query] of this.queries.entries()) {
        const sentAt = performance.now();
        const ids = await Promise.all(this.members.map((m) => m.search(query)));
        const answeredAt = performance.now();
        const versions = ids.map((list, k) =>
          list === undefined ? undefined : versionOf(list, this.members[k]!),
        );
        ids.forEach((list, k) => {
          if (list === undefined) return;
          const member = this.members[k]!;
          const version = versions[k]!;
          this.answers.get(member.name)!.push({ sentAt, answeredAt, version });
          const key = `${q}:${version}`;
          const first = this.first.get(key);
          if (first === undefined) this.first.set(key, list);
          else assert.deepEqual(list, first, `${member.name}: query ${q} on version ${version} as before`);
        });
        if (ids[0] !== undefined && ids[1] !== undefined && versions[0] === versions[1]) {
          assert.deepEqual(ids[1], ids[0], `version ${versions[0]}: both processes answer the same`);
          this.compared++;
        }
      }
      this.rounds++;
      await new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
    if (this.failure) throw this.failure;
  }
}

function versionOf(ids: readonly string[], member: Member): 1 | 2 {
  assert.equal(ids.length, 10, `${member.name}: a full page`);
  const prefixes = new Set(ids.map((id) => id[0]));
  assert.equal(prefixes.size, 1, `${member.name}: an answer of one version, got ${ids.join(',')}`);
  return ids[0]![0] === 'a' ? 1 : 2;
}

async function register(base: string, training: string): Promise<void> {
  const calls: [string, Record<string, unknown>][] = [
    [
      '/register-store',
      {
        store_id: 38,
        entity: ENTITY,
        db_conf_id: 'shared',
        embeddings_table: TABLE,
        aggregator_table: 'scaled_attributes',
      },
    ],
    [
      '/register-model',
      registerModelBody({
        entity: ENTITY,
        modelName: MODEL,
        storeId: 38,
        dimension: DIMENSION,
        trainingDataPath: `file://${training}`,
      }),
    ],
    [
      '/register-variant',
      {
        entity: ENTITY,
        model_name: MODEL,
        variant: VARIANT,
        vss_filter: { criteria: [] },
        vectordb_type: 'PGVECTOR',
        // A light graph: pgvector indexes each point as it is written, and at HNSW's defaults (m 16,
        // ef_construction 128) that is most of the reset's work; 16-d data keeps its recall.
        vectordb_config: { hnsw: { m: 8, ef_construction: 16 } },
        job_frequency: 'FREQ_1W',
      },
    ],
  ];
  for (const [path, body] of calls) {
    const response = await adminCall(base, 'POST', path, body);
    assert.equal(response.status, 201, `${path}: ${JSON.stringify(response.json)}`);
  }
}

test('two lattice vss processes on PostgreSQL + JetStream + pgvector share a model through a reset and a SIGKILL', {
  skip: natsUrl === undefined || pgvectorUrl === undefined,
  timeout: 300_000,
}, async (t) => {
  const began = performance.now();
  const log = (line: string) => t.diagnostic(`${((performance.now() - began) / 1000).toFixed(1)}s ${line}`);
  log(`seed ${SEED} (VSS_SCALE_OUT_SEED replays the kill point)`);
  const next = seededRandom(SEED);
  const dir = mkdtempSync(join(tmpdir(), 'lattice-scale-out-pg-'));
  const training = join(dir, 'training');
  let isolated: IsolatedSettings | undefined;
  let sql: SqlClient | undefined;
  let loop: SearchLoop | undefined;
  const members: Member[] = [];
  try {
    isolated = await isolatedDistributedSettings(
      dir,
      { nats: natsUrl!, postgres: pgvectorUrl! },
      'scaleout',
      {
        // A short ack wait and job lease, so what the killed process held comes back in seconds;
        // batches of up to 1,000 events.
        consumers: { ackWaitMs: 2000, batchSize: 1000 },
        // The recall gate on 50 sampled vectors rather than 200: recall is not what this test is about.
        admin: { pollIntervalMs: 200, jobRunner: { leaseMs: 2000 }, recallSampleSize: 50 },
      },
    );
    const { settingsFile } = isolated;
    mkdirSync(training); // the training data roots must exist when admin starts
    // Each process a data directory of its own, as on hosts of their own: all they share is in
    // PostgreSQL and JetStream.
    const envOf = (name: string) => ({
      LATTICE_DATA_DIR: join(dir, name),
      LATTICE_VSS_VECTOR_DB: 'pgvector',
      LATTICE_VSS_TRAINING_DATA_ROOTS: training,
    });
    const admin = new Member('admin process', () =>
      startLatticeVss({ command: 'vss', args: ['--partitions', '0-3'], env: envOf('one'), settingsFile }),
    );
    const other = new Member('process without admin', () =>
      startLatticeVss({
        command: 'vss',
        args: ['--no-admin', '--partitions', '4-7'],
        env: envOf('two'),
        settingsFile,
      }),
    );
    members.push(admin, other);
    await Promise.all(members.map((m) => m.run()));
    assert.ok(admin.process!.adminUrl, admin.process!.output());
    assert.equal(other.process!.adminUrl, undefined, 'admin runs in one process only');
    log('both processes are up');
    const adminUrl = () => admin.process!.adminUrl!;

    writeTraining(training, 'a', FIRST_ROWS);
    await register(adminUrl(), training);
    const reset = async () => {
      const answer = await adminCall(adminUrl(), 'POST', '/reset-model', {
        entity: ENTITY,
        model_name: MODEL,
      });
      assert.equal(answer.status, 202, JSON.stringify(answer.json));
      return String(answer.json.operation_id);
    };
    const operation = async (id: string) => (await adminCall(adminUrl(), 'GET', `/operations/${id}`)).json;
    const succeeded = async (id: string) => {
      let last: Record<string, unknown> = {};
      let traced: unknown;
      await eventually(
        async () => {
          last = await operation(id);
          if (loop?.failure) throw loop.failure;
          if (last.step !== traced) {
            traced = last.step;
            const job = (last.result as { job?: { rows_published?: number } } | null)?.job;
            log(`operation ${id}: ${String(last.step)} (${job?.rows_published ?? 0} rows published)`);
          }
          assert.notEqual(last.status, 'FAILED', `the operation failed: ${String(last.last_error)}`);
          return last.status === 'SUCCEEDED';
        },
        240_000,
        `operation ${id} to succeed`,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; it is at ${JSON.stringify(last)}`);
      });
      return last;
    };
    await succeeded(await reset());
    log(`version 1 (${FIRST_ROWS} rows) is READY`);

    const queries = Array.from({ length: QUERIES }, (_, q) => vectorOf('b', (q * 7919) % ROWS));
    loop = new SearchLoop(members, queries);
    await eventually(
      () => members.every((m) => loop!.answers.get(m.name)!.length > 0) || loop!.failure !== undefined,
      30_000,
      'both processes to answer from version 1',
    );

    writeTraining(training, 'b', ROWS);
    const id = await reset();
    // A random moment of `ingesting`: after k events applied by the admin process (k up to a third of
    // its share), so its job may be publishing or done, its consumers mid-batch.
    const k = 1 + Math.floor(next() * (ROWS / 6));
    const applied = (m: Member) =>
      m.process!.metric('vss_consumer_events_total', { kind: 'embedding', outcome: 'applied' });
    const before = await applied(admin);
    let op: Record<string, unknown> = {};
    await eventually(
      async () => {
        op = await operation(id);
        assert.notEqual(op.status, 'FAILED', `the operation failed: ${String(op.last_error)}`);
        assert.notEqual(op.status, 'SUCCEEDED', 'the operation ended before the kill');
        return op.step === 'ingesting' && (await applied(admin)) - before >= k;
      },
      120_000,
      `ingesting, ${k} events applied by the admin process`,
    );
    const seen = (await applied(admin)) - before;
    const otherBefore = await applied(other);
    await admin.kill();
    const job = (op.result as { job?: { state?: string; rows_published?: number } } | null)?.job;
    log(
      `SIGKILL of the admin process after ${seen} events applied by it (kill point ${k}; the other had applied ${otherBefore}); the job was ${job?.state} with ${job?.rows_published} rows published`,
    );
    await admin.run();
    log('the admin process is up again');

    const last = await succeeded(id);
    log('version 2 is READY');
    assertResetIngestedOnce(last, ROWS);
    assert.ok((await applied(other)) > 0, 'the process without admin ingested its partitions');

    // Both processes answer from version 2, then a few more rounds compare them there.
    await eventually(
      () =>
        loop!.failure !== undefined || members.every((m) => loop!.answers.get(m.name)!.at(-1)?.version === 2),
      30_000,
      'both processes to answer from version 2',
    );
    const rounds = loop.rounds;
    await eventually(
      () => loop!.failure !== undefined || loop!.rounds >= rounds + 5,
      30_000,
      'five more rounds',
    );
    await loop.stop();
    log(
      `the search loop: ${loop.rounds} rounds, ${loop.compared} queries answered by both from one version; unanswered: ${members.map((m) => `${m.name} ${m.unanswered} (last: ${m.lastRefusal || 'none'})`).join(', ')}`,
    );
    assert.ok(loop.compared > 0);

    // The flip as each process showed it: between its last answer from version 1 and its first from
    // version 2, never back.
    const flips = members.map((m) => {
      const answers = loop!.answers.get(m.name)!;
      const first = answers.findIndex((a) => a.version === 2);
      assert.ok(first > 0, `${m.name}: answered from version 1, then from version 2`);
      assert.ok(
        answers.slice(first).every((a) => a.version === 2),
        `${m.name}: never answered from version 1 after version 2`,
      );
      return { from: answers[first - 1]!.sentAt, to: answers[first]!.answeredAt };
    });
    // The widest the two moments can be apart, given what the answers show.
    const apart = Math.max(flips[0]!.to - flips[1]!.from, flips[1]!.to - flips[0]!.from);
    log(`the flip reached both processes within ${apart.toFixed(0)} ms of each other`);
    assert.ok(apart < 1000, `the flip reached one process ${apart.toFixed(0)} ms after the other`);

    const model = (await adminCall(adminUrl(), 'GET', `/models/${ENTITY}/${MODEL}`)).json as {
      variants: { variant: string; state: string; read_version: number }[];
      versions?: { version: number; recall?: unknown }[];
    };
    log(`recall of version 2: ${JSON.stringify(model.versions?.find((v) => v.version === 2)?.recall)}`);
    assert.deepEqual(
      model.variants.map((v) => [v.variant, v.state, v.read_version]),
      [[VARIANT, 'READY', 2]],
    );
    for (const m of members) {
      assert.equal(await m.process!.stop(), 0, `${m.name}: a graceful stop exits 0:\n${m.process!.output()}`);
      m.process = undefined;
      m.client?.close();
      m.client = undefined;
    }

    sql = await createSqlClient({
      kind: 'postgres',
      url: pgvectorUrl!,
      searchPath: `${isolated.schema}, public`,
      poolSize: 2,
    });
    const store = await openVssStore(sql);
    const version = await store.versions.get({ entity: ENTITY, modelName: MODEL, version: 2 });
    assert.deepEqual([version.ingestedCount, version.failedCount], [ROWS, 0], "the version's counts");
    assert.equal(await store.embeddings.count(TABLE, MODEL, 2), ROWS, 'store rows');
    const stored = new Set<string>();
    for await (const row of storedRows(store, TABLE, MODEL, 2)) {
      assert.ok(!stored.has(row.id), `row ${row.id} twice`);
      stored.add(row.id);
      assert.deepEqual([...row.embedding], vectorOf('b', Number(row.id.slice(1))), row.id);
    }
    for (let i = 0; i < ROWS; i++) assert.ok(stored.has(idOf('b', i)), `row ${idOf('b', i)} lost`);
    log('the store holds every row once, as in the training data');

    const db = await createVectorDb({ kind: 'pgvector', sql });
    try {
      const name = collectionName(ENTITY, MODEL, 2);
      assert.equal((await db.collectionInfo(name)).points, ROWS, 'collection points');
      for (let start = 0; start < ROWS; start += 5000) {
        const ids = Array.from({ length: 5000 }, (_, j) => idOf('b', start + j));
        const points = await db.getPoints(name, ids, { withVector: true, withPayload: false });
        points.forEach((point, j) => {
          assert.ok(point, `point ${ids[j]} lost`);
          assert.deepEqual([...point.vector!], vectorOf('b', start + j), `the vector of ${ids[j]}`);
        });
      }
    } finally {
      await db.close();
    }
    log('the collection holds every point once, as in the training data');
  } catch (err) {
    for (const m of members) {
      if (m.process !== undefined && m.process.exited() === undefined)
        log(`${m.name}'s output:\n${m.process.output()}`);
    }
    throw err;
  } finally {
    await loop?.stop().catch(() => {});
    for (const m of members) await m.kill();
    await sql?.close();
    await isolated?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});
