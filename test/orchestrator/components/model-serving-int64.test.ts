/**
 * 64-bit integers keep all 64 bits on every path through a request (issue 12): feature bytes from the
 * reference feature store → matrix columns → KServe tensors (the model server receives the exact
 * values) → model outputs, raw or as typed int64_contents / uint64_contents → score columns → the
 * PredictResponse bytes and the logged payload (proto, Arrow, Parquet). Seeded random values over all
 * 64 bits, a quarter of them next to ±2^53 and the ranges' ends, where doubles round.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  FeatureRegistry,
  MemoryFeatureStore,
  type RunningFeatureStore,
  startFeatureStore,
  writeFeatureRows,
} from '../../../src/featurestore/index.js';
import type { ModelInferRequest } from '../../../src/gen/inference/grpc_service.js';
import { type PredictRequest, PredictResponse } from '../../../src/gen/orchestrator/v1/predict.js';
import { type ModelServer, startModelServer } from '../../../src/modelserver/modelserver-server.js';
import { integerEcho, writeModel } from '../../../src/modelserver/onnx-builder.js';
import { predictAnswer } from '../../../src/orchestrator/api/index.js';
import { createOrchestratorClients } from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import {
  cellToJson,
  decodeLogRecord,
  encodeLogBatch,
  type LogFormatName,
  planLogBatches,
} from '../../../src/orchestrator/logging/index.js';
import { encodePredictAnswer } from '../../../src/orchestrator/wire/predict-response-codec.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { random64, seededRandom } from '../../datatypes/random.js';
import { testRegistry } from '../../support/orchestrator.js';
import { emptyContents, FakeKServe, outputTensor, rawInput, rawResponse } from '../clients/kserve-fixture.js';

const ROWS = 256;
const BATCH = 100;
const random = seededRandom(20261125);
const signed = random64(random, ROWS, true);
const unsigned = random64(random, ROWS, false);
const ids = Array.from({ length: ROWS }, (_, i) => `item${i}`);

const INT64_MAX = 2n ** 63n - 1n;
const int64Bytes = (values: readonly bigint[]) => new Uint8Array(BigInt64Array.from(values).buffer);
const uint64Bytes = (values: readonly bigint[]) => new Uint8Array(BigUint64Array.from(values).buffer);
const int64s = (bytes: Uint8Array) => [...new BigInt64Array(Uint8Array.from(bytes).buffer)];
const uint64s = (bytes: Uint8Array) => [...new BigUint64Array(Uint8Array.from(bytes).buffer)];

/**
 * The fake model: exact 64-bit arithmetic that any rounding on the way in shows on the way out, and
 * whose results again use all 64 bits.
 */
const mixSigned = (v: bigint) => BigInt.asIntN(64, v * 0x9e3779b97f4a7c15n + 1n);
const mixUnsigned = (v: bigint) => BigInt.asUintN(64, v ^ 0xdeadbeefcafebaben);

const registryDocument = {
  entities: [
    {
      name: 'item',
      keys: ['item_id'],
      feature_groups: [
        { name: 's', features: [{ name: 'signed', data_type: 'INT64' }] },
        { name: 'u', features: [{ name: 'unsigned', data_type: 'UINT64' }] },
      ],
    },
  ],
};

function modelConfig(target: string, modelName: string, extraInputs: object[] = []) {
  return {
    model_config_id: 'ids64',
    target_id_column: 'item_id',
    component_dependency: { items: ['ranker'], ranker: [] },
    feature_components: [
      {
        name: 'items',
        entity: 'item',
        fs_keys: [{ schema: ['item_id'], col: 'item_id' }],
        feature_groups: [
          { label: 's', data_type: 'INT64', features: ['signed'] },
          { label: 'u', data_type: 'UINT64', features: ['unsigned'] },
        ],
        batch_size: BATCH,
        deadline_ms: 5000,
        required: true,
      },
    ],
    model_serving_components: [
      {
        name: 'ranker',
        model_name: modelName,
        batch_size: BATCH,
        deadline_ms: 5000,
        endpoints: [{ target, percentage: 100 }],
        inputs: [
          { name: 'signed', data_type: 'INT64', shape: [1], features: ['item:s:signed'] },
          { name: 'unsigned', data_type: 'UINT64', shape: [1], features: ['item:u:unsigned'] },
          ...extraInputs,
        ],
        outputs: [
          { name: 'signed_out', data_type: 'INT64', columns: ['score_signed'] },
          { name: 'unsigned_out', data_type: 'UINT64', columns: ['score_unsigned'] },
        ],
      },
    ],
    response: { columns: ['score_signed', 'score_unsigned'] },
    logging: { logging_perc: 100, log_batch_size: BATCH },
  };
}

const request: PredictRequest = {
  modelConfigId: 'ids64',
  trackingId: 't64',
  contextFeatures: [],
  targetInputSchema: [],
  targets: ids.map((id) => ({ id, featureValues: [] })),
  pairInputSchema: [],
  pairs: [],
  slateInputSchema: [],
  slates: [],
  returnTargetScores: false,
};

let featureStore: RunningFeatureStore;
before(async () => {
  const registry = FeatureRegistry.fromDocument(registryDocument);
  const store = new MemoryFeatureStore();
  await writeFeatureRows(
    store,
    registry,
    'item',
    ids.map((id, i) => ({ key: [id], values: { s: { signed: signed[i] }, u: { unsigned: unsigned[i] } } })),
  );
  featureStore = await startFeatureStore({ registry, store });
});
after(() => featureStore.stop());

/** Serves `request` once through the whole engine, over the real gRPC clients. */
async function serve(doc: object): Promise<ExecutionContext> {
  const metrics = new Metrics();
  const clients = createOrchestratorClients({ metrics, featureStoreTarget: featureStore.address });
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-int64-')) }),
    createComponentBuilder(clients),
    metrics,
  );
  try {
    const snapshot = registry.build('ids64', '1', doc);
    const { context } = await new InferenceEngine(registry).executeOn(
      snapshot,
      { pattern: 'point', request },
      't64',
    );
    return context;
  } finally {
    clients.close();
  }
}

/** Asserts the scores of every row, in the matrix, the PredictResponse bytes and each log format. */
async function assertScoresExact(
  context: ExecutionContext,
  wantSigned: readonly bigint[],
  wantUnsigned: readonly bigint[],
): Promise<void> {
  const { matrix } = context;
  for (let row = 0; row < ROWS; row++) assert.equal(matrix.rowError(row), '', `row ${row} is clean`);
  assert.deepEqual(int64s(matrix.byteColumn('item:s:signed').data), signed, 'feature column, signed');
  assert.deepEqual(uint64s(matrix.byteColumn('item:u:unsigned').data), unsigned, 'feature column, unsigned');
  assert.deepEqual(int64s(matrix.byteColumn('score_signed').data), wantSigned, 'score column, signed');
  assert.deepEqual(uint64s(matrix.byteColumn('score_unsigned').data), wantUnsigned, 'score column, unsigned');

  const response = PredictResponse.decode(encodePredictAnswer(predictAnswer(context, false)));
  assert.equal(response.targetScores.length, ROWS);
  assert.deepEqual(
    response.targetScores.map((s) => Buffer.from(s.outputValues[0]!).readBigInt64LE(0)),
    wantSigned,
    'response, signed',
  );
  assert.deepEqual(
    response.targetScores.map((s) => Buffer.from(s.outputValues[1]!).readBigUInt64LE(0)),
    wantUnsigned,
    'response, unsigned',
  );

  const logging = context.snapshot.model.config.logging;
  const expected: Record<string, Uint8Array> = {
    'item:s:signed': int64Bytes(signed),
    'item:u:unsigned': uint64Bytes(unsigned),
    score_signed: int64Bytes(wantSigned),
    score_unsigned: uint64Bytes(wantUnsigned),
  };
  for (const format of ['proto', 'arrow', 'parquet'] as LogFormatName[]) {
    const logged: Record<string, number[]> = {};
    let row = 0;
    for (const batch of planLogBatches(context)) {
      const decoded = await decodeLogRecord(await encodeLogBatch(batch, { ...logging, format }));
      for (const entry of decoded.rows) {
        decoded.schema.forEach((spec, c) => {
          logged[spec.name] ??= [];
          logged[spec.name]!.push(...entry.values[c]!);
          if (spec.name === 'score_unsigned' && row === 0) {
            assert.equal(cellToJson(spec, entry.values[c]!), String(wantUnsigned[0]), 'JSON: decimal text');
          }
        });
        row++;
      }
    }
    assert.equal(row, ROWS, `${format}: every row logged`);
    for (const [name, bytes] of Object.entries(expected)) {
      assert.deepEqual(logged[name], [...bytes], `${format} log payload, ${name}`);
    }
  }
}

describe('INT64 / UINT64 through a fake KServe server that records what it receives', () => {
  /** How the fake answers: raw_output_contents, or the typed int64_contents / uint64_contents. */
  let typed = false;
  const model = new FakeKServe((r: ModelInferRequest) => {
    const s = int64s(rawInput(r, 'signed')).map(mixSigned);
    const u = uint64s(rawInput(r, 'unsigned')).map(mixUnsigned);
    if (!typed) {
      return rawResponse(r, [
        { name: 'signed_out', datatype: 'INT64', shape: [s.length, 1], data: int64Bytes(s) },
        { name: 'unsigned_out', datatype: 'UINT64', shape: [u.length, 1], data: uint64Bytes(u) },
      ]);
    }
    const sc = emptyContents();
    sc.int64Contents = s;
    const uc = emptyContents();
    uc.uint64Contents = u;
    return {
      ...rawResponse(r, []),
      outputs: [
        outputTensor('signed_out', 'INT64', [s.length, 1], sc),
        outputTensor('unsigned_out', 'UINT64', [u.length, 1], uc),
      ],
    };
  });
  before(() => model.start());
  after(() => model.stop());

  /** Each batch the server received is exactly one slice of the rows (batches arrive in any order). */
  function assertReceived(name: string, decode: (b: Uint8Array) => bigint[], want: readonly bigint[]) {
    const starts = new Set<number>();
    for (const r of model.requests) {
      const got = decode(rawInput(r, name));
      const start = [0, BATCH, 2 * BATCH].find(
        (s) =>
          !starts.has(s) &&
          want.slice(s, s + BATCH).every((v, i) => v === got[i]) &&
          got.length === Math.min(BATCH, ROWS - s),
      );
      assert.ok(
        start !== undefined,
        `input ${name}: a batch of ${got.length} values matches no slice of the rows`,
      );
      starts.add(start);
    }
    assert.equal(starts.size, 3);
  }

  for (const mode of ['raw', 'typed'] as const) {
    test(`the server receives every value exactly; ${mode} outputs come back exactly in columns, response and logs`, async () => {
      model.requests.length = 0;
      typed = mode === 'typed';
      const context = await serve(
        modelConfig(model.target, 'mixer', [
          // UINT64 into INT64: exact where it fits, saturating where it does not (element.ts).
          { name: 'cross', data_type: 'INT64', shape: [1], features: ['item:u:unsigned'] },
        ]),
      );
      assert.equal(model.requests.length, 3);
      assertReceived('signed', int64s, signed);
      assertReceived('unsigned', uint64s, unsigned);
      assertReceived(
        'cross',
        int64s,
        unsigned.map((v) => (v > INT64_MAX ? INT64_MAX : v)),
      );
      const request0 = model.requests[0]!;
      assert.deepEqual(
        request0.inputs.map((i) => [i.name, i.datatype]),
        [
          ['signed', 'INT64'],
          ['unsigned', 'UINT64'],
          ['cross', 'INT64'],
        ],
      );
      await assertScoresExact(context, signed.map(mixSigned), unsigned.map(mixUnsigned));
    });
  }
});

describe('INT64 / UINT64 through the reference model server (ONNX Identity)', () => {
  let server: ModelServer;
  before(async () => {
    const repository = mkdtempSync(join(tmpdir(), 'lattice-int64-models-'));
    writeModel(repository, 'integer_echo', 1, integerEcho().bytes);
    server = await startModelServer({ repository, logger: createLogger('test', { level: 'silent' }) });
  });
  after(() => server.stop());

  test('the model echoes every value exactly: features → tensor → onnxruntime → scores → response and logs', async () => {
    const context = await serve(modelConfig(`127.0.0.1:${server.port}`, 'integer_echo'));
    await assertScoresExact(context, signed, unsigned);
  });
});
