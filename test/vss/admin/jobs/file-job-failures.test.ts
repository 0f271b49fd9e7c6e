/**
 * What fails a built-in job before or while it reads: bad paths and files, missing columns, every
 * row bad, the wrong topic, an invalid job.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { isLatticeError } from '../../../../src/platform/errors.js';
import type { IngestionJob } from '../../../../src/vss/admin/jobs/index.js';
import { uniqueName } from '../../../support/servers.js';
import { RunnerTestBed } from './runner-test-bed.js';
import {
  jobFor,
  join,
  trainingRows,
  vectorOf,
  writeJsonLinesFile,
  writeParquetFile,
} from './training-data.js';

const bed = new RunnerTestBed();
const { dir, runnerOn, topic, run } = bed;

describe('built-in job runner: what fails a job', () => {
  const failure = async (job: IngestionJob, runner = runnerOn(bed.queue)) => {
    const status = await run(runner, job);
    assert.equal(status.state, 'FAILED');
    return status.message;
  };

  test('a missing path, a file that is not Parquet, an empty directory, an unknown format', async () => {
    const name = await topic();
    const root = dir();
    assert.match(
      await failure(jobFor(join(root, 'nowhere'), { topic: name })),
      /^training_data_path .*nowhere does not exist$/,
    );
    writeFileSync(join(root, 'broken.parquet'), 'PAR1 but not really');
    assert.match(
      await failure(jobFor(join(root, 'broken.parquet'), { topic: name, jobId: 'j2' })),
      /^broken\.parquet is not a readable Parquet file: /,
    );
    const empty = join(root, 'empty');
    mkdirSync(empty);
    writeFileSync(join(empty, '_SUCCESS'), '');
    assert.match(await failure(jobFor(empty, { topic: name, jobId: 'j3' })), /holds no data files/);
    writeFileSync(join(root, 'notes'), 'hello');
    assert.match(
      await failure(jobFor(join(root, 'notes'), { topic: name, jobId: 'j4' })),
      /^notes is neither Parquet nor JSON Lines/,
    );
    mkdirSync(join(root, 'dir.jsonl'));
    assert.match(
      await failure(jobFor(`${pathToFileURL(root).href}/dir.jsonl/`, { topic: name, jobId: 'j5' })),
      /holds no data files/,
    );
    assert.equal((await bed.queue.topicStats(name)).messages, 0);
  });

  test('a Parquet file without the id or embedding column, or with an attribute the payload cannot hold', async () => {
    const name = await topic();
    const root = dir();
    writeParquetFile(join(root, 'a.parquet'), trainingRows(3), { columns: ['id', 'flag', 'brand'] });
    assert.equal(
      await failure(jobFor(join(root, 'a.parquet'), { topic: name })),
      'a.parquet has no column "emb" (ingestion_column_mapping.embedding_column); its columns: "id", "flag", "brand"',
    );
    writeParquetFile(
      join(root, 'b.parquet'),
      trainingRows(3).map((row) => ({ ...row, to_be_indexed_live: 'x' })),
      { columns: ['id', 'emb', 'to_be_indexed_live'] },
    );
    assert.match(
      await failure(jobFor(join(root, 'b.parquet'), { topic: name, jobId: 'j2' })),
      /^b\.parquet column "to_be_indexed_live" cannot be a payload attribute/,
    );
  });

  test('every row bad: the job fails before its EOF markers', async () => {
    const name = await topic();
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [
      { ident: 'x', emb: vectorOf(1) },
      { ident: 'y', emb: vectorOf(2) },
    ]);
    const status = await run(runnerOn(bed.queue), jobFor(root, { topic: name }));
    assert.equal(status.state, 'FAILED');
    assert.match(
      status.message,
      /^every one of the 2 rows was bad \(first: a\.jsonl row 1: id: missing id\); no EOF markers were sent/,
    );
    assert.equal(status.badRowCount, 2);
    assert.equal((await bed.queue.topicStats(name)).messages, 0);
  });

  test('a topic that is missing or has another partition count', async () => {
    const root = dir();
    writeJsonLinesFile(join(root, 'a.jsonl'), [{ id: 'x', emb: vectorOf(1) }]);
    assert.match(await failure(jobFor(root, { topic: uniqueName('missing') })), /does not exist/);
    const two = await topic(2);
    assert.match(
      await failure(jobFor(root, { topic: two, jobId: 'j2' })),
      /has 2 partitions but the job says 3/,
    );
  });

  test('an invalid job is refused at start, naming the field', async () => {
    const runner = runnerOn(bed.queue);
    const invalid: [Partial<IngestionJob>, RegExp][] = [
      [{ jobId: '' }, /jobId/],
      [{ entity: 'no spaces' }, /entity/],
      [{ variantVersions: { 'Bad-Name': 1 } }, /variantVersions/],
      [{ variantVersions: {} }, /variantVersions must name at least one variant/],
      [{ vectorDimension: 0 }, /vectorDimension/],
      [
        { indexDefaults: { other: true } },
        /indexDefaults\.other names a variant that variantVersions does not/,
      ],
      [
        { columns: { idColumn: 'x', embeddingColumn: 'x', toBeIndexedColumn: 'f' } },
        /columns must name a different column/,
      ],
      [{ trainingDataPath: 's3://bucket/path' }, /./],
    ];
    for (const [override, field] of invalid.slice(0, -1)) {
      await assert.rejects(runner.start(jobFor('/tmp', override)), (err) => {
        assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
        assert.match(err.message, field);
        return true;
      });
    }
    const name = await topic();
    assert.match(
      await failure(jobFor('s3://bucket/path', { topic: name, jobId: 's3' })),
      /reads local files \(a path or a file:\/\/ URL\), not s3:\/\/; use the HTTP job runner/,
    );
  });
});
