/**
 * End to end: what the built-in job runner publishes, the real consumers ingest. The ingestion world
 * of the consumer tests (PGlite store, embedded vector DB, IngestionHandler) runs behind the
 * consumer runner on a memory-queue topic; the job runner reads a Parquet directory with bad rows
 * in it. The store rows and the points match the good rows exactly, each variant's membership
 * follows its vss_filter on the file's attributes, and the job's EOF record completes once with
 * exact counts, also when the job is run again.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Metrics } from '../../../../src/platform/metrics/index.js';
import { createQueue, type Queue } from '../../../../src/platform/queue/index.js';
import { createSqlClient, type SqlClient } from '../../../../src/platform/sql/index.js';
import { FileJobRunner, type IngestionJob } from '../../../../src/vss/admin/jobs/index.js';
import { ConsumerRunner } from '../../../../src/vss/consumers/consumer-runner.js';
import type { IngestionMessage } from '../../../../src/vss/consumers/ingestion-message.js';
import { type IngestionRecord, openVssStore, type VssStore } from '../../../../src/vss/store/index.js';
import { eventually, uniqueName } from '../../../support/servers.js';
import {
  type IngestionWorld,
  MODEL,
  openIngestionWorld,
  PARTITIONS,
} from '../../consumers/ingestion-world.js';
import {
  jobFor,
  join,
  RecordingQueue,
  tempDir,
  trainingRows,
  writeJsonLinesFile,
  writeParquetFile,
} from './training-data.js';

let sql: SqlClient;
let store: VssStore;
let queue: Queue;
let world: IngestionWorld;
let consumers: ConsumerRunner<IngestionMessage>;
let topic: string;
const completions: IngestionRecord[] = [];
const root = tempDir();

before(async () => {
  sql = await createSqlClient({ kind: 'pglite' });
  store = await openVssStore(sql);
  world = await openIngestionWorld(store, { onComplete: (record) => completions.push(record) });
  queue = await createQueue({ kind: 'memory' });
  topic = uniqueName('vss_embeddings');
  await queue.ensureTopic(topic, { partitions: PARTITIONS });
  consumers = await ConsumerRunner.start({
    queue,
    topic,
    group: 'vss-consumers',
    handler: world.handler,
    batchSize: 64,
    lingerMs: 5,
    retry: { attempts: 3, baseMs: 5, maxMs: 20 },
    metrics: new Metrics(),
  });
});

after(async () => {
  await consumers?.close();
  await queue?.close();
  await world?.close();
  await sql?.close();
  rmSync(root, { recursive: true, force: true });
});

const find = (jobId: string) =>
  store.ingestion.find({ entity: world.entity, modelName: MODEL, version: 1, jobId });

async function completed(jobId: string): Promise<IngestionRecord> {
  await eventually(async () => (await find(jobId))?.status === 'COMPLETE', 30_000, `job ${jobId} complete`);
  return (await find(jobId))!;
}

describe('built-in job runner → consumers → store and vector DB', () => {
  const rows = trainingRows(300);
  let job: IngestionJob;

  test('a Parquet directory with bad rows: every good row ingested exactly, the EOF record complete with exact counts', async () => {
    writeParquetFile(join(root, 'data', 'part-00000.parquet'), rows.slice(0, 150), { rowGroupSize: 40 });
    writeParquetFile(join(root, 'data', 'part-00001.parquet'), rows.slice(150), { rowGroupSize: 70 });
    writeJsonLinesFile(join(root, 'data', 'part-00002.jsonl'), [
      { id: 'late', emb: rows[0]!.emb, flag: true, brand: 'a', is_live: 'true', price: 1 },
      { id: 'wrong', emb: [1, 2], flag: true },
      { emb: rows[1]!.emb },
    ]);
    const runner = new FileJobRunner({ queue, batchRows: 64 });
    job = jobFor(join(root, 'data'), {
      jobId: 'reset-1',
      entity: world.entity,
      topic,
      partitions: PARTITIONS,
      variantVersions: { organic: 1, live: 1, brand_a: 1, remote: 1 },
    });
    await runner.start(job);
    const status = await runner.finished(job.jobId);
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual(
      { read: status.rowsRead, published: status.rowsPublished, bad: status.badRowCount },
      { read: 303, published: 301, bad: 2 },
    );

    const record = await completed(job.jobId);
    assert.deepEqual(record.counts, { events: 301, applied: 301, rejected: 0, pointsWritten: 301 });
    assert.deepEqual(record.markedPartitions, [0, 1, 2]);
    assert.equal(completions.filter((r) => r.jobId === job.jobId).length, 1);

    const expected = [
      ...rows,
      { ...rows[0]!, id: 'late', flag: true, brand: 'a', is_live: 'true', price: 1 },
    ];
    const snapshot = await world.snapshot(expected.map((row) => row.id));
    assert.equal(Object.keys(snapshot.rows).length, 301);
    assert.equal(Object.keys(snapshot.points).length, 301);
    for (const row of expected) {
      const stored = snapshot.rows[row.id]!;
      assert.deepEqual(stored.embedding, row.emb, `stored vector of ${row.id}`);
      assert.deepEqual(stored.searchEmbedding, row.emb);
      const flag = row.flag ?? true;
      assert.deepEqual(stored.toBeIndexed, { organic: flag, live: flag, brand_a: flag, remote: flag });
      const point = snapshot.points[row.id]!;
      assert.deepEqual(point.vector, row.emb, `point vector of ${row.id}`);
      assert.deepEqual(point.payload, {
        brand: row.brand,
        is_live: row.is_live,
        price: row.price,
        to_be_indexed_organic: flag,
        to_be_indexed_live: flag && row.is_live === 'true',
        to_be_indexed_brand_a: flag && row.brand === 'a',
      });
    }
    // Each variant finds only its members.
    const members = (test: (row: (typeof expected)[number]) => boolean) =>
      expected.filter((row) => (row.flag ?? true) && test(row)).length;
    const probe = rows[7]!.emb!;
    const found = async (variant: string) => (await world.search(variant, probe)).length;
    assert.equal(
      await found('organic'),
      Math.min(
        100,
        members(() => true),
      ),
    );
    assert.equal(
      await found('live'),
      Math.min(
        100,
        members((row) => row.is_live === 'true'),
      ),
    );
    assert.equal(
      await found('brand_a'),
      Math.min(
        100,
        members((row) => row.brand === 'a'),
      ),
    );
    const brandA = await world.search('brand_a', probe);
    assert.ok(brandA.every((id) => expected.find((row) => row.id === id)?.brand === 'a'));
  });

  test('the same job again: a new runner re-reads and re-publishes (queue de-duplication), counts stay exact', async () => {
    const runner = new FileJobRunner({ queue, batchRows: 64 });
    await runner.start(job);
    const status = await runner.finished(job.jobId);
    assert.equal(status.state, 'SUCCEEDED');
    // Markers re-sent under the same ids were de-duplicated too: the record is unchanged.
    await eventually(
      async () => {
        const lag = await queue.groupLag(topic, 'vss-consumers');
        return lag.every((p) => p.pending === 0 && p.unsettled === 0);
      },
      10_000,
      'the consumers caught up',
    );
    const record = (await find(job.jobId))!;
    assert.equal(record.status, 'COMPLETE');
    assert.deepEqual(record.counts, { events: 301, applied: 301, rejected: 0, pointsWritten: 301 });
    assert.equal(completions.filter((r) => r.jobId === job.jobId).length, 1);
  });

  test('past the de-duplication window: every event stored and applied again, yet counted once', async () => {
    const late = new RecordingQueue(queue);
    late.rewrite = (options) => ({ ...options, messageId: undefined });
    const runner = new FileJobRunner({ queue: late, batchRows: 64 });
    await runner.start(job);
    assert.equal((await runner.finished(job.jobId)).state, 'SUCCEEDED');
    assert.equal(late.publishes, 301 + PARTITIONS);
    await eventually(
      async () => {
        const lag = await queue.groupLag(topic, 'vss-consumers');
        return lag.every((p) => p.pending === 0 && p.unsettled === 0);
      },
      30_000,
      'the consumers caught up',
    );
    const record = (await find(job.jobId))!;
    assert.deepEqual(record.counts, { events: 301, applied: 301, rejected: 0, pointsWritten: 301 });
    assert.equal(completions.filter((r) => r.jobId === job.jobId).length, 1);
    assert.deepEqual((await world.snapshot(['c5'])).points.c5?.vector, rows[5]!.emb);
  });
});
