/**
 * Per-request component timings over gRPC (issue 39: the predict playground's timings): a call with
 * the metadata `lattice-timings: 1` gets the trailer `lattice-timings` naming every component of the
 * model's DAG with its kind, start, duration and state, with the answer or with the error; a call
 * without it gets no such trailer. Durations are only checked to be numbers ≥ 0, never compared.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { PredictClient } from '../../../src/gen/orchestrator/v1/predict.js';
import type { RunningOrchestrator } from '../../../src/orchestrator/api/index.js';
import { OrchestratorClient, type RequestTimings, timingsOf } from '../../../src/orchestrator/client.js';
import { blendOnlyRequest } from '../../support/orchestrator.js';
import { DoublerModel, doublerModel, startDoublerOrchestrator } from '../../support/orchestrator-api.js';

/** feature_init → double (a model) → total (a compute). */
const doubler = doublerModel(
  {
    name: 'total',
    expression: 'y 1 +',
    score_mapping: { y: 'doubled' },
    output_column: 'total',
    data_type: 'FP64',
  },
  ['price'],
  ['doubled', 'total'],
);

function checkShape(timings: RequestTimings | undefined): RequestTimings {
  assert.ok(timings, 'timings answered');
  assert.ok(timings.total_ms >= 0);
  for (const c of timings.components) {
    assert.ok(c.start_ms >= 0 && c.duration_ms >= 0, JSON.stringify(c));
    assert.ok(c.start_ms <= timings.total_ms, JSON.stringify(timings));
  }
  return timings;
}

const states = (timings: RequestTimings) => timings.components.map((c) => [c.name, c.kind, c.state]);

describe('per-request component timings over gRPC', () => {
  const model = new DoublerModel();
  let running: RunningOrchestrator;
  let client: OrchestratorClient;
  let raw: PredictClient;

  before(async () => {
    running = await startDoublerOrchestrator(doubler, model);
    client = new OrchestratorClient(`127.0.0.1:${running.port}`);
    raw = new PredictClient(`127.0.0.1:${running.port}`, credentials.createInsecure());
  });
  after(async () => {
    client.close();
    raw.close();
    await running.stop();
  });

  /** A raw PointWise of blend_only with `metadata`: the trailers it was answered with. */
  function trailersOf(metadata: Metadata): Promise<Metadata> {
    return new Promise((resolve, reject) => {
      const call = raw.inferPointWise(blendOnlyRequest([1, 2]), metadata, (err) => {
        if (err) reject(err);
      });
      call.on('status', (s) => resolve(s.metadata));
    });
  }

  test('without the metadata there is no trailer; with it, one entry per component of the DAG', async () => {
    assert.deepEqual((await trailersOf(new Metadata())).get('lattice-timings'), []);
    const off = new Metadata();
    off.set('lattice-timings', '0');
    assert.deepEqual((await trailersOf(off)).get('lattice-timings'), [], '"0" does not ask');
    for (const ask of ['1', 'true', 'Yes']) {
      const on = new Metadata();
      on.set('lattice-timings', ask);
      const timings = checkShape(timingsOf(await trailersOf(on)));
      assert.deepEqual(states(timings), [
        ['feature_init', 'feature_init', 'ran'],
        ['blend', 'compute', 'ran'],
      ]);
    }
  });

  test('the client: names and kinds in topological order, successors start after their predecessors', async () => {
    const input = {
      modelConfigId: 'doubler',
      targets: [
        { id: 'a', features: { price: 1.5 } },
        { id: 'b', features: { price: 4 } },
      ],
      schema: { price: 'FP32' },
    };
    const plain = await client.pointWise(input);
    assert.equal(plain.timings, undefined, 'not asked, not answered');
    const result = await client.pointWise({ ...input, timings: true });
    assert.deepEqual(
      result.targets.map((t) => t.values.total),
      [4, 9],
    );
    const timings = checkShape(result.timings);
    assert.deepEqual(states(timings), [
      ['feature_init', 'feature_init', 'ran'],
      ['double', 'model', 'ran'],
      ['total', 'compute', 'ran'],
    ]);
    const [init, double, total] = timings.components;
    assert.ok(double!.start_ms >= init!.start_ms + init!.duration_ms - 0.002);
    assert.ok(total!.start_ms >= double!.start_ms + double!.duration_ms - 0.002);
  });

  test('a failing non-required component is marked failed; the request still answers', async () => {
    const result = await client.pointWise({
      modelConfigId: 'fragile',
      targets: [{ id: 'a', features: { price: 1 } }],
      context: { bonus: 0 },
      schema: { price: 'FP32', bonus: 'FP64' },
      timings: true,
    });
    assert.match(result.targets[0]!.error, /blend failed/);
    assert.deepEqual(states(checkShape(result.timings)), [
      ['feature_init', 'feature_init', 'ran'],
      ['blend', 'compute', 'failed'],
    ]);
  });

  test('a failing required component: the error carries the trailer, its successors skipped', async () => {
    model.mode = 'broken';
    try {
      const error = await client
        .pointWise({
          modelConfigId: 'doubler',
          targets: [{ id: 'a', features: { price: 1 } }],
          schema: { price: 'FP32' },
          timings: true,
        })
        .then(
          () => assert.fail('the request should fail'),
          (err: unknown) => err as ServiceError,
        );
      assert.equal(error.code, status.UNAVAILABLE);
      assert.deepEqual(states(checkShape(timingsOf(error.metadata))), [
        ['feature_init', 'feature_init', 'ran'],
        ['double', 'model', 'failed'],
        ['total', 'compute', 'skipped'],
      ]);
    } finally {
      model.mode = 'ok';
    }
  });

  test('a request FeatureInit refuses: feature_init failed, every component skipped', async () => {
    const error = await client
      .pointWise({
        modelConfigId: 'doubler',
        targets: [],
        timings: true,
      })
      .then(
        () => assert.fail('the request should fail'),
        (err: unknown) => err as ServiceError,
      );
    assert.equal(error.code, status.INVALID_ARGUMENT);
    assert.deepEqual(states(checkShape(timingsOf(error.metadata))), [
      ['feature_init', 'feature_init', 'failed'],
      ['double', 'model', 'skipped'],
      ['total', 'compute', 'skipped'],
    ]);
  });

  test('the legacy RetrieveModelScore answers timings too', async () => {
    const answer = await client.retrieveModelScore({
      modelConfigId: 'blend_only',
      entities: [
        { entity: 'item_id', ids: ['x'], features: { price: ['1'] } },
        { entity: 'user', ids: ['u'], features: { bonus: ['0.5'] } },
      ],
      timings: true,
    });
    assert.deepEqual(answer.rows, [{ item_id: 'x', score: '2.5' }]);
    assert.deepEqual(states(checkShape(answer.timings)), [
      ['feature_init', 'feature_init', 'ran'],
      ['blend', 'compute', 'ran'],
    ]);
  });
});
