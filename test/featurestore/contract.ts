/**
 * The FeatureStore contract: every adapter runs this suite, at the storage level and through the
 * gRPC service over loopback, so the memory and Redis stores cannot drift apart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodeValue } from '../../src/datatypes/codecs.js';
import { allDataTypes, DataType } from '../../src/datatypes/data-type.js';
import { formatValue } from '../../src/datatypes/value-text.js';
import { encodeFeatureValue } from '../../src/featurestore/feature-value.js';
import {
  type FeatureRegistry,
  type FeatureStore,
  type RunningFeatureStore,
  startFeatureStore,
  writeFeatureRows,
} from '../../src/featurestore/index.js';
import type { FeatureServiceClient } from '../../src/gen/retrieve/retrieve.js';
import { type ErrorCode, isLatticeError } from '../../src/platform/errors.js';
import { eventually } from '../support/servers.js';
import {
  connect,
  featureNameOf,
  query,
  retrieve,
  retrieveDecoded,
  sampleValues,
  typesRegistry,
  VECTOR_DIM,
} from './support.js';

export interface FeatureStoreContractTarget {
  name: string;
  /** Opens a store; called once for the suite and again where a test needs its own. */
  open(): Promise<FeatureStore>;
  skip?: string | false;
}

async function rejectsWith(work: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(work, (err: unknown) => isLatticeError(err, code));
}

const bytes = (...values: number[]) => Uint8Array.from(values);
const hex = (value: Uint8Array | undefined) =>
  value === undefined ? undefined : Buffer.from(value).toString('hex');

export function featureStoreContract(target: FeatureStoreContractTarget): void {
  describe(`FeatureStore contract: ${target.name}`, { skip: target.skip ?? false }, () => {
    let store: FeatureStore;
    let counter = 0;
    /** An entity name unique to one test, so tests sharing the store never see each other's rows. */
    const entity = () => `e${++counter}`;

    before(async () => {
      store = await target.open();
    });
    after(async () => {
      await store?.close();
    });

    test('reads back written groups; absent groups and keys read as undefined', async () => {
      const e = entity();
      await store.write(e, [
        {
          key: ['k1'],
          groups: new Map([
            ['g1', bytes(1, 2)],
            ['g2', bytes(3)],
          ]),
        },
        { key: ['k2'], groups: new Map([['g1', bytes(4)]]) },
      ]);
      const rows = await store.read(e, [['k2'], ['missing'], ['k1']], ['g1', 'g2', 'g3']);
      assert.deepEqual(
        rows.map((row) => row.map(hex)),
        [
          ['04', undefined, undefined],
          [undefined, undefined, undefined],
          ['0102', '03', undefined],
        ],
      );
      assert.deepEqual(await store.read(e, [], ['g1']), []);
    });

    test('a write replaces the listed groups and keeps the others; later rows win', async () => {
      const e = entity();
      await store.write(e, [
        {
          key: ['k'],
          groups: new Map([
            ['g1', bytes(1)],
            ['g2', bytes(2)],
          ]),
        },
      ]);
      await store.write(e, [
        { key: ['k'], groups: new Map([['g1', bytes(10)]]) },
        { key: ['k'], groups: new Map([['g1', bytes(11)]]) },
      ]);
      const [row] = await store.read(e, [['k']], ['g1', 'g2']);
      assert.deepEqual(row?.map(hex), ['0b', '02']);
    });

    test('the buffers written are copied: changing them afterwards changes nothing', async () => {
      const e = entity();
      const value = bytes(7, 7);
      await store.write(e, [{ key: ['k'], groups: new Map([['g', value]]) }]);
      value.fill(0);
      assert.equal(hex((await store.read(e, [['k']], ['g']))[0]?.[0]), '0707');
    });

    test('keys are entity-scoped and key parts containing | or \\ stay distinct', async () => {
      const e = entity();
      const other = entity();
      await store.write(e, [
        { key: ['a|b', 'c'], groups: new Map([['g', bytes(1)]]) },
        { key: ['a', 'b|c'], groups: new Map([['g', bytes(2)]]) },
        { key: ['a\\', '|c'], groups: new Map([['g', bytes(3)]]) },
      ]);
      await store.write(other, [{ key: ['a|b', 'c'], groups: new Map([['g', bytes(9)]]) }]);
      const rows = await store.read(
        e,
        [
          ['a|b', 'c'],
          ['a', 'b|c'],
          ['a\\', '|c'],
          ['a', 'b', 'c'],
        ],
        ['g'],
      );
      assert.deepEqual(
        rows.map((row) => hex(row[0])),
        ['01', '02', '03', undefined],
      );
    });

    test('rows written with a TTL expire; without one they stay', async () => {
      const e = entity();
      await store.write(e, [{ key: ['short'], groups: new Map([['g', bytes(1)]]) }], { ttlMs: 80 });
      await store.write(e, [{ key: ['long'], groups: new Map([['g', bytes(2)]]) }]);
      assert.equal(hex((await store.read(e, [['short']], ['g']))[0]?.[0]), '01');
      await eventually(
        async () => (await store.read(e, [['short']], ['g']))[0]?.[0] === undefined,
        5000,
        'the row to expire',
      );
      assert.equal(hex((await store.read(e, [['long']], ['g']))[0]?.[0]), '02');
      await rejectsWith(
        store.write(e, [{ key: ['x'], groups: new Map([['g', bytes(1)]]) }], { ttlMs: 0 }),
        'INVALID_ARGUMENT',
      );
    });

    test('delete removes every group of the rows', async () => {
      const e = entity();
      await store.write(e, [
        {
          key: ['a'],
          groups: new Map([
            ['g1', bytes(1)],
            ['g2', bytes(2)],
          ]),
        },
        { key: ['b'], groups: new Map([['g1', bytes(3)]]) },
      ]);
      await store.delete(e, [['a'], ['absent']]);
      const rows = await store.read(e, [['a'], ['b']], ['g1', 'g2']);
      assert.deepEqual(
        rows.map((row) => row.map(hex)),
        [
          [undefined, undefined],
          ['03', undefined],
        ],
      );
    });

    test('many keys in one read come back in order', async () => {
      const e = entity();
      const keys = Array.from({ length: 3000 }, (_, i) => [`k${i}`]);
      await store.write(
        e,
        keys
          .filter((_, i) => i % 3 !== 0)
          .map((key) => ({ key, groups: new Map([['g', Buffer.from(key[0]!)]]) })),
      );
      const shuffled = [...keys].reverse();
      const rows = await store.read(e, shuffled, ['g']);
      rows.forEach((row, i) => {
        const id = Number(shuffled[i]![0]!.slice(1));
        assert.equal(
          row[0] === undefined ? undefined : Buffer.from(row[0]).toString(),
          id % 3 === 0 ? undefined : `k${id}`,
        );
      });
    });

    test('a closed store fails with UNAVAILABLE', async () => {
      const own = await target.open();
      await own.close();
      await own.close();
      await rejectsWith(own.read('x', [['k']], ['g']), 'UNAVAILABLE');
      await rejectsWith(own.write('x', [{ key: ['k'], groups: new Map([['g', bytes(1)]]) }]), 'UNAVAILABLE');
    });

    describe('served over gRPC', () => {
      let registry: FeatureRegistry;
      let server: RunningFeatureStore;
      let withDefaults: RunningFeatureStore;
      let client: FeatureServiceClient;
      let defaultsClient: FeatureServiceClient;

      before(async () => {
        registry = typesRegistry();
        server = await startFeatureStore({ registry, store });
        withDefaults = await startFeatureStore({ registry, store, fillDefaults: true });
        client = connect(server.address);
        defaultsClient = connect(withDefaults.address);
        await writeFeatureRows(store, registry, 'typed', [{ key: ['t1'], values: { all: sampleValues } }]);
        await writeFeatureRows(store, registry, 'pair', [
          { key: ['a', 'b'], values: { g: { score: 0.5 } } },
          { key: ['b', 'a'], values: { g: { score: 2 } } },
        ]);
        await writeFeatureRows(store, registry, 'wide', [
          { key: ['w1'], values: { a: { x: 7, label: 'seven' }, b: { n: 42, flags: Array(10).fill(true) } } },
          { key: ['w2'], values: { a: { x: 8 } } },
        ]);
      });
      after(async () => {
        client?.close();
        defaultsClient?.close();
        await server?.stop();
        await withDefaults?.stop();
      });

      const f32 = (x: number) => Buffer.from(encodeValue(DataType.FP32, x));

      test('one row per key in request order, duplicates repeated, unknown keys with empty columns', async () => {
        const result = await retrieve(
          client,
          query(
            'pair',
            ['left', 'right'],
            [
              ['b', 'a'],
              ['zz', 'zz'],
              ['a', 'b'],
              ['b', 'a'],
            ],
            { g: ['score'] },
          ),
        );
        assert.equal(result.entityLabel, 'pair');
        assert.deepEqual(result.keysSchema, ['left', 'right']);
        assert.deepEqual(result.featureSchemas, [
          { featureGroupLabel: 'g', features: [{ label: 'score', columnIdx: 0 }] },
        ]);
        assert.deepEqual(
          result.rows.map((row) => row.keys),
          [
            ['b', 'a'],
            ['zz', 'zz'],
            ['a', 'b'],
            ['b', 'a'],
          ],
        );
        assert.deepEqual(
          result.rows.map((row) => row.columns),
          [[f32(2)], [], [f32(0.5)], [f32(2)]],
        );
      });

      test('keys_schema in another order: key parts are matched by name', async () => {
        const result = await retrieve(
          client,
          query(
            'pair',
            ['right', 'left'],
            [
              ['b', 'a'],
              ['a', 'b'],
            ],
            { g: ['score'] },
          ),
        );
        assert.deepEqual(
          result.rows.map((row) => row.keys),
          [
            ['b', 'a'],
            ['a', 'b'],
          ],
        );
        assert.deepEqual(
          result.rows.map((row) => row.columns),
          [[f32(0.5)], [f32(2)]],
        );
      });

      test('fillDefaults answers unknown keys with the registry defaults', async () => {
        const result = await retrieve(
          defaultsClient,
          query(
            'pair',
            ['left', 'right'],
            [
              ['zz', 'zz'],
              ['a', 'b'],
            ],
            { g: ['score'] },
          ),
        );
        assert.deepEqual(
          result.rows.map((row) => row.columns),
          [[f32(-1)], [f32(0.5)]],
        );
        const decoded = await retrieveDecoded(
          defaultsClient,
          query('wide', ['id'], [['nobody']], { b: ['n', 'flags'], a: ['label', 'x'] }),
        );
        assert.deepEqual(decoded.rows[0]?.columns, [
          '9007199254740993',
          Array(10).fill('false').join(','),
          'none',
          '1.5',
        ]);
      });

      test('every data type round-trips through the store and the wire', async () => {
        const labels = allDataTypes.map(featureNameOf);
        const result = await retrieve(client, query('typed', ['id'], [['t1']], { all: labels }));
        const decoded = await retrieveDecoded(client, query('typed', ['id'], [['t1']], { all: labels }));
        const row = result.rows[0]!;
        assert.equal(row.columns.length, allDataTypes.length);
        allDataTypes.forEach((type, i) => {
          const name = featureNameOf(type);
          const dim = DataType[type].endsWith('_VECTOR') ? VECTOR_DIM : 0;
          const expected = encodeFeatureValue({ dataType: type, vectorDim: dim }, sampleValues[name], name)!;
          assert.equal(hex(row.columns[i]), hex(expected), name);
          assert.equal(decoded.rows[0]?.columns[i], formatValue(type, expected, dim), name);
        });
        // Spot checks against hand-written bytes.
        const at = (type: DataType) => row.columns[allDataTypes.indexOf(type)]!;
        assert.equal(hex(at(DataType.FP32)), '00005040');
        assert.equal(hex(at(DataType.INT32)), hex(bytes(0x00, 0x6c, 0xca, 0x88)));
        assert.equal(Buffer.from(at(DataType.STRING)).toString(), 'héllo, wörld');
        assert.equal(hex(at(DataType.BOOL)), '01');
        assert.equal(hex(at(DataType.BOOL_VECTOR)), '05');
        assert.equal(hex(at(DataType.FP16)), '5535');
        assert.deepEqual(
          [...new Float32Array(new Uint8Array(at(DataType.FP32_VECTOR)).buffer)],
          [0.1, 0.2, 0.3].map(Math.fround),
        );
        assert.equal(decoded.rows[0]?.columns[allDataTypes.indexOf(DataType.UINT64)], '18446744073709551615');
        assert.equal(decoded.rows[0]?.columns[allDataTypes.indexOf(DataType.STRING_VECTOR)], 'a,,ç');
      });

      test('column_idx runs over groups × features in query order; a group missing for a found key takes defaults', async () => {
        const result = await retrieve(
          client,
          query('wide', ['id'], [['w2'], ['w1']], { b: ['flags', 'n'], a: ['x'] }),
        );
        assert.deepEqual(result.featureSchemas, [
          {
            featureGroupLabel: 'b',
            features: [
              { label: 'flags', columnIdx: 0 },
              { label: 'n', columnIdx: 1 },
            ],
          },
          { featureGroupLabel: 'a', features: [{ label: 'x', columnIdx: 2 }] },
        ]);
        const n = (x: bigint) => Buffer.from(encodeValue(DataType.INT64, x));
        assert.deepEqual(result.rows[0]?.columns, [Buffer.from([0, 0]), n(9007199254740993n), f32(8)]);
        assert.deepEqual(result.rows[1]?.columns, [Buffer.from([0xff, 0x03]), n(42n), f32(7)]);
        const decoded = await retrieveDecoded(client, query('wide', ['id'], [['w2']], { a: ['label', 'x'] }));
        assert.deepEqual(decoded.rows[0]?.columns, ['none', '8']);
      });
    });
  });
}
