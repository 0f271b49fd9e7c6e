/**
 * A compute component that fails leaves no partial result behind: with `1 x /` over x = [2, 0, 4, 8]
 * the engine stops at row 1, yet row 0 must not keep 0.5. Every cell of the failed column holds the
 * default, every row says which component failed, and a downstream compute reading the column sees
 * only defaults. Pinned for in-process and remote (the reference numerix server) compute, in point
 * and slate mode.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ComputeServer, startComputeServer } from '../../../src/compute/server/index.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { predictAnswer } from '../../../src/orchestrator/api/responses.js';
import {
  createOrchestratorClients,
  type OrchestratorClients,
} from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import type { ExecutionContext } from '../../../src/orchestrator/engine/execution-context.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import type { ComponentMatrix } from '../../../src/orchestrator/matrix/component-matrix.js';
import { toPredictResponse } from '../../../src/orchestrator/wire/predict-response-codec.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { createLogger } from '../../../src/platform/logging/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { fp32, schema, testRegistry } from '../../support/orchestrator.js';

const X = [2, 0, 4, 8];

/**
 * `inv` = 1 / x (fails at row 1), then `next` = inv + 10 reading the failed column. `inv` is either
 * the in-process expression or the compute server's `inv` compute_id.
 */
function model(mode: { remote: string } | 'local', slate: boolean) {
  const inv =
    mode === 'local'
      ? { expression: '1 x /' }
      : { compute_id: 'inv', target: mode.remote, deadline_ms: 5000 };
  const prefix = slate ? 'slate_' : '';
  return {
    model_config_id: 'inverse',
    target_id_column: 'item_id',
    component_dependency: { inv: ['next'], next: [] },
    compute_components: [
      {
        name: 'inv',
        ...inv,
        score_mapping: { x: `${prefix}x` },
        output_column: `${prefix}inv`,
        data_type: 'FP64',
        slate,
      },
      {
        name: 'next',
        expression: 'inv 10 +',
        score_mapping: { inv: `${prefix}inv` },
        output_column: `${prefix}next`,
        data_type: 'FP64',
        slate,
      },
    ],
    response: { columns: [`${prefix}inv`, `${prefix}next`] },
  };
}

function pointRequest(): PredictRequest {
  return {
    modelConfigId: 'inverse',
    trackingId: 't',
    contextFeatures: [],
    targetInputSchema: [schema('x', DataType.FP32)],
    targets: X.map((x, i) => ({ id: `item${i}`, featureValues: [fp32(x)] })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

/** One slate per value of X, each over one target. */
function slateRequest(): PredictRequest {
  return {
    ...pointRequest(),
    targetInputSchema: [],
    targets: X.map((_, i) => ({ id: `item${i}`, featureValues: [] })),
    slateInputSchema: [schema('slate_x', DataType.FP32)],
    slates: X.map((x, i) => ({ slateTargetIndices: [i], featureValues: [fp32(x)] })),
  };
}

/** The failed column is all defaults in the matrix and in the response, downstream read only defaults. */
function assertFailedCleanly(context: ExecutionContext, slate: boolean, reason: RegExp): void {
  const prefix = slate ? 'slate_' : '';
  const matrix: ComponentMatrix = slate ? context.slate! : context.matrix;
  const inv = matrix.byteColumn(`${prefix}inv`);
  assert.deepEqual([...inv.float64()!], [0, 0, 0, 0], 'no prefix of results survives the failure');
  for (let row = 0; row < X.length; row++) {
    assert.equal(inv.isDefaulted(row), true, `row ${row} is defaulted`);
    assert.match(matrix.rowError(row), reason, `row ${row} names the failed component`);
  }
  assert.deepEqual(
    [...matrix.byteColumn(`${prefix}next`).float64()!],
    [10, 10, 10, 10],
    'the downstream component read only defaults',
  );
  const response = toPredictResponse(predictAnswer(context, false));
  const scores = slate ? response.slateScores : response.targetScores;
  assert.deepEqual(
    scores.map((s) => Buffer.from(s.outputValues[0]!).readDoubleLE(0)),
    [0, 0, 0, 0],
  );
  for (const score of scores) assert.match(score.error, reason);
}

describe('a failing compute component keeps none of its rows', () => {
  const metrics = new Metrics();
  const expressions = new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-compute-fail-')) });
  let server: ComputeServer;
  let clients: OrchestratorClients;
  let registry: ReturnType<typeof testRegistry>;
  let engine: InferenceEngine;

  before(async () => {
    await expressions.put('compute/inv', { expression: '1 x /' });
    server = await startComputeServer({
      store: expressions,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('test', { level: 'silent' }),
      shutdownGraceMs: 1000,
    });
    clients = createOrchestratorClients({ metrics });
    registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-compute-fail-models-')) }),
      createComponentBuilder(clients),
      metrics,
    );
    engine = new InferenceEngine(registry);
  });
  after(async () => {
    clients.close();
    await server.stop();
  });

  const remote = () => ({ remote: `127.0.0.1:${server.port}` });
  const cases = [
    { name: 'in-process, point mode', mode: () => 'local' as const, slate: false },
    { name: 'in-process, slate mode', mode: () => 'local' as const, slate: true },
    { name: 'remote (reference numerix server), point mode', mode: remote, slate: false },
    { name: 'remote (reference numerix server), slate mode', mode: remote, slate: true },
  ];
  let version = 0;
  for (const c of cases) {
    test(c.name, async () => {
      const snapshot = registry.build('inverse', String(++version), model(c.mode(), c.slate));
      const { context, report } = await engine.executeOn(
        snapshot,
        c.slate
          ? { pattern: 'slate', request: slateRequest() }
          : { pattern: 'point', request: pointRequest() },
        't',
      );
      assert.deepEqual(report.failed(), ['inv']);
      assertFailedCleanly(context, c.slate, /inv failed: .*division by zero at row 1/);
    });
  }

  test('without the zero the same models score every row (the failure above is the only cause)', async () => {
    for (const mode of ['local' as const, remote()]) {
      const snapshot = registry.build('inverse', String(++version), model(mode, false));
      const request = pointRequest();
      request.targets[1] = { id: 'item1', featureValues: [fp32(0.5)] };
      const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
      assert.deepEqual([...context.matrix.byteColumn('inv').float64()!], [0.5, 2, 0.25, 0.125]);
      assert.deepEqual([...context.matrix.byteColumn('next').float64()!], [10.5, 12, 10.25, 10.125]);
      assert.equal(context.matrix.rowError(0), '');
    }
  });
});
