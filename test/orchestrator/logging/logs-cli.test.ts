import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { registerQueueReadRoute } from '../../../src/cli/queue-read-route.js';
import { openParquet } from '../../../src/featurestore/parquet-records.js';
import { OrchestratorLog } from '../../../src/gen/orchestrator/v1/log.js';
import {
  buildLogRecords,
  type LogRowObject,
  QueueLogSink,
  writeLogFile,
} from '../../../src/orchestrator/logging/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { HttpServer } from '../../../src/platform/http/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { createQueue } from '../../../src/platform/queue/index.js';
import { runCaptured } from '../../support/cli-capture.js';
import { uniqueName } from '../../support/servers.js';
import { loggedModel, servePoint, serveSlates, sparseContext } from './support.js';

const bin = fileURLToPath(new URL('../../../bin/lattice.js', import.meta.url));

/** A log file of 5 records: a point request (arrow + zstd, 5 targets in 2 records), a sparse one (proto) and a slate one (parquet, 2 records). */
async function writeSampleLogFile(): Promise<{ dir: string; file: string; records: OrchestratorLog[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-logs-cli-'));
  const records = [
    ...(await buildLogRecords(
      await servePoint(
        loggedModel({ format: 'arrow', compression: 'zstd', log_batch_size: 3 }),
        5,
        'cli-point',
      ),
      { createdAtMs: 1_700_000_000_000 },
    )),
    ...(await buildLogRecords(sparseContext(loggedModel({ format: 'proto', compression: 'gzip' }), 3))),
    ...(await buildLogRecords(await serveSlates(loggedModel({ format: 'parquet' }), 2, [[1, 0]]))),
  ];
  const file = join(dir, 'inference.logs');
  await writeLogFile(file, records);
  return { dir, file, records };
}

const readJsonLines = (path: string): LogRowObject[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LogRowObject);

/** `lattice logs <argv>` in this process (with `--settings FILE` when given). */
function logs(argv: string[], settingsFile?: string) {
  return runCaptured(['logs', ...argv, ...(settingsFile === undefined ? [] : ['--settings', settingsFile])]);
}

async function rejectsWith(argv: string[], message: RegExp, settingsFile?: string) {
  await assert.rejects(logs(argv, settingsFile), (err) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
    assert.match(err.message, message);
    return true;
  });
}

/** A usage error: exit status 2, the message and the usage on stderr. */
async function usageError(argv: string[], message: RegExp) {
  const result = await logs(argv);
  assert.equal(result.exitCode, 2, result.err);
  assert.match(result.err, message);
  assert.match(result.err, /Usage: lattice logs/);
}

describe('lattice logs decode', () => {
  test('--file to JSON Lines: one object per logged row, with decoded values and defaulted names', async () => {
    const { dir, file } = await writeSampleLogFile();
    const out = join(dir, 'rows.jsonl');
    assert.equal((await logs(['decode', '--file', file, '--out', out])).exitCode, 0);
    const rows = readJsonLines(out);
    // 5 point targets, 3 sparse targets, 2 slate targets and 1 slate.
    assert.equal(rows.length, 5 + 3 + 2 + 1);
    const first = rows[0]!;
    assert.equal(first.tracking_id, 'cli-point');
    assert.equal(first.model_config_id, 'logged');
    assert.equal(first.config_version, '7');
    assert.equal(first.user_id, 'user-42');
    assert.equal(first.created_at_ms, 1_700_000_000_000);
    assert.equal(first.entity_id, 'item-0');
    assert.equal(first.rows, 'targets');
    assert.equal(first.features['score'], 3.5);
    // JSON has no negative zero: -0 (emb[1] of target 0) prints as 0.
    assert.deepEqual(first.features['emb'], [0, 0, 0]);
    assert.equal(first.features['clicks'], '-7');
    assert.deepEqual(first.defaulted, []);
    assert.deepEqual(
      rows.slice(0, 5).map((r) => [r.entity_id, r.batch_index]),
      [
        ['item-0', 0],
        ['item-1', 0],
        ['item-2', 0],
        ['item-3', 1],
        ['item-4', 1],
      ],
    );
    const sparse = rows.find((r) => r.entity_id === 'sparse-0')!;
    assert.deepEqual(sparse.defaulted.sort(), [
      'counts',
      'i8v',
      'name',
      'pair',
      'price',
      'score',
      'small',
      'tiny',
    ]);
    assert.equal(sparse.features['price'], 0);
    const slate = rows.at(-1)!;
    assert.equal(slate.rows, 'slates');
    assert.deepEqual(slate.features['slate_target_indices'], [1, 0]);
    assert.deepEqual(slate.features['slate_target_ids'], ['item-1', 'item-0']);
    assert.equal(slate.features['position_bias'], 0);
  });

  test('--format parquet writes one ZSTD Parquet file that a row reader reads back', async () => {
    const { dir, file } = await writeSampleLogFile();
    const out = join(dir, 'rows.parquet');
    assert.equal((await logs(['decode', '--file', file, '--format', 'parquet', '--out', out])).exitCode, 0);
    // Read row by row through the feature-store loader's reader, as any downstream job would.
    const source = await openParquet(out);
    const rows: Record<string, unknown>[] = [];
    for await (const batch of source.batches()) rows.push(...batch.map(({ record }) => record));
    assert.equal(rows.length, 11);
    const first = rows[0]!;
    assert.equal(first['tracking_id'], 'cli-point');
    assert.equal(first['entity_id'], 'item-0');
    assert.equal(first['created_at_ms'], 1_700_000_000_000n);
    assert.equal(first['score'], 3.5);
    assert.equal(first['clicks'], -7n);
    assert.deepEqual(first['tags'], []);
    assert.deepEqual(first['defaulted'], []);
    const item2 = rows[2]!;
    assert.deepEqual(item2['emb'], [2, -1, Math.fround(0.2)]);
    assert.deepEqual(item2['tags'], ['tag-2-0', 'tag-2-1']);
    assert.equal(item2['name'], 'naïve ✓ 2');
    assert.equal(item2['big'], 2n ** 64n - 3n);
    const sparse = rows.find((r) => r['entity_id'] === 'sparse-0')!;
    assert.equal(sparse['price'], null);
    assert.deepEqual((sparse['defaulted'] as string[]).sort(), [
      'counts',
      'i8v',
      'name',
      'pair',
      'price',
      'score',
      'small',
      'tiny',
    ]);
    const slate = rows.at(-1)!;
    assert.equal(slate['rows'], 'slates');
    assert.deepEqual(slate['slate_target_indices'], [1, 0]);
    assert.equal(slate['score'], null);
  });

  test('the lattice binary runs it, writing JSON Lines to stdout', async () => {
    const { file } = await writeSampleLogFile();
    const result = spawnSync(process.execPath, [bin, 'logs', 'decode', '--file', file], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    const lines = result.stdout.split('\n').filter(Boolean);
    assert.equal(lines.length, 11);
    assert.equal((JSON.parse(lines[3]!) as LogRowObject).entity_id, 'item-3');
    assert.match(result.stderr, /5 records, 11 rows/);
  });

  test('--from-queue reads the records of a topic (memory queue journaled in the data dir)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-logs-queue-'));
    const journalDir = join(dir, 'queue');
    const topic = uniqueName('logs');
    const queue = await createQueue({ kind: 'memory', journalDir });
    try {
      const sink = new QueueLogSink(queue, topic);
      const records = await buildLogRecords(await servePoint(loggedModel({ log_batch_size: 2 }), 5, 'q-req'));
      for (const [i, record] of records.entries()) {
        await sink.write(OrchestratorLog.encode(record).finish(), { key: 'q-req', messageId: `q-req:${i}` });
      }
    } finally {
      await queue.close();
    }
    const settingsFile = join(dir, 'settings.json');
    writeFileSync(settingsFile, JSON.stringify({ dataDir: dir, queue: { kind: 'memory', journalDir } }));
    const out = join(dir, 'rows.jsonl');
    await logs(['decode', '--from-queue', topic, '--group', 'cli', '--max', '3', '--out', out], settingsFile);
    const rows = readJsonLines(out);
    assert.deepEqual(
      rows.map((r) => r.entity_id),
      ['item-0', 'item-1', 'item-2', 'item-3', 'item-4'],
    );
    // The same group again has nothing new, and says why instead of printing nothing.
    const again = await logs(
      ['decode', '--from-queue', topic, '--group', 'cli', '--idle-ms', '100', '--out', out],
      settingsFile,
    );
    assert.match(again.err, /no new records on .* for group cli \(a group reads each record once; --group/);
    await rejectsWith(
      ['decode', '--from-queue', 'no_such_topic', '--idle-ms', '50'],
      /does not exist/,
      settingsFile,
    );
  });

  test('--from-queue beside the process holding the embedded queue reads through its ops server', async () => {
    // This test process plays lattice up: it holds the journaled queue (locked) and serves the route.
    const dir = mkdtempSync(join(tmpdir(), 'lattice-logs-held-'));
    const journalDir = join(dir, 'queue');
    const topic = uniqueName('logs');
    const queue = await createQueue({ kind: 'memory', journalDir });
    const ops = new HttpServer({
      name: 'ops',
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('t', { level: 'silent' }),
      metrics: new Metrics(),
    });
    registerQueueReadRoute(ops.app, async () => queue);
    const port = await ops.start();
    try {
      const sink = new QueueLogSink(queue, topic);
      const records = await buildLogRecords(
        await servePoint(loggedModel({ log_batch_size: 2 }), 5, 'held-req'),
      );
      for (const [i, record] of records.entries()) {
        await sink.write(OrchestratorLog.encode(record).finish(), {
          key: 'held-req',
          messageId: `held-req:${i}`,
        });
      }
      const settingsFile = join(dir, 'settings.json');
      writeFileSync(
        settingsFile,
        JSON.stringify({ dataDir: dir, queue: { kind: 'memory', journalDir }, metrics: { port } }),
      );
      // Asynchronously: this process must go on serving the route while the command runs.
      const decode = (args: string[]) =>
        new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
          execFile(
            process.execPath,
            [bin, 'logs', 'decode', '--settings', settingsFile, ...args],
            { encoding: 'utf8', timeout: 60_000 },
            (err, stdout, stderr) =>
              resolve({ status: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
          );
        });
      const first = await decode(['--from-queue', topic, '--group', 'cli', '--idle-ms', '500']);
      assert.equal(first.status, 0, first.stderr);
      assert.deepEqual(
        first.stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => (JSON.parse(line) as LogRowObject).entity_id),
        ['item-0', 'item-1', 'item-2', 'item-3', 'item-4'],
      );
      const again = await decode(['--from-queue', topic, '--group', 'cli', '--idle-ms', '100']);
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stderr, /no new records on .* for group cli/);
      const missing = await decode(['--from-queue', 'no_such_topic', '--idle-ms', '50']);
      assert.equal(missing.status, 1, missing.stderr);
      assert.match(missing.stderr, /queue topic "no_such_topic" does not exist/);
    } finally {
      await ops.stop();
      await queue.close();
    }
  });

  test('usage errors name what is wrong (exit 2, with the usage)', async () => {
    await usageError(['decode'], /exactly one of --file and --from-queue/);
    await usageError(
      ['decode', '--file', 'a', '--from-queue', 'b'],
      /exactly one of --file and --from-queue/,
    );
    await usageError(
      ['decode', '--file', 'a', '--format', 'csv'],
      /option '--format <F>' argument 'csv' is invalid. Allowed choices are jsonl, parquet/,
    );
    await usageError(['decode', '--file', 'a', '--format', 'parquet'], /needs --out/);
    await usageError(['decode', '--file', 'a', '--bogus'], /unknown option '--bogus'/);
    await usageError(['decode', '--from-queue', 't', '--max', '0'], /'--max <N>' argument '0' is invalid/);
    const unknown = await logs(['encode']);
    assert.equal(unknown.exitCode, 2);
    assert.match(unknown.err, /unknown command 'encode'/);
    const dir = mkdtempSync(join(tmpdir(), 'lattice-logs-bad-'));
    const bad = join(dir, 'bad.logs');
    writeFileSync(bad, Buffer.from([0x05, 1, 2]));
    await rejectsWith(['decode', '--file', bad], /record at byte 0 declares 5 bytes but 2 remain/);
  });
});
