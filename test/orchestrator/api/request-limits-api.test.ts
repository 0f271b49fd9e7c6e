/**
 * Issue 13 over the gRPC server in-process: an oversized legacy request is INVALID_ARGUMENT naming
 * the limit (it used to take the process down), one just inside is answered, a long model id is
 * rejected with a short message, and the byte pre-check counts and checks string fields before the
 * request is decoded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { DataType } from '../../../src/datatypes/data-type.js';
import {
  type Entity,
  OrchestratorRequestProto,
  OrchestratorResponseProto,
} from '../../../src/gen/orchestrator/v1/orchestrator.js';
import { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { type RunningOrchestrator, startOrchestrator } from '../../../src/orchestrator/api/index.js';
import { REQUEST_LIMIT_NAMES, REQUEST_LIMITS } from '../../../src/orchestrator/engine/request-limits.js';
import { precheckLegacy, precheckPredict } from '../../../src/orchestrator/wire/request-precheck.js';
import { createConfigStore } from '../../../src/platform/config-store/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { blendOnly, computeOnlyBuilder, fp32, fp64, schema } from '../../support/orchestrator.js';

const LEGACY = '/orchestrator.v1.Orchestrator/RetrieveModelScore';
const POINT = '/orchestrator.v1.Predict/InferPointWise';

function legacy(rows: number, extra: number, modelConfigId = 'blend_only'): OrchestratorRequestProto {
  const entities: Entity[] = [
    {
      entity: 'item_id',
      ids: Array.from({ length: rows }, (_, i) => `c${i}`),
      features: [{ name: 'price', idsFeatureValue: Array.from({ length: rows }, () => '2') }],
    },
    { entity: 'user_id', ids: ['u1'], features: [{ name: 'bonus', idsFeatureValue: ['1'] }] },
  ];
  for (let e = 0; e < extra; e++) entities.push({ entity: `e${e}`, ids: ['x'], features: [] });
  return { modelConfigId, trackingId: 't', entities };
}

function predict(targets: number, values = 1): PredictRequest {
  return {
    modelConfigId: 'blend_only',
    trackingId: 't',
    contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(1) }],
    targetInputSchema: Array.from({ length: values }, (_, k) =>
      schema(k === 0 ? 'price' : `f${k}`, DataType.FP32),
    ),
    targets: Array.from({ length: targets }, (_, i) => ({
      id: `t${i}`,
      featureValues: new Array<Buffer>(values).fill(fp32(2)),
    })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

/** The bytes with the first occurrence of `placeholder` replaced by `bytes` (same length). */
function patched(encoded: Uint8Array, placeholder: string, bytes: number[]): Buffer {
  const out = Buffer.from(encoded);
  const at = out.indexOf(placeholder);
  assert.ok(at >= 0 && bytes.length === placeholder.length);
  out.set(bytes, at);
  return out;
}

function rejectsOver(run: () => void, limit: keyof typeof REQUEST_LIMITS, field: string) {
  assert.throws(run, (err) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
    assert.ok(err.message.includes(REQUEST_LIMIT_NAMES[limit]), err.message);
    assert.equal(err.field, field);
    return true;
  });
}

describe('request limits over gRPC (issue 13)', () => {
  let running: RunningOrchestrator;
  let raw: Client;

  before(async () => {
    const store = await createConfigStore({
      kind: 'file',
      dir: mkdtempSync(join(tmpdir(), 'lattice-limits-api-')),
    });
    await store.put('models/blend_only', blendOnly());
    running = await startOrchestrator({
      host: '127.0.0.1',
      port: 0,
      store,
      buildComponent: computeOnlyBuilder,
      logger: createLogger('test', { level: 'silent' }),
      metrics: new Metrics(),
    });
    raw = new Client(`127.0.0.1:${running.port}`, credentials.createInsecure());
  });
  after(async () => {
    raw.close();
    await running.stop();
  });

  /** Sends request bytes as they are; resolves the response bytes or rejects with the ServiceError. */
  const call = (path: string, bytes: Uint8Array) =>
    new Promise<Buffer>((resolve, reject) =>
      raw.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(bytes),
        new Metadata(),
        { deadline: Date.now() + 30_000 },
        (err, response) => (err ? reject(err) : resolve(response!)),
      ),
    );
  const invalid = (pattern: RegExp, field?: string) => (err: unknown) => {
    const e = err as ServiceError;
    assert.equal(e.code, status.INVALID_ARGUMENT, e.details);
    assert.match(e.details, pattern);
    if (field !== undefined) assert.equal(e.metadata.get('field')[0], field);
    return true;
  };

  test("the issue's legacy request and one past max_matrix_cells are INVALID_ARGUMENT naming the limit; just inside is answered", async () => {
    // 10,000 catalog ids and 60,000 single-id entities: 43 s, 4.4 GB and an OOM before.
    await assert.rejects(
      call(LEGACY, OrchestratorRequestProto.encode(legacy(10_000, 60_000)).finish()),
      invalid(/max_schema_entries/, 'entities'),
    );
    // 130,000 entities answered INTERNAL (a spread into Math.max overflowed the stack).
    await assert.rejects(
      call(LEGACY, OrchestratorRequestProto.encode(legacy(1, 130_000)).finish()),
      invalid(/max_schema_entries/, 'entities'),
    );
    // Columns: score, item_id, price, user_id, bonus, then the extra entities.
    const rows = 10_000;
    const inside = Math.floor(REQUEST_LIMITS.matrixCells / rows) - 5;
    await assert.rejects(
      call(LEGACY, OrchestratorRequestProto.encode(legacy(rows, inside + 1)).finish()),
      invalid(/max_matrix_cells \(2000000\)/, 'entities'),
    );
    const answer = OrchestratorResponseProto.decode(
      await call(LEGACY, OrchestratorRequestProto.encode(legacy(rows, inside)).finish()),
    );
    assert.equal(answer.componentData.length, rows + 1);
    assert.deepEqual(answer.componentData[rows]!.data, [`c${rows - 1}`, '5']);
  });

  test('a long model_config_id is INVALID_ARGUMENT with a short message; an unknown one is quoted in part', async () => {
    const huge = 'm'.repeat(1024 * 1024);
    for (const [path, bytes] of [
      [LEGACY, OrchestratorRequestProto.encode(legacy(1, 0, huge)).finish()],
      [POINT, PredictRequest.encode({ ...predict(1), modelConfigId: huge }).finish()],
    ] as const) {
      await assert.rejects(call(path, bytes), (err: ServiceError) => {
        invalid(/max_model_config_id_length/, 'model_config_id')(err);
        assert.ok(err.details.length < 200, err.details);
        return true;
      });
    }
    const unknown = 'u'.repeat(REQUEST_LIMITS.modelConfigIdLength);
    await assert.rejects(
      call(POINT, PredictRequest.encode({ ...predict(1), modelConfigId: unknown }).finish()),
      (err: ServiceError) =>
        err.code === status.NOT_FOUND &&
        err.details.includes(`"${'u'.repeat(64)}"…`) &&
        err.details.length < 150,
    );
  });

  test('invalid UTF-8 in a legacy id or feature value, or a target id, is INVALID_ARGUMENT naming it', async () => {
    const request = legacy(2, 0);
    request.entities[0]!.ids[1] = 'BADBAD';
    request.entities[1]!.features[0]!.idsFeatureValue[0] = 'WORSE!';
    const bad = [0x61, 0xc3, 0x28, 0xff, 0x62, 0x63];
    const encoded = OrchestratorRequestProto.encode(request).finish();
    await assert.rejects(
      call(LEGACY, patched(encoded, 'BADBAD', bad)),
      invalid(/entities\[0\]\.ids\[1\] is not valid UTF-8/, 'entities[0].ids[1]'),
    );
    request.entities[0]!.ids[1] = 'c1';
    await assert.rejects(
      call(LEGACY, patched(OrchestratorRequestProto.encode(request).finish(), 'WORSE!', bad)),
      invalid(/entities\[1\]\.features\[0\]\.ids_feature_value\[0\] is not valid UTF-8/),
    );
    const point = predict(3);
    point.targets[2]!.id = 'BADBAD';
    await assert.rejects(
      call(POINT, patched(PredictRequest.encode(point).finish(), 'BADBAD', bad)),
      invalid(/targets\[2\]\.id is not valid UTF-8/, 'targets[2].id'),
    );
  });

  test('the byte pre-check counts values, targets, ids, entities and slate indices before decoding', () => {
    const rows = Math.floor(REQUEST_LIMITS.values / 10) + 1;
    const wide = PredictRequest.encode(predict(rows, 10)).finish();
    rejectsOver(() => precheckPredict(wide, 'point'), 'values', 'targets');
    precheckPredict(PredictRequest.encode(predict(rows - 1, 10)).finish(), 'point');
    const slates = PredictRequest.encode({
      ...predict(2),
      slates: Array.from({ length: REQUEST_LIMITS.slateIndices / REQUEST_LIMITS.slateSize + 1 }, () => ({
        slateTargetIndices: new Array<number>(REQUEST_LIMITS.slateSize).fill(1),
        featureValues: [],
      })),
    }).finish();
    rejectsOver(() => precheckPredict(slates, 'slate'), 'slateIndices', 'slates');
    precheckPredict(slates, 'point'); // a point-wise request ignores slates, as FeatureInit does
    rejectsOver(
      () => precheckLegacy(OrchestratorRequestProto.encode(legacy(1, REQUEST_LIMITS.features)).finish()),
      'features',
      'entities',
    );
    rejectsOver(
      () => precheckLegacy(OrchestratorRequestProto.encode(legacy(REQUEST_LIMITS.targets + 1, 0)).finish()),
      'targets',
      'entities[0].ids',
    );
    // Malformed bytes are left to the decoder, which names the problem.
    precheckPredict(Buffer.from([0x2a, 0xff, 0xff]), 'point');
  });
});
