/**
 * The built-in job runner against the memory queue: what it publishes for Parquet directories and
 * JSON Lines files (events matching the rows, EOF markers last on every partition), bad rows, and
 * publishes the queue refuses or fails.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Field, Float32, List } from 'apache-arrow';
import { unavailable } from '../../../../src/platform/errors.js';
import { partitionForKey } from '../../../../src/platform/queue/index.js';
import { uniqueName } from '../../../support/servers.js';
import { assertEofLast, events, PARTITIONS, RunnerTestBed, stored } from './runner-test-bed.js';
import {
  jobFor,
  join,
  jsonOf,
  RecordingQueue,
  readTopic,
  trainingRows,
  vectorOf,
  writeJsonLinesFile,
  writeParquetFile,
} from './training-data.js';

const bed = new RunnerTestBed();
const { dir, runnerOn, topic, run } = bed;

describe('built-in job runner: what it publishes', () => {
  test('a Parquet directory: one event per row, keyed by id, vectors exact, other columns as payload; then EOF on every partition', async () => {
    const root = dir();
    const rows = trainingRows(230);
    // Files in name order across a sub-directory; several row groups; markers and hidden files skipped.
    writeParquetFile(join(root, 'part-00000.parquet'), rows.slice(0, 100), { rowGroupSize: 30 });
    writeParquetFile(join(root, 'part-00001.parquet'), rows.slice(100, 200), { rowGroupSize: 64 });
    writeParquetFile(join(root, 'z', 'part-00002.snappy.parquet'), rows.slice(200));
    writeFileSync(join(root, '_SUCCESS'), '');
    writeFileSync(join(root, '.part-00000.parquet.crc'), 'crc');
    const name = await topic();
    const runner = runnerOn(bed.queue);
    const status = await run(runner, jobFor(pathToFileURL(root).href, { topic: name }));

    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual(
      {
        progress: status.progress,
        read: status.rowsRead,
        published: status.rowsPublished,
        bad: status.badRowCount,
      },
      { progress: 1, read: 230, published: 230, bad: 0 },
    );
    assert.match(status.message, /published 230 events from 230 rows of 3 file\(s\)/);
    assert.equal((await bed.queue.topicStats(name)).messages, 230 + PARTITIONS);

    const messages = await readTopic(bed.queue, name, 230 + PARTITIONS);
    assertEofLast(messages, 'job-1');
    const byId = new Map(events(messages).map((m) => [m.body.candidate_id as string, m]));
    assert.equal(byId.size, 230);
    for (const row of rows) {
      const message = byId.get(row.id)!;
      assert.equal(message.key, row.id);
      assert.equal(message.partition, partitionForKey(row.id, PARTITIONS));
      const body = message.body as Record<string, Record<string, unknown> & unknown>;
      assert.equal(body.entity, 'catalog');
      assert.equal(body.model_name, 'm');
      assert.equal(body.version, 1);
      assert.equal(body.job_id, 'job-1');
      const space = body.index_space as Record<string, unknown>;
      assert.equal(space.operation, 'A');
      assert.deepEqual(stored(space.embedding), row.emb, `vector of ${row.id}`);
      assert.deepEqual(jsonOf(space.variants_version_map), { brand_a: 1, live: 1, organic: 1 });
      assert.deepEqual(jsonOf(space.variants_index_map), {
        brand_a: row.flag,
        live: row.flag,
        organic: row.flag,
      });
      assert.deepEqual(jsonOf(space.payload), { brand: row.brand, is_live: row.is_live, price: row.price });
      assert.equal(body.search_space, undefined);
    }
    // Within a partition, events come in file order.
    for (let p = 0; p < PARTITIONS; p++) {
      const ids = events(messages)
        .filter((m) => m.partition === p)
        .map((m) => Number((m.body.candidate_id as string).slice(1)));
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
      );
    }
  });

  test('JSON Lines, a single file by plain path: search embeddings, index flags in every accepted form, numeric ids', async () => {
    const root = dir();
    const path = join(root, 'embeddings.jsonl');
    writeJsonLinesFile(path, [
      { id: 'a', emb: vectorOf(1), search: vectorOf(11), flag: true, brand: 'a', tags: ['x', 'y'] },
      { id: 'b', emb: vectorOf(2), flag: { organic: false, live: true, unknown_variant: true } },
      { id: 'c', emb: vectorOf(3), flag: ['brand_a'] },
      { id: 'd', emb: JSON.stringify(vectorOf(4)), flag: 'false' },
      { id: 'e', emb: vectorOf(5), flag: null },
      { id: 42, emb: vectorOf(6), flag: 1, note: null },
      // JSON.stringify writes -0 as 0: the line as a producer that keeps it would write it.
      '{"id": "g", "emb": [0.5, -0, 1e-7, -3], "flag": "{\\"live\\": false}"}',
      { id: 'h', emb: [0.1, 1 / 3, 1e-30, 3.4e38] },
    ]);
    const name = await topic();
    const runner = runnerOn(bed.queue);
    const job = jobFor(path, {
      topic: name,
      columns: {
        idColumn: 'id',
        embeddingColumn: 'emb',
        toBeIndexedColumn: 'flag',
        searchEmbeddingColumn: 'search',
      },
      indexDefaults: { organic: true, live: false, brand_a: true },
    });
    const status = await run(runner, job);
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.equal(status.rowsPublished, 8);
    const messages = await readTopic(bed.queue, name, 8 + PARTITIONS);
    assertEofLast(messages, 'job-1');
    const byId = new Map(events(messages).map((m) => [m.body.candidate_id as string, m.body]));
    const space = (id: string) => byId.get(id)!.index_space as Record<string, unknown>;
    const flags = (id: string) => jsonOf(space(id).variants_index_map);

    assert.deepEqual(stored(space('a').embedding), vectorOf(1));
    assert.deepEqual(stored((byId.get('a')!.search_space as { embedding: unknown }).embedding), vectorOf(11));
    assert.deepEqual(jsonOf(space('a').payload), { brand: 'a', tags: ['x', 'y'] });
    assert.deepEqual(flags('a'), { brand_a: true, live: true, organic: true });
    assert.deepEqual(
      flags('b'),
      { brand_a: true, live: true, organic: false },
      'a map; defaults for the rest',
    );
    assert.deepEqual(flags('c'), { brand_a: true, live: false, organic: false }, 'a list of variants');
    assert.deepEqual(stored(space('d').embedding), vectorOf(4), 'a vector as JSON text');
    assert.deepEqual(flags('d'), { brand_a: false, live: false, organic: false });
    assert.deepEqual(flags('e'), { brand_a: true, live: false, organic: true }, 'null: the job defaults');
    assert.equal(space('e').payload, undefined, 'no attributes: no payload');
    assert.deepEqual(flags('42'), { brand_a: true, live: true, organic: true });
    assert.equal(byId.get('42')!.search_space, undefined);
    assert.ok(Object.is((space('g').embedding as number[])[1], -0), 'negative zero survives');
    assert.deepEqual(flags('g'), { brand_a: true, live: false, organic: true });
    // Doubles: the event stores exactly their float32 rounding.
    assert.deepEqual(stored(space('h').embedding), [...Float32Array.from([0.1, 1 / 3, 1e-30, 3.4e38])]);
  });

  test('bad rows are reported with file, row and reason, and skipped; the rest is published', async () => {
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [
      { id: 'ok1', emb: vectorOf(1) },
      { emb: vectorOf(2) },
      '',
      { id: 'short', emb: [1, 2, 3] },
      '{"id": "broken", "emb": [1, 2',
      { id: 'huge', emb: [1, 2, 3, 1e39] },
      '[1, 2]',
      { id: 'bad flag', emb: vectorOf(3), flag: 'maybe' },
      { id: 'EOF', emb: vectorOf(4) },
      { id: 'bad attr', emb: vectorOf(5), 'price usd': 3 },
      { id: 'nested', emb: vectorOf(6), meta: { a: 1 } },
      { id: 'ok2', emb: vectorOf(7) },
    ]);
    // Parquet: a null id, a null vector, a NaN inside a vector.
    const list = new List(new Field('item', new Float32(), true));
    writeParquetFile(
      join(root, 'b.parquet'),
      [
        { id: 'p1', emb: vectorOf(8) },
        { id: null, emb: vectorOf(9) },
        { id: 'p3', emb: null },
        { id: 'p4', emb: [1, Number.NaN, 2, 3] },
        { id: 'p5', emb: [1, null, 2, 3] },
        { id: 'p6', emb: vectorOf(10) },
      ],
      { types: { emb: list } },
    );
    const name = await topic();
    const runner = runnerOn(bed.queue, { maxBadRows: 8 });
    const status = await run(runner, jobFor(root, { topic: name }));
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual(
      {
        read: status.rowsRead,
        published: status.rowsPublished,
        bad: status.badRowCount,
        listed: status.badRows.length,
      },
      { read: 17, published: 4, bad: 13, listed: 8 },
    );
    const reasons = status.badRows.map((b) => `${b.file}:${b.row} ${b.reason}`);
    assert.deepEqual(reasons.slice(0, 8), [
      'a.jsonl:2 id: missing id',
      "a.jsonl:4 emb: has 3 values, the model's vector_dimension is 4",
      `a.jsonl:5 ${status.badRows[2]!.reason}`,
      'a.jsonl:6 emb: value [3] (1e+39) is not a finite number within float32 range',
      'a.jsonl:7 line is not a JSON object',
      `a.jsonl:8 flag: must be a boolean (or 0/1, "true"/"false"), an object of variant → boolean, or a list of variant names`,
      'a.jsonl:9 id: id "EOF" is reserved for end-of-file markers',
      `a.jsonl:10 column "price usd" cannot be a payload attribute (names are 1-128 letters, digits, "_" or "-"); rename it in the data`,
    ]);
    assert.match(status.badRows[2]!.reason, /^line is not JSON: /);
    assert.match(status.message, /skipped 13 bad rows/);

    // The rows past the list's cap are counted; the rest of them, listed with a larger cap:
    const wide = runnerOn(bed.queue, { maxBadRows: 100 });
    const again = await run(wide, jobFor(root, { topic: name, jobId: 'job-wide' }));
    assert.deepEqual(
      again.badRows.slice(8).map((b) => `${b.file}:${b.row} ${b.reason}`),
      [
        'a.jsonl:11 meta: an object cannot be an attribute (flatten it into columns)',
        'b.parquet:2 id: missing id',
        'b.parquet:3 emb: missing embedding',
        'b.parquet:4 emb: value [1] (NaN) is not a finite number within float32 range',
        'b.parquet:5 emb: value [1] (NaN) is not a finite number within float32 range',
      ],
    );
    const messages = await readTopic(bed.queue, name, 2 * (4 + PARTITIONS));
    assert.deepEqual(
      events(messages)
        .filter((m) => m.body.job_id === 'job-1')
        .map((m) => m.body.candidate_id)
        .sort(),
      ['ok1', 'ok2', 'p1', 'p6'],
    );
  });

  test('an event larger than the topic accepts is a bad row; transient publish failures are retried', async () => {
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [
      { id: 'small', emb: vectorOf(1) },
      { id: 'large', emb: vectorOf(2), text: 'x'.repeat(2000) },
      ...trainingRows(30, { from: 10 }),
    ]);
    const name = uniqueName('jobs');
    await bed.queue.ensureTopic(name, { partitions: PARTITIONS, maxMessageBytes: 1024 });
    const flaky = new RecordingQueue(bed.queue);
    // Every 7th publish call fails once as UNAVAILABLE.
    flaky.onPublish = () => {
      if (flaky.publishes % 7 === 0) throw unavailable('queue briefly away (test)');
    };
    const runner = runnerOn(flaky, { publishRetry: { attempts: 3, baseMs: 1, maxMs: 2 } });
    const status = await run(runner, jobFor(root, { topic: name }));
    assert.equal(status.state, 'SUCCEEDED', status.message);
    assert.deepEqual({ published: status.rowsPublished, bad: status.badRowCount }, { published: 31, bad: 1 });
    assert.equal(status.badRows[0]!.row, 2);
    assert.match(status.badRows[0]!.reason, /exceeds the 1024-byte limit of queue topic/);
    assert.ok(flaky.publishes > 31 + PARTITIONS + 1, 'some publishes were retried');
    assert.equal((await bed.queue.topicStats(name)).messages, 31 + PARTITIONS);

    // A queue that stays away fails the job, resumable.
    flaky.onPublish = () => {
      throw unavailable('queue down (test)');
    };
    const down = await run(runner, jobFor(root, { topic: name, jobId: 'down' }));
    assert.equal(down.state, 'FAILED');
    assert.match(down.message, /failed after 3 attempts: queue down \(test\); start it again to retry$/);
  });
});
