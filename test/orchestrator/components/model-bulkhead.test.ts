/**
 * Issue 13, item 5: a request at the documented target limit is served by a saturated model server
 * (its batches queue in the orchestrator instead of all timing out together on the server), and it
 * leaves the endpoint's circuit closed for everyone else.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { DataType } from '../../../src/datatypes/data-type.js';
import {
  GRPCInferenceServiceService,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../../src/gen/inference/grpc_service.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { KServeClient } from '../../../src/orchestrator/clients/index.js';
import { MAX_BATCHES_IN_FLIGHT } from '../../../src/orchestrator/components/batches.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { fp32, schema, testRegistry } from '../../support/orchestrator.js';
import { eventually } from '../../support/servers.js';
import { type Plumbing, plumbing, startServer, type TestServer } from '../clients/grpc-fixtures.js';
import { rawInput, rawResponse } from '../clients/kserve-fixture.js';

/** The documented limit of targets per request. */
const TARGETS = 100_000;
const BATCH = 256;

/**
 * A model server with one worker: calls wait in a queue and are answered one at a time, each after
 * `serviceMs` (score = 2x). A client's cancelled call is dropped from the queue, as a server would.
 */
class SaturatedModelServer {
  server!: TestServer;
  inFlight = 0;
  maxInFlight = 0;
  answered = 0;
  private readonly queue: (() => void)[] = [];
  private busy = false;

  constructor(private readonly serviceMs: number) {}

  async start(): Promise<void> {
    this.server = await startServer((s) =>
      s.addService(GRPCInferenceServiceService, {
        modelInfer: (
          call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>,
          cb: sendUnaryData<ModelInferResponse>,
        ) => {
          this.inFlight++;
          this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
          let done = false;
          const finish = () => {
            if (done) return;
            done = true;
            this.inFlight--;
          };
          call.on('cancelled', finish);
          this.queue.push(() => {
            if (done) return this.next();
            setTimeout(() => {
              if (!done) {
                const x = new Float32Array(rawInput(call.request, 'x').buffer);
                const y = x.map((v) => 2 * v);
                cb(
                  null,
                  rawResponse(call.request, [
                    { name: 'y', datatype: 'FP32', shape: [x.length, 1], data: new Uint8Array(y.buffer) },
                  ]),
                );
                this.answered++;
                finish();
              }
              this.next();
            }, this.serviceMs);
          });
          if (!this.busy) this.next();
        },
      }),
    );
  }

  private next(): void {
    const work = this.queue.shift();
    this.busy = work !== undefined;
    work?.();
  }
}

const config = {
  model_config_id: 'scaled',
  target_id_column: 'id',
  request_features: ['x'],
  component_dependency: { scale: [] },
  model_serving_components: [
    {
      name: 'scale',
      model_name: 'scale',
      batch_size: BATCH,
      deadline_ms: 2_500,
      endpoints: [{ target: 'set-below', percentage: 100 }],
      inputs: [{ name: 'x', data_type: 'FP32', shape: [1], features: ['x'] }],
      outputs: [{ name: 'y', data_type: 'FP32', columns: ['y'] }],
    },
  ],
  response: { columns: ['y'] },
};

function request(targets: number): PredictRequest {
  return {
    modelConfigId: 'scaled',
    trackingId: 't',
    contextFeatures: [],
    targetInputSchema: [schema('x', DataType.FP32)],
    targets: Array.from({ length: targets }, (_, i) => ({ id: `t${i}`, featureValues: [fp32(i % 1000)] })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

describe('model batches of a request at the target limit', () => {
  const model = new SaturatedModelServer(10);
  let io: Plumbing;

  before(async () => {
    await model.start();
    io = plumbing(); // the production breaker: 5 consecutive failures open a circuit
  });
  after(async () => {
    io.close();
    await model.server.stop();
  });

  test('are queued per request: all answered within deadline_ms, the circuit stays closed, a small request is served meanwhile', async () => {
    const registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-bulkhead-')) }),
      createComponentBuilder({ modelInferer: new KServeClient(io.policy) }),
    );
    const doc = structuredClone(config);
    doc.model_serving_components[0]!.endpoints[0]!.target = model.server.target;
    const snapshot = registry.build('scaled', '1', doc);
    const engine = new InferenceEngine(registry);
    const big = engine.executeOn(snapshot, { pattern: 'point', request: request(TARGETS) }, 't');
    // Another caller's small request while the big one is being scored.
    const small = (async () => {
      await eventually(() => model.answered >= 20, 30_000, 'the big request to be scored');
      return engine.executeOn(snapshot, { pattern: 'point', request: request(3) }, 't');
    })();

    const { context } = await big;
    const y = context.matrix.byteColumn('y').float32()!;
    for (let row = 0; row < TARGETS; row++) {
      if (context.matrix.rowError(row) !== '') assert.fail(`row ${row}: ${context.matrix.rowError(row)}`);
      if (y[row] !== 2 * (row % 1000)) assert.fail(`row ${row}: ${y[row]}`);
    }
    const answer = await small;
    assert.deepEqual([...answer.context.matrix.byteColumn('y').float32()!], [0, 2, 4]);
    assert.ok(
      model.maxInFlight <= MAX_BATCHES_IN_FLIGHT + 1,
      `${model.maxInFlight} calls in flight at the model server`,
    );
    assert.equal(io.policy.circuitState(model.server.target), 'closed');
  });
});
