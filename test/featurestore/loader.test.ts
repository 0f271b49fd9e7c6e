import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  type DataType,
  Field,
  Float32,
  Float64,
  Int32,
  Int64,
  List,
  Table,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { Compression, Table as WasmTable, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import {
  type BadRow,
  describeBadRow,
  FeatureRegistry,
  FeatureRetriever,
  type FeatureStore,
  LoadAbortedError,
  type LoadOptions,
  loadFeatureFiles,
  MemoryFeatureStore,
  type StoredRow,
  type WriteOptions,
} from '../../src/featurestore/index.js';
import { LatticeError } from '../../src/platform/errors.js';
import { query } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'lattice-fs-loader-'));
let fileCounter = 0;
function file(extension: string, content: string | Uint8Array): string {
  const path = join(dir, `f${++fileCounter}.${extension}`);
  writeFileSync(path, content);
  return path;
}

/** A Parquet file of typed columns (parquet-wasm, the loader's own library, written from Arrow). */
function parquetBytes(
  columns: Record<string, { type: DataType; data: unknown[] }>,
  options: { rowGroupSize?: number; compression?: Compression } = {},
): Uint8Array {
  const table = new Table(
    Object.fromEntries(
      Object.entries(columns).map(([name, { type, data }]) => [name, vectorFromArray(data, type)]),
    ),
  );
  let properties = new WriterPropertiesBuilder().setCompression(options.compression ?? Compression.SNAPPY);
  if (options.rowGroupSize) properties = properties.setMaxRowGroupSize(options.rowGroupSize);
  return writeParquet(WasmTable.fromIPCStream(tableToIPC(table, 'stream')), properties.build());
}

const registry = FeatureRegistry.fromDocument({
  entities: [
    {
      name: 'user',
      keys: ['user_id'],
      ttl_seconds: 120,
      feature_groups: [
        {
          name: 'profile',
          features: [
            { name: 'age', data_type: 'FP32', default: 30 },
            { name: 'country', data_type: 'STRING', default: 'UNKNOWN' },
            { name: 'embedding', data_type: 'FP32_VECTOR', vector_dim: 4 },
          ],
        },
        {
          name: 'activity',
          features: [
            { name: 'clicks', data_type: 'INT64' },
            { name: 'age', data_type: 'FP32' },
          ],
        },
      ],
    },
    {
      name: 'catalog',
      keys: ['catalog_id'],
      feature_groups: [
        {
          name: 'stats',
          features: [
            { name: 'price', data_type: 'FP32' },
            { name: 'ctr_7d', data_type: 'FP16' },
          ],
        },
        { name: 'attributes', features: [{ name: 'category_id', data_type: 'INT32', default: -1 }] },
      ],
    },
  ],
});

/** The stored values of `features` for `keys`, rendered as text (empty list: not found). */
async function textRows(
  store: FeatureStore,
  entity: string,
  keys: string[],
  groups: Record<string, string[]>,
) {
  const keyName = registry.requireEntity(entity).keys[0]!;
  const result = await new FeatureRetriever(registry, store).retrieveDecoded(
    query(
      entity,
      [keyName],
      keys.map((key) => [key]),
      groups,
    ),
  );
  return result.rows.map((row) => row.columns);
}

function load(overrides: Partial<LoadOptions> & Pick<LoadOptions, 'files'>) {
  const bad: BadRow[] = [];
  const store = overrides.store ?? new MemoryFeatureStore();
  const loading = loadFeatureFiles({
    registry,
    store,
    entity: 'user',
    progress: false,
    onBadRow: (row) => bad.push(row),
    ...overrides,
  });
  return { store, bad, loading };
}

/** A store that records its writes and can be slowed down or made to fail. */
class SpyStore extends MemoryFeatureStore {
  writes: { rows: number; ttlMs: number | undefined }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  delayMs = 0;
  failAfter = Number.POSITIVE_INFINITY;

  override async write(
    entity: string,
    rows: readonly StoredRow[],
    options: WriteOptions = {},
  ): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      // A slow store (the scenario), not a wait for a condition.
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      if (this.writes.length >= this.failAfter) throw new LatticeError('UNAVAILABLE', 'Redis went away');
      this.writes.push({ rows: rows.length, ttlMs: options.ttlMs });
      await super.write(entity, rows, options);
    } finally {
      this.inFlight--;
    }
  }
}

describe('bulk loader', () => {
  test('CSV: key and feature columns by group:feature, entity:group:feature or bare name; vectors as JSON or comma lists', async () => {
    const csv = file(
      'csv',
      'user_id,profile:age,country,user:profile:embedding,clicks\n' +
        'u1,31,IN,"[0.5, 1, 1.5, 2]",7\n' +
        'u2,,"US, East","1,2,3,4",\n' +
        '"u3",40.25,"multi\nline",1:2:3:4,9007199254740993\n',
    );
    const { store, bad, loading } = load({ files: [csv] });
    const report = await loading;
    assert.deepEqual(bad, []);
    assert.deepEqual(
      { read: report.rowsRead, written: report.rowsWritten, bad: report.badRows },
      { read: 3, written: 3, bad: 0 },
    );
    assert.deepEqual(report.files, [{ file: csv, format: 'csv', rowsRead: 3, rowsWritten: 3, badRows: 0 }]);
    assert.deepEqual(
      await textRows(store, 'user', ['u1', 'u2', 'u3', 'u4'], {
        profile: ['age', 'country', 'embedding'],
        activity: ['clicks', 'age'],
      }),
      [
        ['31', 'IN', '0.5,1,1.5,2', '7', '0'],
        ['30', 'US, East', '1,2,3,4', '0', '0'],
        ['40.25', 'multi\nline', '1,2,3,4', '9007199254740993', '0'],
        [],
      ],
    );
  });

  test('CSV: bad rows are reported with file and line, skipped and counted', async () => {
    const csv = file(
      'csv',
      [
        'user_id,profile:age,country', // 1
        'u1,20,IN', // 2
        'u2,abc,US', // 3: not a number
        '"u3",21,"multi', // 4: a record over two lines
        'line"', // 5
        ',22,IN', // 6: empty key
        'u4,23', // 7: too few fields
        '', // 8: blank, skipped
        'u5,"24"x,IN', // 9: text after a closing quote
        'u6,25,BR', // 10
      ].join('\n'),
    );
    const { store, bad, loading } = load({ files: [csv] });
    const report = await loading;
    assert.deepEqual(
      bad.map((row) => [row.line, row.reason]),
      [
        [3, 'profile:age: expected a number for FP32, got "abc"'],
        [6, 'key column user_id is empty'],
        [7, 'expected 3 fields, got 2'],
        [9, 'unexpected text after the closing quote of field 2'],
      ],
    );
    assert.equal(describeBadRow(bad[0]!), `${csv}:3: profile:age: expected a number for FP32, got "abc"`);
    assert.deepEqual(report.badRowSamples, bad);
    assert.deepEqual([report.rowsRead, report.rowsWritten, report.badRows], [7, 3, 4]);
    assert.deepEqual(await textRows(store, 'user', ['u1', 'u3', 'u6', 'u2'], { profile: ['country'] }), [
      ['IN'],
      ['multi\nline'],
      ['BR'],
      [],
    ]);
  });

  test('past maxBadRows the load aborts, naming where', async () => {
    const csv = file(
      'csv',
      `user_id,profile:age\n${Array.from({ length: 10 }, (_, i) => `u${i},${i % 2 ? 'x' : i}`).join('\n')}\n`,
    );
    const { bad, loading } = load({ files: [csv], maxBadRows: 2 });
    const error = await loading.then(
      () => assert.fail('expected the load to abort'),
      (err: unknown) => err,
    );
    assert.ok(error instanceof LoadAbortedError);
    assert.equal(error.code, 'INVALID_ARGUMENT');
    assert.match(error.message, /aborted at .*f\d+\.csv:7: .*3 bad rows, more than the limit of 2/);
    assert.equal(error.report.badRows, 3);
    assert.equal(bad.length, 3);
    await assert.rejects(
      load({ files: [csv], maxBadRows: 0 }).loading,
      /1 bad rows, more than the limit of 0/,
    );
  });

  test('whole-file problems stop the load: unknown, ambiguous, duplicate or missing columns, no header, unknown format', async () => {
    const cases: [string, RegExp][] = [
      [
        'user_id,profile:height\nu1,1\n',
        /:1: column "profile:height": "height" is not a feature of user\/profile/,
      ],
      ['user_id,colour\nu1,1\n', /column "colour" is neither a key \(user_id\) nor a feature of "user"/],
      ['user_id,age\nu1,1\n', /column "age" is ambiguous: name it profile:age or activity:age/],
      [
        'user_id,country,profile:country\nu1,a,b\n',
        /columns "country" and "profile:country" name the same feature/,
      ],
      ['age:x:y:z,profile:age\n1,1\n', /neither a key of "user" nor group:feature/],
      ['profile:age\n1\n', /missing key column\(s\) user_id/],
      ['user_id\nu1\n', /no feature columns/],
      ['', /no header row/],
    ];
    for (const [content, message] of cases) {
      await assert.rejects(load({ files: [file('csv', content)] }).loading, (err: unknown) => {
        assert.ok(err instanceof LoadAbortedError, String(err));
        assert.match(err.message, message);
        return true;
      });
    }
    await assert.rejects(load({ files: [file('txt', 'x')] }).loading, /cannot tell the format from "\.txt"/);
    await assert.rejects(load({ files: [join(dir, 'absent.csv')] }).loading, /absent\.csv cannot be read/);
  });

  test('JSON Lines: values of any JSON type, null for defaults, bad lines reported', async () => {
    const jsonl = file(
      'jsonl',
      [
        '{"user_id": "u1", "age": 1}', // 1: ambiguous bare name in JSON → bad row
        '{"user_id": "u1", "profile:age": 33.5, "country": "DE", "embedding": [1, 2, 3, 4]}', // 2
        '{"user_id": 2, "profile:age": null, "activity:clicks": "123", "embedding": "0.5,0.5,0.5,0.5"}', // 3
        '', // 4
        '{"user_id": "u3", "embedding": [1, 2]}', // 5: wrong dimension
        '[1, 2]', // 6: not an object
        '{"user_id": "u4", ', // 7: not JSON
        '{"profile:age": 3}', // 8: no key
        '{"user_id": "u5", "shoe_size": 3}', // 9: unknown column
        '{"user_id": "u6", "activity:clicks": 1.5}', // 10: not an integer
        '{"user_id": "u7"}', // 11: nothing to write
      ].join('\n'),
    );
    const { store, bad, loading } = load({ files: [jsonl] });
    const report = await loading;
    assert.deepEqual(
      bad.map((row) => [row.line, row.unit, row.reason]),
      [
        [1, 'line', 'column "age" is ambiguous: name it profile:age or activity:age'],
        [5, 'line', 'embedding: a FP32_VECTOR of dimension 4 needs 4 elements, got 2'],
        [6, 'line', 'expected a JSON object'],
        [7, 'line', bad[3]?.reason ?? ''],
        [8, 'line', 'missing key column(s) user_id'],
        [9, 'line', 'column "shoe_size" is neither a key (user_id) nor a feature of "user"'],
        [
          10,
          'line',
          'activity:clicks: expected an integer in [-9223372036854775808, 9223372036854775807] for INT64, got 1.5',
        ],
        [11, 'line', 'the row has no feature values'],
      ],
    );
    assert.match(bad[3]!.reason, /^not valid JSON: /);
    assert.deepEqual([report.rowsRead, report.rowsWritten], [10, 2]);
    assert.deepEqual(
      await textRows(store, 'user', ['u1', '2'], {
        profile: ['age', 'country', 'embedding'],
        activity: ['clicks'],
      }),
      [
        ['33.5', 'DE', '1,2,3,4', '0'],
        ['30', 'UNKNOWN', '0.5,0.5,0.5,0.5', '123'],
      ],
    );
  });

  test('Parquet: typed columns, lists as vectors, nulls as defaults, bad rows by row number across row groups', async () => {
    const ids = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'];
    const parquet = parquetBytes(
      {
        catalog_id: { type: new Utf8(), data: ids },
        'stats:price': { type: new Float64(), data: [9.99, 1, null, 3, 4, 5, 6] },
        ctr_7d: { type: new Float32(), data: [0.5, 0.25, 0.125, 1e6, 0, 0, 0] },
        'attributes:category_id': { type: new Int64(), data: [1n, 2n, null, 4n, 2n ** 40n, 6n, 7n] },
      },
      { rowGroupSize: 3 },
    );
    const catalogFile = file('parquet', parquet);
    const { store, bad, loading } = load({ files: [catalogFile], entity: 'catalog' });
    const report = await loading;
    assert.deepEqual(
      bad.map((row) => [row.line, row.unit]),
      [[5, 'row']],
    );
    assert.match(
      bad[0]!.reason,
      /attributes:category_id: expected an integer in \[-2147483648, 2147483647\] for INT32/,
    );
    assert.equal(describeBadRow(bad[0]!), `${catalogFile} row 5: ${bad[0]!.reason}`);
    assert.deepEqual([report.rowsRead, report.rowsWritten, report.files[0]?.format], [7, 6, 'parquet']);
    assert.deepEqual(
      await textRows(store, 'catalog', ['c1', 'c3', 'c4', 'c5', 'c7'], {
        stats: ['price', 'ctr_7d'],
        attributes: ['category_id'],
      }),
      [['9.99', '0.5', '1'], ['0', '0.125', '-1'], ['3', 'Infinity', '4'], [], ['6', '0', '7']],
    );

    const users = parquetBytes(
      {
        user_id: { type: new Utf8(), data: ['u1', 'u2'] },
        'profile:embedding': {
          type: new List(new Field('element', new Float32(), false)),
          data: [
            [1, 2, 3, 4],
            [0.5, 0.5, 0.5, 0.5],
          ],
        },
        'activity:clicks': { type: new Int64(), data: [5n, 9007199254740993n] },
      },
      { compression: Compression.ZSTD },
    );
    const userStore = new MemoryFeatureStore();
    await load({ files: [file('parquet', users)], store: userStore }).loading;
    assert.deepEqual(
      await textRows(userStore, 'user', ['u1', 'u2'], {
        profile: ['embedding', 'age'],
        activity: ['clicks'],
      }),
      [
        ['1,2,3,4', '30', '5'],
        ['0.5,0.5,0.5,0.5', '30', '9007199254740993'],
      ],
    );

    const unknown = parquetBytes(
      { user_id: { type: new Utf8(), data: ['u1'] }, height: { type: new Int32(), data: [1] } },
      { compression: Compression.GZIP },
    );
    await assert.rejects(
      load({ files: [file('parquet', unknown)] }).loading,
      /column "height" is neither a key/,
    );
    await assert.rejects(
      load({ files: [file('parquet', 'not parquet at all')] }).loading,
      /is not a readable Parquet file/,
    );
  });

  test('writes go out in batches with a bounded number in flight, with the entity TTL or the given one', async () => {
    const rows = Array.from({ length: 1050 }, (_, i) => `u${i},${i}`).join('\n');
    const csv = file('csv', `user_id,profile:age\n${rows}\n`);
    const store = new SpyStore();
    store.delayMs = 5;
    const report = await load({ files: [csv, csv], store, batchSize: 100, concurrency: 3 }).loading;
    assert.equal(report.rowsWritten, 2100);
    assert.deepEqual(
      store.writes.map((w) => w.rows),
      [...Array(10).fill(100), 50, ...Array(10).fill(100), 50],
    );
    assert.equal(store.maxInFlight, 3);
    assert.ok(store.writes.every((w) => w.ttlMs === 120_000));

    const other = new SpyStore();
    await load({ files: [csv], store: other, ttlMs: 5000 }).loading;
    assert.deepEqual(
      other.writes.map((w) => [w.rows, w.ttlMs]),
      [
        [500, 5000],
        [500, 5000],
        [50, 5000],
      ],
    );
  });

  test('a failing store aborts the load with its error', async () => {
    const csv = file(
      'csv',
      `user_id,profile:age\n${Array.from({ length: 300 }, (_, i) => `u${i},1`).join('\n')}\n`,
    );
    const store = new SpyStore();
    store.failAfter = 1;
    const error = await load({ files: [csv], store, batchSize: 100 }).loading.then(
      () => assert.fail('expected a failure'),
      (err: unknown) => err,
    );
    assert.ok(error instanceof LoadAbortedError);
    assert.equal(error.code, 'UNAVAILABLE');
    assert.match(error.message, /Redis went away/);
    assert.equal(error.report.rowsWritten, 100);
  });

  test('progress: plain lines when not a terminal, a redrawn bar on a terminal', async () => {
    const csv = file(
      'csv',
      `user_id,profile:age\n${Array.from({ length: 40_000 }, (_, i) => `u${i},${i % 90}`).join('\n')}\n`,
    );
    let clock = 0;
    const now = () => (clock += 1000);
    const plain: string[] = [];
    await load({
      files: [csv],
      progress: { stream: { write: (text: string) => plain.push(text) }, intervalMs: 1500, now },
    }).loading;
    assert.ok(plain.length >= 2, plain.join(''));
    assert.ok(plain.every((line) => line.endsWith('\n') && !line.includes('\r')));
    assert.match(plain[0]!, /^f\d+\.csv: [\d,]+ rows \(\d+%\), [\d,]+ rows\/s\n$/);
    assert.match(plain.at(-1)!, /^f\d+\.csv: 40,000 rows in [\d.]+ s \([\d,]+ rows\/s\)\n$/);

    const drawn: string[] = [];
    clock = 0;
    await load({
      files: [csv],
      progress: { stream: { write: (text: string) => drawn.push(text), isTTY: true }, now },
    }).loading;
    assert.ok(drawn[0]!.startsWith('\r') && drawn[0]!.endsWith('\u001b[K'), JSON.stringify(drawn[0]));
    assert.match(drawn[0]!, /^.f\d+\.csv \[[█░]{24}\]\s+\d+% [\d,]+ rows [\d,]+ rows\/s.\[K$/s);
    assert.match(drawn.at(-1)!, /40,000 rows in .*\n$/);
  });
});
