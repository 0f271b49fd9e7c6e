import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import {
  encodeGroup,
  MemoryFeatureStore,
  type RunningFeatureStore,
  startFeatureStore,
  writeFeatureRows,
} from '../../src/featurestore/index.js';
import type { FeatureServiceClient } from '../../src/gen/retrieve/retrieve.js';
import { connect, query, rejectsWithStatus, retrieve, retrieveDecoded, typesRegistry } from './support.js';

const healthProto = fileURLToPath(
  new URL('../../node_modules/grpc-health-check/proto/health/v1/health.proto', import.meta.url),
);

async function healthStatus(address: string): Promise<unknown> {
  const pkg = grpc.loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const health = new pkg.grpc.health.v1.Health(address, grpc.credentials.createInsecure());
  try {
    const answer = await new Promise<{ status: unknown }>((resolve, reject) =>
      (
        health as unknown as { check(r: object, cb: (e: Error | null, r: { status: unknown }) => void): void }
      ).check({ service: 'retrieve.FeatureService' }, (err, res) => (err ? reject(err) : resolve(res))),
    );
    return answer.status;
  } finally {
    health.close();
  }
}

describe('feature store server', () => {
  const registry = typesRegistry();
  const store = new MemoryFeatureStore();
  let server: RunningFeatureStore;
  let client: FeatureServiceClient;

  before(async () => {
    server = await startFeatureStore({ registry, store, maxKeysPerQuery: 5 });
    client = connect(server.address);
    await writeFeatureRows(store, registry, 'wide', [
      { key: ['w1'], values: { a: { x: 2.5, label: 'two' }, b: { n: 3 } } },
    ]);
    await writeFeatureRows(store, registry, 'typed', [
      { key: ['t1'], values: { all: { fp32: 70000.5, fp32_vector: [1, 2, 3], int32: 300, string: 's' } } },
    ]);
  });
  after(async () => {
    client?.close();
    await server?.stop();
  });

  describe('validation: INVALID_ARGUMENT naming the field', () => {
    const invalid = (request: Parameters<typeof retrieve>[1], message: RegExp) =>
      rejectsWithStatus(retrieve(client, request), grpc.status.INVALID_ARGUMENT, message);

    test('entity', async () => {
      await invalid(query('', ['id'], [['w1']], { a: ['x'] }), /entity_label is required/);
      await invalid(
        query('nobody', ['id'], [['w1']], { a: ['x'] }),
        /unknown entity "nobody" \(known: typed, pair, wide\)/,
      );
    });

    test('feature groups and features', async () => {
      await invalid(query('wide', ['id'], [['w1']], {}), /feature_groups: at least one/);
      await invalid(
        query('wide', ['id'], [['w1']], { a: ['x'], c: ['x'] }),
        /feature_groups\[1\]\.label: "c" is not a feature group of entity "wide" \(known: a, b\)/,
      );
      await invalid(
        query('wide', ['id'], [['w1']], { a: [] }),
        /feature_groups\[0\]\.feature_labels: at least one feature/,
      );
      await invalid(
        query('wide', ['id'], [['w1']], { b: ['n', 'x'] }),
        /feature_groups\[0\]\.feature_labels\[1\]: "x" is not a feature of wide\/b/,
      );
    });

    test('type conversions asked with @TYPE', async () => {
      await invalid(
        query('wide', ['id'], [['w1']], { a: ['x@FP33'] }),
        /feature_labels\[0\]: unknown data type "FP33"/,
      );
      await invalid(
        query('wide', ['id'], [['w1']], { a: ['label@FP32'] }),
        /label is STRING and cannot be served as FP32/,
      );
      await invalid(
        query('wide', ['id'], [['w1']], { a: ['x@FP32_VECTOR'] }),
        /x is FP32 and cannot be served as FP32_VECTOR/,
      );
    });

    test('keys schema and key arity', async () => {
      await invalid(
        query('pair', ['left'], [['a']], { g: ['score'] }),
        /keys_schema: entity "pair" is keyed by \(left, right\), got \(left\)/,
      );
      await invalid(query('pair', ['left', 'middle'], [['a', 'b']], { g: ['score'] }), /keys_schema/);
      await invalid(query('pair', ['left', 'left'], [['a', 'b']], { g: ['score'] }), /keys_schema/);
      await invalid(
        query('pair', ['left', 'right'], [['a', 'b'], ['a']], { g: ['score'] }),
        /keys\[1\]\.cols: expected 2 key part\(s\) \(left, right\), got 1/,
      );
      await invalid(
        query('wide', ['id'], [['1'], ['2'], ['3'], ['4'], ['5'], ['6']], { a: ['x'] }),
        /at most 5 keys per query, got 6/,
      );
    });

    test('the field is also in the "field" trailer', async () => {
      const error = await invalid(query('wide', ['id'], [['w1']], { a: ['nope'] }), /nope/);
      assert.deepEqual(error.metadata.get('field'), ['feature_groups[0].feature_labels[0]']);
    });
  });

  test('no keys: an empty answer with the feature schemas', async () => {
    const result = await retrieve(client, query('wide', ['id'], [], { a: ['x', 'x'] }));
    assert.deepEqual(result.rows, []);
    assert.deepEqual(result.featureSchemas, [
      {
        featureGroupLabel: 'a',
        features: [
          { label: 'x', columnIdx: 0 },
          { label: 'x', columnIdx: 1 },
        ],
      },
    ]);
  });

  test('name@TYPE converts numeric values on the way out (FP32 → FP16 / INT8, vectors too)', async () => {
    const result = await retrieve(
      client,
      query('typed', ['id'], [['t1']], {
        all: ['fp32@FP16', 'int32@INT8', 'fp32_vector@DataTypeFP64Vector', 'fp32'],
      }),
    );
    assert.deepEqual(
      result.featureSchemas[0]?.features.map((f) => f.label),
      ['fp32@FP16', 'int32@INT8', 'fp32_vector@DataTypeFP64Vector', 'fp32'],
    );
    const [fp16, int8, fp64, fp32] = result.rows[0]!.columns;
    assert.equal(fp16 && Buffer.from(fp16).toString('hex'), '007c', 'past the FP16 range: +Inf');
    assert.equal(int8 && Buffer.from(int8).readInt8(0), 127, 'saturates');
    assert.deepEqual([...new Float64Array(new Uint8Array(fp64!).buffer)], [1, 2, 3]);
    assert.equal(fp32 && Buffer.from(fp32).readFloatLE(0), 70000.5);
    const decoded = await retrieveDecoded(client, query('typed', ['id'], [['t1']], { all: ['int32@FP64'] }));
    assert.deepEqual(decoded.rows[0]?.columns, ['300']);
  });

  test('a stored value that no longer fits its type is served as the default', async () => {
    // As if the feature had been INT8 when the row was written: one byte where FP32 needs four.
    await store.write('wide', [
      { key: ['legacy'], groups: new Map([['a', encodeGroup([Uint8Array.of(5), Buffer.from('ok')])]]) },
    ]);
    await store.write('wide', [{ key: ['corrupt'], groups: new Map([['a', Uint8Array.of(9, 9, 9)]]) }]);
    const decoded = await retrieveDecoded(
      client,
      query('wide', ['id'], [['legacy'], ['corrupt']], { a: ['x', 'label'] }),
    );
    assert.deepEqual(
      decoded.rows.map((row) => row.columns),
      [
        ['1.5', 'ok'],
        ['1.5', 'none'],
      ],
    );
  });

  test('a store that fails makes the call UNAVAILABLE, and the server keeps serving', async () => {
    const broken = new MemoryFeatureStore();
    await broken.close();
    const other = await startFeatureStore({ registry, store: broken });
    const otherClient = connect(other.address);
    try {
      await rejectsWithStatus(
        retrieve(otherClient, query('wide', ['id'], [['w1']], { a: ['x'] })),
        grpc.status.UNAVAILABLE,
        /feature store is closed/,
      );
      // Validation still answers first.
      await rejectsWithStatus(
        retrieve(otherClient, query('nobody', ['id'], [], { a: ['x'] })),
        grpc.status.INVALID_ARGUMENT,
      );
    } finally {
      otherClient.close();
      await other.stop();
    }
  });

  test('health reports SERVING for the service', async () => {
    assert.equal(await healthStatus(server.address), 'SERVING');
  });
});

describe('feature store server: caller-token auth', () => {
  const registry = typesRegistry();
  const store = new MemoryFeatureStore();
  let server: RunningFeatureStore;
  let custom: RunningFeatureStore;
  let client: FeatureServiceClient;
  let customClient: FeatureServiceClient;
  const request = query('pair', ['left', 'right'], [['a', 'b']], { g: ['score'] });

  before(async () => {
    await writeFeatureRows(store, registry, 'pair', [{ key: ['a', 'b'], values: { g: { score: 1 } } }]);
    server = await startFeatureStore({ registry, store, auth: { tokens: { ranker: 's3cret' } } });
    custom = await startFeatureStore({
      registry,
      store,
      auth: {
        tokens: { ranker: 's3cret' },
        idHeader: 'ONLINE-FEATURE-STORE-CALLER-ID',
        tokenHeader: 'online-feature-store-auth-token',
      },
    });
    client = connect(server.address);
    customClient = connect(custom.address);
  });
  after(async () => {
    client?.close();
    customClient?.close();
    await server?.stop();
    await custom?.stop();
  });

  test('missing metadata → UNAUTHENTICATED', async () => {
    await rejectsWithStatus(retrieve(client, request), grpc.status.UNAUTHENTICATED, /missing caller-id/);
    await rejectsWithStatus(
      retrieve(client, request, { callerId: 'ranker' }),
      grpc.status.UNAUTHENTICATED,
      /missing caller-token/,
    );
    await rejectsWithStatus(retrieveDecoded(client, request), grpc.status.UNAUTHENTICATED);
  });

  test('wrong token or unknown caller → UNAUTHENTICATED', async () => {
    await rejectsWithStatus(
      retrieve(client, request, { callerId: 'ranker', token: 'nope' }),
      grpc.status.UNAUTHENTICATED,
      /not authorized/,
    );
    await rejectsWithStatus(
      retrieve(client, request, { callerId: 'intruder', token: 's3cret' }),
      grpc.status.UNAUTHENTICATED,
    );
  });

  test('health checks need no token', async () => {
    assert.equal(await healthStatus(server.address), 'SERVING');
  });

  test('the right token is served', async () => {
    const result = await retrieve(client, request, { callerId: 'ranker', token: 's3cret' });
    assert.equal(Buffer.from(result.rows[0]!.columns[0]!).readFloatLE(0), 1);
  });

  test('header names are configurable', async () => {
    const auth = {
      callerId: 'ranker',
      token: 's3cret',
      idHeader: 'online-feature-store-caller-id',
      tokenHeader: 'online-feature-store-auth-token',
    };
    assert.equal((await retrieve(customClient, request, auth)).rows.length, 1);
    await rejectsWithStatus(
      retrieve(customClient, request, { callerId: 'ranker', token: 's3cret' }),
      grpc.status.UNAUTHENTICATED,
    );
  });
});
