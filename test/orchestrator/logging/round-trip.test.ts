import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { tableFromIPC } from 'apache-arrow';
import { decompress as fzstdDecompress } from 'fzstd';
import { LogCompression, LogFormat, type OrchestratorLog } from '../../../src/gen/orchestrator/v1/log.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import {
  buildLogRecords,
  decodeLogRecord,
  type LogCompressionName,
  type LogFormatName,
  logRowObjects,
  parquetToArrow,
} from '../../../src/orchestrator/logging/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { loggedModel, servedCell, servePoint, serveSlates, sparseContext } from './support.js';

const formats: LogFormatName[] = ['proto', 'arrow', 'parquet'];
const compressions: LogCompressionName[] = ['none', 'gzip', 'zstd'];

/** Decodes every record and checks each cell against what the request served. */
async function assertRoundTrip(
  context: ExecutionContext,
  records: readonly OrchestratorLog[],
): Promise<number> {
  let cells = 0;
  for (const record of records) {
    const decoded = await decodeLogRecord(record);
    const kind = record.metadata['rows'] as 'targets' | 'pairs' | 'slates';
    const offset = Number(record.metadata['row_offset']);
    assert.equal(decoded.rows.length, record.entityIds.length);
    decoded.rows.forEach((row, i) => {
      const defaulted = new Set(row.defaultedColumns);
      decoded.schema.forEach((spec, c) => {
        const expected = servedCell(context, kind, spec.name, offset + i);
        const where = `${kind} row ${offset + i} column ${spec.name}`;
        assert.deepEqual(Buffer.from(row.values[c]!), Buffer.from(expected.bytes), where);
        assert.equal(defaulted.has(c), expected.defaulted, `${where} defaulted`);
        cells++;
      });
    });
  }
  return cells;
}

describe('every format × compression round-trips to the served values', () => {
  for (const format of formats) {
    for (const compression of compressions) {
      test(`${format} + ${compression}`, async () => {
        const snapshot = loggedModel({ format, compression, log_batch_size: 3 });

        const point = await servePoint(snapshot, 7);
        const records = await buildLogRecords(point);
        assert.equal(records.length, 3);
        for (const record of records) {
          assert.equal(
            record.format,
            LogFormat[`LOG_FORMAT_${format.toUpperCase()}` as keyof typeof LogFormat],
          );
          assert.equal(
            record.compression,
            LogCompression[`LOG_COMPRESSION_${compression.toUpperCase()}` as keyof typeof LogCompression],
          );
        }
        assert.ok((await assertRoundTrip(point, records)) > 7 * 15);

        const sparse = sparseContext(snapshot, 5);
        await assertRoundTrip(sparse, await buildLogRecords(sparse));

        const slates = await serveSlates(snapshot, 4, [[0, 3], [2], [1, 2, 3], [3, 0]]);
        await assertRoundTrip(slates, await buildLogRecords(slates));
      });
    }
  }
});

describe('payload encodings', () => {
  test('compression is really applied: gzip and zstd payloads inflate to the uncompressed payload', async () => {
    const plain = await buildLogRecords(await servePoint(loggedModel({ compression: 'none' }), 40));
    const gzip = await buildLogRecords(await servePoint(loggedModel({ compression: 'gzip' }), 40));
    const zstd = await buildLogRecords(await servePoint(loggedModel({ compression: 'zstd' }), 40));
    const payload = plain[0]!.payload;
    assert.ok(gzip[0]!.payload.length < payload.length / 2, 'gzip shrinks the payload');
    assert.ok(zstd[0]!.payload.length < payload.length / 2, 'zstd shrinks the payload');
    assert.deepEqual(gunzipSync(gzip[0]!.payload), payload);
    // Checked with another zstd implementation (fzstd, pure JavaScript) than the one that wrote it.
    assert.deepEqual(Buffer.from(fzstdDecompress(zstd[0]!.payload)), payload);
  });

  test('arrow: one IPC stream per record, entity id first, typed columns with nulls for defaulted cells', async () => {
    const snapshot = loggedModel({ format: 'arrow' });
    const [record] = await buildLogRecords(sparseContext(snapshot, 5));
    const table = tableFromIPC(record!.payload);
    const types = Object.fromEntries(table.schema.fields.map((f) => [f.name, String(f.type)]));
    assert.equal(table.schema.fields[0]!.name, 'entity_id');
    assert.deepEqual(
      {
        entity_id: types['entity_id'],
        score: types['score'],
        price: types['price'],
        emb: types['emb'],
        tags: types['tags'],
        name: types['name'],
        clicks: types['clicks'],
        half: types['half'],
        tiny: types['tiny'],
        flags: types['flags'],
        ok: types['ok'],
        counts: types['counts'],
        big: types['big'],
        ids: types['ids'],
        pair: types['pair'],
        wide: types['wide'],
        bits: types['bits'],
        small: types['small'],
        e5: types['e5'],
        u32: types['u32'],
        i8v: types['i8v'],
        h16v: types['h16v'],
      },
      {
        entity_id: 'Utf8',
        score: 'Float64',
        price: 'Float32',
        emb: 'FixedSizeList[3]<Float32>',
        tags: 'List<Utf8>',
        name: 'Utf8',
        clicks: 'Int64',
        half: 'Float32',
        tiny: 'Float32',
        flags: 'List<Bool>',
        ok: 'Bool',
        counts: 'FixedSizeList[2]<Uint16>',
        big: 'Uint64',
        ids: 'List<Int64>',
        pair: 'FixedSizeList[2]<Utf8>',
        wide: 'List<Float64>',
        bits: 'FixedSizeList[10]<Bool>',
        small: 'Int16',
        e5: 'FixedSizeList[2]<Float32>',
        u32: 'Uint32',
        i8v: 'List<Int8>',
        h16v: 'List<Float32>',
      },
    );
    const half = table.schema.fields.find((f) => f.name === 'half')!;
    assert.equal(half.metadata.get('lattice.data_type'), 'FP16');
    assert.deepEqual(table.getChild('entity_id')!.toArray(), [
      'sparse-0',
      'sparse-1',
      'sparse-2',
      'sparse-3',
      'sparse-4',
    ]);
    assert.equal(table.getChild('score')!.nullCount, 5);
    // price is column 0 of the request columns: written unless (row + 0) % 3 === 0.
    assert.deepEqual(
      Array.from({ length: 5 }, (_, r) => table.getChild('price')!.get(r)),
      [null, 2.5, 3.5, null, 5.5],
    );
    assert.equal(table.getChild('clicks')!.get(1), 10n ** 15n - 7n);
    assert.deepEqual([...table.getChild('emb')!.get(1)!.toArray()], [1, -0.5, Math.fround(0.1)]);
    assert.equal(table.getChild('emb')!.get(2), null);
  });

  test('parquet: a Parquet file with the same typed table', async () => {
    const [record] = await buildLogRecords(sparseContext(loggedModel({ format: 'parquet' }), 4));
    assert.equal(Buffer.from(record!.payload.subarray(0, 4)).toString(), 'PAR1');
    const table = parquetToArrow(record!.payload);
    assert.equal(
      String(table.schema.fields.find((f) => f.name === 'counts')!.type),
      'FixedSizeList[2]<Uint16>',
    );
    assert.equal(table.getChild('big')!.get(1), 2n ** 64n - 2n);
  });

  test('JSON rows: floats shortest, int64 as strings, vectors as arrays, defaulted names', async () => {
    const snapshot = loggedModel({ format: 'parquet', compression: 'zstd' });
    const [record] = await buildLogRecords(sparseContext(snapshot, 5));
    const [, row1, row2] = logRowObjects(await decodeLogRecord(record!));
    assert.ok(row1 && row2);
    assert.equal(row1.entity_id, 'sparse-1');
    assert.equal(row1.tracking_id, 'sparse');
    assert.equal(row1.model_config_id, 'logged');
    assert.equal(row1.config_version, '7');
    assert.equal(row1.rows, 'targets');
    assert.equal(row1.features['price'], 2.5);
    assert.deepEqual(row1.features['emb'], [1, -0.5, 0.1]);
    assert.equal(row1.features['name'], 'naïve ✓ 1');
    assert.equal(row1.features['clicks'], '999999999999993');
    assert.equal(row1.features['big'], '18446744073709551614');
    assert.deepEqual(row1.features['counts'], [1, 65534]);
    assert.deepEqual(row1.features['pair'], ['l1', '']);
    assert.equal(row1.features['tiny'], 0.25);
    assert.equal(row1.features['half'], 0);
    // Row 1 columns with (1 + c) % 3 === 0 are defaulted: tags, half, ok, ids, bits, u32.
    assert.deepEqual(row1.defaulted.sort(), ['bits', 'half', 'ids', 'ok', 'score', 'tags', 'u32']);
    assert.equal(row1.features['small'], -300);
    assert.deepEqual(row1.features['e5'], [2, -0.5]);
    assert.deepEqual(row1.features['i8v'], [-127]);
    assert.deepEqual(row1.features['bits'], new Array(10).fill(false));
    assert.deepEqual(row1.features['tags'], []);
    assert.deepEqual(row1.features['ids'], []);
    assert.equal(row1.features['ok'], false);
    // flags of row 1: [false], a BOOL_VECTOR of dimension 0 reads back as whole bytes (8 bits).
    assert.deepEqual(row1.features['flags'], [false, false, false, false, false, false, false, false]);
    assert.equal(row1.features['score'], 0);
    assert.deepEqual(row2.features['ids'], ['-2', '4611686018427387904']);
    assert.deepEqual(row2.features['tags'], ['tag-2-0', 'tag-2-1']);
    assert.deepEqual(row2.features['half'], 2.5);
    // Row 2 columns with (2 + c) % 3 === 0 are defaulted: emb, clicks, flags, big, wide, e5, h16v.
    assert.deepEqual(row2.defaulted.sort(), ['big', 'clicks', 'e5', 'emb', 'flags', 'h16v', 'score', 'wide']);
    assert.deepEqual(row2.features['bits'], [
      false,
      true,
      false,
      false,
      true,
      false,
      false,
      true,
      false,
      false,
    ]);
    assert.equal(row2.features['u32'], 4_000_000_002);
    assert.deepEqual(row2.features['emb'], [0, 0, 0]);
    assert.deepEqual(row2.features['wide'], []);
  });
});

describe('the decoder rejects what it cannot read, naming why', () => {
  async function rejects(record: OrchestratorLog, message: RegExp) {
    await assert.rejects(decodeLogRecord(record), (err) => {
      assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
      assert.match(err.message, message);
      return true;
    });
  }

  test('unspecified format or compression, corrupt payloads, rows that do not fit the schema', async () => {
    const snapshot = loggedModel({ format: 'proto', compression: 'zstd' });
    const [record] = await buildLogRecords(sparseContext(snapshot, 3));
    assert.ok(record);
    await rejects({ ...record, format: LogFormat.LOG_FORMAT_UNSPECIFIED }, /format 0 is not one of/);
    await rejects({ ...record, compression: LogCompression.LOG_COMPRESSION_UNSPECIFIED }, /compression 0/);
    await rejects({ ...record, compression: LogCompression.LOG_COMPRESSION_GZIP }, /does not decompress as/);
    await rejects({ ...record, payload: Buffer.from([1, 2, 3, 4, 5, 6]) }, /does not decompress as/);
    await rejects({ ...record, entityIds: ['a'] }, /3 rows for 1 entity ids/);
    await rejects({ ...record, schema: record.schema.slice(1) }, /values for \d+ schema entries/);
    await rejects(
      { ...record, schema: [record.schema[1]!, ...record.schema.slice(1)] },
      /is empty or repeated/,
    );

    const [arrow] = await buildLogRecords(sparseContext(loggedModel({ format: 'arrow' }), 3));
    const swapped = [...arrow!.schema];
    [swapped[1], swapped[2]] = [swapped[2]!, swapped[1]!];
    await rejects({ ...arrow!, schema: swapped }, /logs as/);
    await rejects({ ...arrow!, payload: Buffer.from('not arrow') }, /not an Arrow IPC stream/);
  });
});
