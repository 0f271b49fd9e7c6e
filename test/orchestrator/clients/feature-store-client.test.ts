import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Metadata, ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import { FeatureServiceService, type Query, type Result } from '../../../src/gen/retrieve/retrieve.js';
import { FeatureStoreClient } from '../../../src/orchestrator/clients/index.js';
import {
  type Plumbing,
  plumbing,
  rejectsWith,
  startServer,
  type TestServer,
  within,
} from './grpc-fixtures.js';

const f32 = (x: number) => Buffer.from(encodeValue(DataType.FP32, x));
/** key → `group:feature` → value. */
const catalog: Record<string, Record<string, Buffer>> = {
  c1: { 'stats:price': f32(10), 'stats:ctr': f32(0.1), 'attrs:category': f32(7) },
  c2: { 'stats:price': f32(20), 'stats:ctr': f32(0.2), 'attrs:category': f32(8) },
};

/** Answers like the reference store: one row per key in request order, empty columns when missing. */
function answer(query: Query): Result {
  return {
    entityLabel: query.entityLabel,
    keysSchema: query.keysSchema,
    featureSchemas: [],
    rows: query.keys.map(({ cols }) => {
      const stored = query.entityLabel === 'catalog' ? catalog[cols.join('|')] : undefined;
      return {
        keys: cols,
        columns: stored
          ? query.featureGroups.flatMap((g) => g.featureLabels.map((f) => stored[`${g.label}:${f}`]!))
          : [],
      };
    }),
  };
}

describe('FeatureStoreClient over retrieve.FeatureService/RetrieveFeatures', () => {
  let server: TestServer;
  let io: Plumbing;
  const seen: { query: Query; metadata: Metadata }[] = [];
  /** Replaces the answer of the next calls, for the protocol-violation tests. */
  let override: ((query: Query) => Result) | undefined;

  before(async () => {
    server = await startServer((s) =>
      s.addService(FeatureServiceService, {
        retrieveFeatures: (call: ServerUnaryCall<Query, Result>, callback: sendUnaryData<Result>) => {
          seen.push({ query: call.request, metadata: call.metadata });
          callback(null, (override ?? answer)(call.request));
        },
      }),
    );
    io = plumbing();
  });
  after(async () => {
    io.close();
    await server.stop();
  });

  const query = (keys: string[][]) => ({
    entity: 'catalog',
    keysSchema: ['catalog_id'],
    keys,
    featureGroups: [
      { label: 'stats', features: ['price', 'ctr'] },
      { label: 'attrs', features: ['category'] },
    ],
  });
  const options = () => ({ signal: new AbortController().signal, deadline: within(10_000) });

  test('maps the query, sends caller metadata and returns rows in key order, missing ones undefined', async () => {
    const client = new FeatureStoreClient({
      target: server.target,
      policy: io.policy,
      callerId: 'orchestrator',
      callerToken: 's3cret',
    });
    seen.length = 0;
    const rows = await client.retrieve(query([['c2'], ['c404'], ['c1'], ['c2']]), options());
    assert.equal(seen.length, 1);
    const sent = seen[0]!;
    assert.equal(sent.query.entityLabel, 'catalog');
    assert.deepEqual(sent.query.keysSchema, ['catalog_id']);
    assert.deepEqual(
      sent.query.keys.map((k) => k.cols),
      [['c2'], ['c404'], ['c1'], ['c2']],
    );
    assert.deepEqual(sent.query.featureGroups, [
      { label: 'stats', featureLabels: ['price', 'ctr'] },
      { label: 'attrs', featureLabels: ['category'] },
    ]);
    assert.deepEqual(sent.metadata.get('caller-id'), ['orchestrator']);
    assert.deepEqual(sent.metadata.get('caller-token'), ['s3cret']);

    assert.equal(rows.length, 4);
    assert.equal(rows[1], undefined, 'an entity the store does not have');
    const price = (row: readonly Uint8Array[] | undefined) => Buffer.from(row![0]!).readFloatLE(0);
    assert.equal(price(rows[0]), 20);
    assert.equal(price(rows[2]), 10);
    assert.equal(price(rows[3]), 20);
    assert.equal(Buffer.from(rows[2]![2]!).readFloatLE(0), 7);
  });

  test('header names are configurable; no caller id means no metadata', async () => {
    seen.length = 0;
    const custom = new FeatureStoreClient({
      target: server.target,
      policy: io.policy,
      callerId: 'orch',
      callerToken: 't',
      idHeader: 'Online-Feature-Store-Caller-Id',
      tokenHeader: 'online-feature-store-auth-token',
    });
    await custom.retrieve(query([['c1']]), options());
    assert.deepEqual(seen[0]!.metadata.get('online-feature-store-caller-id'), ['orch']);
    assert.deepEqual(seen[0]!.metadata.get('online-feature-store-auth-token'), ['t']);
    assert.deepEqual(seen[0]!.metadata.get('caller-id'), []);

    const anonymous = new FeatureStoreClient({ target: server.target, policy: io.policy });
    await anonymous.retrieve(query([['c1']]), options());
    assert.deepEqual(seen[1]!.metadata.get('caller-id'), []);
    assert.deepEqual(seen[1]!.metadata.get('caller-token'), []);
  });

  test('a row count that does not match the keys is an error naming the target', async () => {
    const client = new FeatureStoreClient({ target: server.target, policy: io.policy });
    override = (q) => ({ ...answer(q), rows: answer(q).rows.slice(1) });
    try {
      await rejectsWith(
        client.retrieve(query([['c1'], ['c2']]), options()),
        'INTERNAL',
        new RegExp(`feature store ${server.target}: entity catalog: 1 rows returned for 2 keys`),
      );
    } finally {
      override = undefined;
    }
  });

  test('rows out of key order are an error, never features on the wrong entity', async () => {
    const client = new FeatureStoreClient({ target: server.target, policy: io.policy });
    override = (q) => ({ ...answer(q), rows: answer(q).rows.reverse() });
    try {
      await rejectsWith(
        client.retrieve(query([['c1'], ['c2']]), options()),
        'INTERNAL',
        /row 0 is for key c2, expected c1/,
      );
    } finally {
      override = undefined;
    }
  });

  test('composite keys travel as their parts', async () => {
    const client = new FeatureStoreClient({ target: server.target, policy: io.policy });
    seen.length = 0;
    const rows = await client.retrieve(
      {
        entity: 'user_category',
        keysSchema: ['user_id', 'category_id'],
        keys: [
          ['u1', '7'],
          ['u1', '8'],
        ],
        featureGroups: [{ label: 'agg', features: ['clicks'] }],
      },
      options(),
    );
    assert.deepEqual(
      seen[0]!.query.keys.map((k) => k.cols),
      [
        ['u1', '7'],
        ['u1', '8'],
      ],
    );
    assert.deepEqual(rows, [undefined, undefined]);
  });
});
