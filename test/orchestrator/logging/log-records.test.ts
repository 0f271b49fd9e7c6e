import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import { LogCompression, LogFormat } from '../../../src/gen/orchestrator/v1/log.js';
import {
  buildLogRecords,
  decodeLogRecord,
  planLogBatches,
  SLATE_TARGET_IDS,
  SLATE_TARGET_INDICES,
  sampleRequest,
} from '../../../src/orchestrator/logging/index.js';
import { seededRandom } from '../../datatypes/random.js';
import {
  loggedModel,
  richColumns,
  servedCell,
  servePairs,
  servePoint,
  serveSlates,
  sparseContext,
} from './support.js';

describe('sampling by logging_perc', () => {
  test('0 never logs, 100 always does, whatever the random draw', () => {
    for (const draw of [0, 1e-9, 0.5, 0.999999]) {
      assert.equal(
        sampleRequest(0, () => draw),
        false,
      );
      assert.equal(
        sampleRequest(100, () => draw),
        true,
      );
    }
  });

  test('p% of many requests, decided per request', () => {
    const random = seededRandom(7);
    for (const perc of [1, 5, 30, 72.5]) {
      const n = 40_000;
      let logged = 0;
      for (let i = 0; i < n; i++) if (sampleRequest(perc, random)) logged++;
      const share = (logged / n) * 100;
      // Four standard deviations of a binomial share.
      const tolerance = 4 * Math.sqrt((perc * (100 - perc)) / n);
      assert.ok(Math.abs(share - perc) <= tolerance, `${perc}%: logged ${share.toFixed(2)}%`);
    }
  });
});

describe('log records of a served request', () => {
  test('targets are grouped log_batch_size per record: ceil(n / batch) records', async () => {
    for (const [n, size] of [
      [1, 500],
      [7, 3],
      [9, 3],
      [10, 1],
      [6, 100],
    ] as const) {
      const context = await servePoint(loggedModel({ log_batch_size: size }), n);
      const records = await buildLogRecords(context, { createdAtMs: 1_700_000_000_123 });
      assert.equal(records.length, Math.ceil(n / size), `${n} targets by ${size}`);
      const ids = records.flatMap((r) => r.entityIds);
      assert.deepEqual(
        ids,
        Array.from({ length: n }, (_, i) => `item-${i}`),
      );
      records.forEach((record, b) => {
        assert.ok(record.entityIds.length <= size);
        assert.equal(record.metadata['batch_index'], String(b));
        assert.equal(record.metadata['batch_count'], String(records.length));
        assert.equal(record.metadata['row_offset'], String(b * size));
        assert.equal(record.metadata['rows'], 'targets');
        assert.equal(record.metadata['pattern'], 'point');
      });
    }
  });

  test('header: tracking id, model, snapshot version, user_id from the request, created_at_ms, format and compression', async () => {
    const context = await servePoint(loggedModel({ format: 'arrow', compression: 'gzip' }), 2, 'track-h');
    const [record] = await buildLogRecords(context, { createdAtMs: 1_700_000_000_123 });
    assert.ok(record);
    assert.equal(record.trackingId, 'track-h');
    assert.equal(record.modelConfigId, 'logged');
    assert.equal(record.configVersion, '7');
    assert.equal(record.userId, 'user-42');
    assert.equal(record.createdAtMs, 1_700_000_000_123n);
    assert.equal(record.format, LogFormat.LOG_FORMAT_ARROW);
    assert.equal(record.compression, LogCompression.LOG_COMPRESSION_GZIP);
    assert.equal(record.metadata['rows_with_errors'], undefined);
  });

  test('empty log_features: every byte column (inputs, context, scores) and typed schema; the id is entity_ids', async () => {
    const context = await servePoint(loggedModel(), 3);
    const [record] = await buildLogRecords(context);
    const names = record!.schema.map((s) => s.name);
    assert.deepEqual(
      new Set(names),
      new Set(['score', ...richColumns.map((c) => c.name), 'bonus', 'user_id']),
    );
    assert.ok(!names.includes('item_id'));
    const emb = record!.schema.find((s) => s.name === 'emb')!;
    assert.deepEqual(emb, { name: 'emb', dataType: DataType.FP32_VECTOR, vectorDim: 3 });
    assert.equal(record!.schema.find((s) => s.name === 'score')!.dataType, DataType.FP64);
  });

  test('log_features selects and orders the logged columns, the target id included when named', async () => {
    const context = await servePoint(loggedModel({ log_features: ['score', 'emb', 'item_id', 'clicks'] }), 4);
    const records = await buildLogRecords(context);
    const [record] = records;
    assert.deepEqual(
      record!.schema.map((s) => s.name),
      ['score', 'emb', 'item_id', 'clicks'],
    );
    assert.equal(record!.metadata['missing_columns'], undefined);
    const decoded = await decodeLogRecord(record!);
    assert.equal(new TextDecoder().decode(decoded.rows[2]!.values[2]), 'item-2');
    const scores = decoded.rows.map((row) =>
      new DataView(row.values[0]!.buffer, row.values[0]!.byteOffset).getFloat64(0, true),
    );
    assert.deepEqual(scores, [3.5, 5.5, 7.5, 9.5]);
  });

  test('a log_features name the request lacks is listed in missing_columns, not fatal', async () => {
    // The validator takes such a name for a request feature; a matrix built without it still logs.
    const context = sparseContext(loggedModel({ log_features: ['nope', 'price'] }), 2);
    const [record] = await buildLogRecords(context);
    assert.deepEqual(
      record!.schema.map((s) => s.name),
      ['price'],
    );
    assert.equal(record!.metadata['missing_columns'], 'nope');
  });

  test('component errors are summarised per record; failed components leave defaulted cells', async () => {
    const context = sparseContext(loggedModel({ log_batch_size: 2 }), 5);
    const records = await buildLogRecords(context);
    assert.equal(records.length, 3);
    assert.equal(records[0]!.metadata['rows_with_errors'], '1');
    assert.equal(records[0]!.metadata['component_errors'], 'blend failed: boom (1 rows)');
    assert.equal(records[1]!.metadata['rows_with_errors'], '1');
    assert.equal(records[2]!.metadata['rows_with_errors'], undefined);
    const decoded = await decodeLogRecord(records[0]!);
    const scoreAt = records[0]!.schema.findIndex((s) => s.name === 'score');
    assert.ok(decoded.rows.every((row) => row.defaultedColumns.includes(scoreAt)));
  });

  test('slate requests also log their SlateData rows, with target indices and ids', async () => {
    const snapshot = loggedModel({ log_batch_size: 2 });
    const slates = [[0, 2], [1], [2, 1, 0]];
    const context = await serveSlates(snapshot, 3, slates);
    const records = await buildLogRecords(context);
    const targets = records.filter((r) => r.metadata['rows'] === 'targets');
    const slateRecords = records.filter((r) => r.metadata['rows'] === 'slates');
    assert.equal(targets.length, 2);
    assert.equal(slateRecords.length, 2);
    assert.deepEqual(
      records.map((r) => r.metadata['batch_index']),
      ['0', '1', '2', '3'],
    );
    for (const record of records) {
      assert.equal(record.metadata['batch_count'], '4');
      assert.equal(record.metadata['pattern'], 'slate');
    }
    assert.deepEqual(
      slateRecords.flatMap((r) => r.entityIds),
      ['0', '1', '2'],
    );
    assert.deepEqual(
      slateRecords[0]!.schema.map((s) => s.name),
      [SLATE_TARGET_INDICES, SLATE_TARGET_IDS, 'position_bias'],
    );
    const rows = (await Promise.all(slateRecords.map((r) => decodeLogRecord(r)))).flatMap((d) =>
      d.rows.map((row) => ({ row, schema: d.schema })),
    );
    rows.forEach(({ row, schema }, s) => {
      schema.forEach((spec, c) => {
        const expected = servedCell(context, 'slates', spec.name, s);
        assert.deepEqual(Buffer.from(row.values[c]!), Buffer.from(expected.bytes), `slate ${s} ${spec.name}`);
      });
    });
  });

  test('pair requests log their pairs as rows "pairs"; log_features may name pair columns', async () => {
    const snapshot = loggedModel({ log_features: ['score', 'pair_weight'] });
    const context = await servePairs(snapshot, 3, [
      [0, 1],
      [2, 0],
    ]);
    const batches = planLogBatches(context);
    assert.deepEqual(
      batches.map((b) => b.kind),
      ['targets', 'pairs'],
    );
    assert.deepEqual(
      batches[0]!.columns.map((c) => c.spec.name),
      ['score'],
    );
    assert.deepEqual(
      batches[1]!.columns.map((c) => c.spec.name),
      [SLATE_TARGET_INDICES, SLATE_TARGET_IDS, 'pair_weight'],
    );
    const records = await buildLogRecords(context);
    const pairs = await decodeLogRecord(records[1]!);
    assert.equal(pairs.record.metadata['rows'], 'pairs');
    assert.equal(pairs.record.metadata['pattern'], 'pair');
    assert.deepEqual(
      pairs.rows.map((r) => [...new Int32Array(new Uint8Array(r.values[0]!).buffer)]),
      [
        [0, 1],
        [2, 0],
      ],
    );
  });
});
