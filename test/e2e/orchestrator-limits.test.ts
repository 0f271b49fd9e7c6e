/**
 * Issue 13, item 1, on the whole stack in one process (feature store, model server, compute and
 * orchestrator, as `lattice up` runs them): the legacy request that exhausted the heap and took every
 * service down, and the Predict request that held the event loop for seconds, are INVALID_ARGUMENT
 * naming the limit, and the stack keeps answering real requests with real scores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { credentials, type ServiceError, status } from '@grpc/grpc-js';
import { CATALOG_RANKER_ID } from '../../examples/catalog-ranker.js';
import { PredictClient, PredictRequest } from '../../src/gen/orchestrator/v1/predict.js';
import { DataType as WireType } from '../../src/gen/orchestrator/v1/types.js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { SLICED_FROM_BYTES } from '../../src/orchestrator/wire/request-decoding.js';
import { expectedCatalogScore } from '../support/orchestrator-process.js';
import { type Stack, startStack } from '../support/stack.js';
import { callRaw, rawClient } from './fuzz/fuzz-runner.js';

describe('request limits on the whole stack (issue 13)', () => {
  let stack: Stack;
  let client: OrchestratorClient;

  before(async () => {
    stack = await startStack();
    client = new OrchestratorClient(stack.address);
  });
  after(async () => {
    client.close();
    await stack.stop();
  });

  const catalogs = () => stack.data.rows.catalog.map((r) => r.key[0]!);

  async function stillServes(): Promise<void> {
    const ids = catalogs().slice(0, 5);
    const { targets } = await client.pointWise({
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: 'u1' },
      targets: ids.map((id) => ({ id })),
      deadlineMs: 10_000,
    });
    targets.forEach((target, i) => {
      const want = expectedCatalogScore(stack, 'u1', ids[i]!);
      assert.ok(Math.abs((target.values.final_score as number) - want.final) < 1e-5, target.id);
    });
  }

  test("the issue's legacy request (10,000 catalog ids, 60,000 single-id entities) is INVALID_ARGUMENT and the stack keeps serving", async () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => catalogs()[i % catalogs().length]!);
    const entities = [
      { entity: 'user_id', ids: ['u1'] },
      { entity: 'catalog_id', ids },
      ...Array.from({ length: 60_000 }, (_, e) => ({ entity: `extra_${e}`, ids: ['1'] })),
    ];
    await assert.rejects(
      client.retrieveModelScore({ modelConfigId: CATALOG_RANKER_ID, entities, deadlineMs: 30_000 }),
      (err: ServiceError) => err.code === status.INVALID_ARGUMENT && /max_schema_entries/.test(err.details),
    );
    await stillServes();
    // A legacy request of the same shape, inside the limits, is scored.
    const few = ids.slice(0, 200);
    const { rows, error } = await client.retrieveModelScore({
      modelConfigId: CATALOG_RANKER_ID,
      entities: [
        { entity: 'user_id', ids: ['u1'] },
        { entity: 'catalog_id', ids: few },
        ...Array.from({ length: 100 }, (_, e) => ({ entity: `extra_${e}`, ids: ['1'] })),
      ],
      deadlineMs: 30_000,
    });
    assert.equal(rows.length, few.length);
    assert.equal(typeof error, 'string');
    rows.forEach((row, i) => {
      const want = expectedCatalogScore(stack, 'u1', few[i]!);
      assert.ok(
        Math.abs(Number(row.final_score) - want.final) < 1e-4,
        `${row.catalog_id}: ${row.final_score}`,
      );
    });
  });

  test('a 2.6 M-float context vector broadcast to 100 targets (1 GB of matrix) is INVALID_ARGUMENT naming max_matrix_bytes', async () => {
    const raw = new PredictClient(stack.address, credentials.createInsecure());
    const dim = 2_600_000;
    const request: PredictRequest = {
      modelConfigId: CATALOG_RANKER_ID,
      trackingId: '',
      contextFeatures: [
        { name: 'user_id', dataType: WireType.DATA_TYPE_STRING, vectorDim: 0, value: Buffer.from('u1') },
        {
          name: 'embedding',
          dataType: WireType.DATA_TYPE_FP32_VECTOR,
          vectorDim: dim,
          value: Buffer.alloc(dim * 4),
        },
      ],
      targetInputSchema: [],
      targets: catalogs()
        .slice(0, 100)
        .map((id) => ({ id, featureValues: [] })),
      pairInputSchema: [],
      pairs: [],
      slateInputSchema: [],
      slates: [],
      returnTargetScores: false,
    };
    try {
      await assert.rejects(
        new Promise((resolve, reject) =>
          raw.inferPointWise(request, (err, response) => (err ? reject(err) : resolve(response))),
        ),
        (err: ServiceError) =>
          err.code === status.INVALID_ARGUMENT &&
          /max_matrix_bytes/.test(err.details) &&
          err.metadata.get('field')[0] === 'targets',
      );
    } finally {
      raw.close();
    }
    await stillServes();
  });

  test('a large request is decoded in slices: scored as a small one, and its malformed bytes are INVALID_ARGUMENT', async () => {
    const ids = Array.from({ length: 12_000 }, (_, i) => catalogs()[i % catalogs().length]!);
    const request = PredictRequest.fromPartial({
      modelConfigId: CATALOG_RANKER_ID,
      contextFeatures: [{ name: 'user_id', dataType: WireType.DATA_TYPE_STRING, value: Buffer.from('u1') }],
      targets: ids.map((id) => ({ id })),
    });
    const bytes = Buffer.from(PredictRequest.encode(request).finish());
    assert.ok(bytes.length >= SLICED_FROM_BYTES, `${bytes.length} bytes take the sliced path`);
    const { targets } = await client.pointWise({
      modelConfigId: CATALOG_RANKER_ID,
      context: { user_id: 'u1' },
      targets: ids.map((id) => ({ id })),
      deadlineMs: 20_000,
    });
    assert.equal(targets.length, ids.length);
    for (const i of [0, 1234, 11_999]) {
      const want = expectedCatalogScore(stack, 'u1', ids[i]!);
      assert.ok(Math.abs((targets[i]!.values.final_score as number) - want.final) < 1e-5, ids[i]);
    }
    const raw = rawClient(stack.address);
    try {
      const path = '/orchestrator.v1.Predict/InferPointWise';
      const truncated = await callRaw(raw, path, bytes.subarray(0, bytes.length - 2), 10_000);
      assert.equal(truncated.error?.code, status.INVALID_ARGUMENT, truncated.error?.details);
      assert.match(truncated.error!.details, /do not decode/);
      // Invalid UTF-8 in the 5,000th target's id: named as the small path names it.
      const bad = PredictRequest.fromPartial({ ...request, targets: ids.map((id) => ({ id })) });
      bad.targets[5000]!.id = 'x';
      const badBytes = Buffer.from(PredictRequest.encode(bad).finish());
      const at = badBytes.indexOf(Buffer.from([0x0a, 0x01, 0x78])); // field 1 (id), length 1, 'x'
      badBytes[at + 2] = 0xff;
      const invalid = await callRaw(raw, path, badBytes, 10_000);
      assert.equal(invalid.error?.code, status.INVALID_ARGUMENT);
      assert.match(invalid.error!.details, /targets\[5000\]\.id is not valid UTF-8/);
    } finally {
      raw.close();
    }
    await stillServes();
  });
});
