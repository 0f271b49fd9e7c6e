import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { encodeValue } from '../../../src/datatypes/codecs.js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { createComponentBuilder, routeEndpoint } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { FakeFeatureStore, FakeLinearModel, type FeatureData } from '../../support/fakes.js';
import { catalogRanker } from '../../support/model-configs.js';
import { fp32, schema, testRegistry } from '../../support/orchestrator.js';

const f32 = (x: number) => encodeValue(DataType.FP32, x);
const i32 = (x: number) => encodeValue(DataType.INT32, x);
const round32 = (x: number) => Math.fround(x);

const catalogs: Record<string, { price: number; ctr: number; category: number }> = {
  c1: { price: 10, ctr: 0.1, category: 7 },
  c2: { price: 20, ctr: 0.2, category: 8 },
  c3: { price: 5, ctr: 0.05, category: 7 },
  c4: { price: 40, ctr: 0.3, category: 9 },
};
const user = { id: 'u1', age: 30 };
const clicks: Record<string, number> = { '7': 3, '8': 11 }; // u1 × category 9 has no row
const data: FeatureData = {
  catalog: Object.fromEntries(
    Object.entries(catalogs).map(([id, c]) => [
      id,
      { 'stats:price': f32(c.price), 'stats:ctr_7d': f32(c.ctr), 'attributes:category_id': i32(c.category) },
    ]),
  ),
  user: { u1: { 'profile:age': f32(user.age) } },
  user_category: Object.fromEntries(
    Object.entries(clicks).map(([cat, n]) => [`u1|${cat}`, { 'agg:clicks_30d': f32(n) }]),
  ),
};
const weights = [0.01, 2, 0.001, 0.05];
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** The expected ctr and final_score of one catalog, computed without the engine (fp32 where the engine stores fp32). */
function expected(id: string, clicksValue = clicks[String(catalogs[id]!.category)] ?? 0) {
  const c = catalogs[id]!;
  const raw = round32(
    round32(c.price) * weights[0]! +
      round32(c.ctr) * weights[1]! +
      user.age * weights[2]! +
      clicksValue * weights[3]!,
  );
  const ctr = round32(sigmoid(1.2 * raw - 0.3));
  const final = round32(round32(ctr * 0.8) + round32(round32(Math.log(c.price)) * 0.2));
  return { ctr, final };
}

function setup(configure: (doc: ReturnType<typeof catalogRanker>) => void = () => {}) {
  const featureStore = new FakeFeatureStore(data);
  const model = new FakeLinearModel(weights);
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-components-')) }),
    createComponentBuilder({ featureFetcher: featureStore, modelInferer: model }),
  );
  const doc = catalogRanker();
  configure(doc);
  const snapshot = registry.build('catalog_ranker', '1', doc);
  return { featureStore, model, snapshot, engine: new InferenceEngine(registry) };
}

function request(ids: string[]): PredictRequest {
  return {
    modelConfigId: 'catalog_ranker',
    trackingId: 't',
    contextFeatures: [{ ...schema('user_id', DataType.STRING), value: Buffer.from(user.id) }],
    targetInputSchema: [],
    targets: ids.map((id) => ({ id, featureValues: [] })),
    pairInputSchema: [],
    pairs: [],
    slateInputSchema: [],
    slates: [],
    returnTargetScores: false,
  };
}

describe('feature, model and compute components on the example DAG', () => {
  test('scores every target: product → category → user×category → model → compute', async () => {
    const { engine, snapshot, featureStore } = setup();
    const ids = ['c1', 'c2', 'c3', 'c1'];
    const { context } = await engine.executeOn(snapshot, { pattern: 'point', request: request(ids) }, 't');
    const ctr = context.matrix.byteColumn('ctr').float32()!;
    const final = context.matrix.byteColumn('final_score').float32()!;
    ids.forEach((id, row) => {
      const want = expected(id);
      assert.ok(Math.abs(ctr[row]! - want.ctr) < 1e-6, `ctr of ${id}: ${ctr[row]} vs ${want.ctr}`);
      assert.ok(
        Math.abs(final[row]! - want.final) < 1e-6,
        `final_score of ${id}: ${final[row]} vs ${want.final}`,
      );
      assert.equal(context.matrix.rowError(row), '');
    });
    // Unique keys only: 3 catalogs, 1 user, 2 user×category pairs, one call each.
    assert.equal(featureStore.calls, 3);
    assert.equal(featureStore.keysRequested, 3 + 1 + 2);
  });

  test('a missing entity keeps defaults and marks only its rows', async () => {
    const { engine, snapshot } = setup();
    const { context } = await engine.executeOn(
      snapshot,
      { pattern: 'point', request: request(['c1', 'c404', 'c4']) },
      't',
    );
    assert.match(context.matrix.rowError(1), /catalog_features: entity c404 not found/);
    assert.equal(context.matrix.byteColumn('catalog:stats:price').isDefaulted(1), true);
    // Its category is defaulted too, so its user×category key is incomplete: no lookup, said so.
    assert.match(context.matrix.rowError(1), /user_x_category: no key \(empty or incomplete key column\)/);
    // c4's category 9 has no user×category row: defaults to 0 clicks, marked.
    assert.match(context.matrix.rowError(2), /user_x_category: entity u1\|9 not found/);
    const ctr = context.matrix.byteColumn('ctr').float32()!;
    assert.ok(Math.abs(ctr[0]! - expected('c1').ctr) < 1e-6);
    assert.ok(Math.abs(ctr[2]! - expected('c4', 0).ctr) < 1e-6);
    // The defaulted price (0) makes `price log` undefined: by the design's rule the compute component
    // fails as a whole (it is not required), so every row's final_score is defaulted and says why.
    assert.match(context.matrix.rowError(0), /^blend failed: log of non-positive value 0 at row 1/);
    assert.equal(context.matrix.byteColumn('final_score').isDefaulted(0), true);
  });

  test('a feature store failing for one component: defaults, row errors, the request still answers', async () => {
    const { engine, snapshot, featureStore } = setup();
    featureStore.failWhen = (q) =>
      q.entity === 'user_category' ? new Error('connection refused') : undefined;
    const { context } = await engine.executeOn(
      snapshot,
      { pattern: 'point', request: request(['c1', 'c2']) },
      't',
    );
    for (const row of [0, 1])
      assert.match(context.matrix.rowError(row), /user_x_category failed: connection refused/);
    assert.ok(Math.abs(context.matrix.byteColumn('ctr').float32()![0]! - expected('c1', 0).ctr) < 1e-6);
  });

  test('a model failing half its batches: scores never shift rows, failed rows say so', async () => {
    const { engine, snapshot, model } = setup((doc) => {
      doc.model_serving_components![0]!.batch_size = 2;
    });
    model.failWhen = (_call, req) => {
      // Fail the batches whose first row is an even-numbered catalog (order of calls is not fixed).
      const x = new Float32Array(req.inputs[0]!.data.buffer, req.inputs[0]!.data.byteOffset, 4);
      return x[0] === 20 || x[0] === 40 ? new Error('model crashed') : undefined;
    };
    const ids = ['c1', 'c3', 'c2', 'c4', 'c3', 'c1'];
    const { context } = await engine.executeOn(snapshot, { pattern: 'point', request: request(ids) }, 't');
    const ctr = context.matrix.byteColumn('ctr').float32()!;
    ids.forEach((id, row) => {
      if (row === 2 || row === 3) {
        assert.match(context.matrix.rowError(row), /ranker: model call failed: model crashed/);
        assert.equal(context.matrix.byteColumn('ctr').isDefaulted(row), true);
      } else {
        assert.ok(Math.abs(ctr[row]! - expected(id).ctr) < 1e-6, `row ${row} (${id}) kept its own score`);
      }
    });
  });

  test('the model failing every batch fails the request: model serving is required by default', async () => {
    const { engine, snapshot, model } = setup();
    model.failWhen = () => new Error('down');
    await assert.rejects(
      engine.executeOn(snapshot, { pattern: 'point', request: request(['c1']) }, 't'),
      /component "ranker" failed: down/,
    );
  });

  test('percentage routing through the component: 10,000 calls land within ±2 points of 90/10', async () => {
    const { engine, snapshot, model } = setup((doc) => {
      doc.model_serving_components![0]!.batch_size = 1;
    });
    const ids = Array.from({ length: 10_000 }, (_, i) => ['c1', 'c2', 'c3', 'c4'][i % 4]!);
    const { context } = await engine.executeOn(snapshot, { pattern: 'point', request: request(ids) }, 't');
    assert.equal(model.calls, 10_000, 'one call per row with batch_size 1');
    const a = model.perTarget.get('ranker-a:8001') ?? 0;
    const b = model.perTarget.get('ranker-b:8001') ?? 0;
    assert.equal(a + b, 10_000);
    assert.ok(Math.abs(a / 100 - 90) <= 2, `ranker-a got ${a / 100}%`);
    assert.equal(context.matrix.rowError(9_998), '', 'c3 has every feature');
  });

  test('percentage routing stays within ±2 points of the split over 10,000 draws', () => {
    const endpoints = [
      { target: 'a', percentage: 90 },
      { target: 'b', percentage: 10 },
    ];
    let a = 0;
    for (let i = 0; i < 10_000; i++) if (routeEndpoint(endpoints, Math.random()) === 'a') a++;
    assert.ok(Math.abs(a / 100 - 90) <= 2, `a got ${a / 100}%`);
    assert.equal(routeEndpoint(endpoints, 0.8999), 'a');
    assert.equal(routeEndpoint(endpoints, 0.9), 'b');
    assert.equal(routeEndpoint(endpoints, 0.99999), 'b');
  });

  test('isotonic and downsampling calibration', async () => {
    const iso = setup((doc) => {
      doc.model_serving_components![0]!.calibration = { method: 'isotonic', x: [0, 1, 2], y: [0, 0.5, 0.6] };
    });
    const raw = (id: string) =>
      round32(
        round32(catalogs[id]!.price) * weights[0]! +
          round32(catalogs[id]!.ctr) * weights[1]! +
          user.age * weights[2]! +
          clicks[String(catalogs[id]!.category)]! * weights[3]!,
      );
    let { context } = await iso.engine.executeOn(
      iso.snapshot,
      { pattern: 'point', request: request(['c1']) },
      't',
    );
    const r = raw('c1');
    const want = r <= 1 ? r * 0.5 : 0.5 + (r - 1) * 0.1;
    assert.ok(Math.abs(context.matrix.byteColumn('ctr').float32()![0]! - want) < 1e-6);
    const down = setup((doc) => {
      doc.model_serving_components![0]!.calibration = { method: 'downsampling', rate: 0.1 };
    });
    ({ context } = await down.engine.executeOn(
      down.snapshot,
      { pattern: 'point', request: request(['c1']) },
      't',
    ));
    assert.ok(Math.abs(context.matrix.byteColumn('ctr').float32()![0]! - r / (r + (1 - r) / 0.1)) < 1e-5);
  });

  test('slate mode: one inference per slate over its rows, the score lands on the slate', async () => {
    const { engine, snapshot, model } = setup((doc) => {
      doc.model_serving_components![0]!.slate = true;
      doc.model_serving_components![0]!.outputs[0]!.columns = ['slate_ctr'];
      doc.compute_components![0]!.score_mapping = {
        ctr: 'catalog:stats:ctr_7d',
        price: 'catalog:stats:price',
      };
      doc.response.columns = ['final_score', 'slate_ctr'];
    });
    const r = request(['c1', 'c2', 'c3']);
    r.slates = [
      { slateTargetIndices: [1, 0], featureValues: [] },
      { slateTargetIndices: [2], featureValues: [] },
    ];
    const { context } = await engine.executeOn(snapshot, { pattern: 'slate', request: r }, 't');
    assert.equal(model.calls, 2);
    const slateCtr = context.slate!.byteColumn('slate_ctr').float32()!;
    assert.ok(Math.abs(slateCtr[0]! - expected('c2').ctr) < 1e-6, 'first row of slate 0 is c2');
    assert.ok(Math.abs(slateCtr[1]! - expected('c3').ctr) < 1e-6);
  });

  test('request values are typed bytes: a FP32 target feature feeds the model as is', () => {
    assert.equal(fp32(1.5).length, 4);
  });
});
