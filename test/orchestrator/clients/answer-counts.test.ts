/**
 * Servers answering a different number of rows than they were sent: a numerix server with too few or
 * too many scores, a feature store with too few or too many rows, or rows with too few or too many
 * values for the requested features. Each such call fails: its rows keep the defaults and carry a row
 * error naming the component, the endpoint and the counts; nothing is written shifted onto other rows
 * or features. Runs the whole engine over real gRPC clients and small fake servers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { DataType } from '../../../src/datatypes/data-type.js';
import type { NumerixResponseProto } from '../../../src/gen/numerix/numerix.js';
import type { PredictRequest } from '../../../src/gen/orchestrator/v1/predict.js';
import { FeatureServiceService, type Query, type Result } from '../../../src/gen/retrieve/retrieve.js';
import { createOrchestratorClients, type RemoteCompute } from '../../../src/orchestrator/clients/index.js';
import { createComponentBuilder } from '../../../src/orchestrator/components/index.js';
import { InferenceEngine } from '../../../src/orchestrator/engine/inference-engine.js';
import { FileConfigStore } from '../../../src/platform/config-store/index.js';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { FakeFeatureStore } from '../../support/fakes.js';
import { fp32, fp64, predictRequest, schema, testRegistry } from '../../support/orchestrator.js';
import { startServer, type TestServer } from './grpc-fixtures.js';
import { FakeNumerix } from './numerix-fixture.js';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A fresh engine over fresh clients, so no circuit opened by an earlier test is in the way. */
function engineOn(options: { featureStoreTarget?: string }) {
  const metrics = new Metrics();
  const clients = createOrchestratorClients({ metrics, ...options });
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-answer-counts-')) }),
    createComponentBuilder(clients),
    metrics,
  );
  return { registry, engine: new InferenceEngine(registry), close: () => clients.close() };
}

function targets(ids: string[], extra: Partial<PredictRequest> = {}): PredictRequest {
  return predictRequest({
    modelConfigId: 'm',
    targets: ids.map((id) => ({ id, featureValues: [] })),
    ...extra,
  });
}

/** One remote compute: score = numerix(`blend`)(price, bonus). */
const remoteBlend = (target: string) => ({
  model_config_id: 'm',
  target_id_column: 'item_id',
  component_dependency: { blend: [] },
  compute_components: [
    {
      name: 'blend',
      compute_id: 'blend',
      target,
      score_mapping: { price: 'price', bonus: 'bonus' },
      output_column: 'score',
      data_type: 'FP64',
      deadline_ms: 5000,
    },
  ],
  response: { columns: ['score'] },
});
const priced = targets(['a', 'b', 'c'], {
  contextFeatures: [{ ...schema('bonus', DataType.FP64), value: fp64(1) }],
  targetInputSchema: [schema('price', DataType.FP32)],
  targets: [1, 2, 3].map((p, i) => ({ id: `item${i}`, featureValues: [fp32(p)] })),
});

describe('a numerix server answering a different number of scores than rows sent', () => {
  const numerix = new FakeNumerix();
  before(() => numerix.start());
  after(() => numerix.server.stop());

  const answers: {
    name: string;
    scores: (s: NonNullable<NumerixResponseProto['computationScoreData']>['computationScores']) => typeof s;
    count: number;
  }[] = [
    { name: 'too few scores', scores: (s) => s.slice(0, 2), count: 2 },
    { name: 'too many scores', scores: (s) => [...s, s[0]!], count: 4 },
    { name: 'no scores', scores: () => [], count: 0 },
  ];
  for (const answer of answers) {
    test(`${answer.name}: every row defaults and names blend, the endpoint and the counts`, async () => {
      const { registry, engine, close } = engineOn({});
      numerix.tamper = (response) => ({
        computationScoreData: {
          ...response.computationScoreData!,
          computationScores: answer.scores(response.computationScoreData!.computationScores),
        },
      });
      try {
        const snapshot = registry.build('m', '1', remoteBlend(numerix.target));
        const { context } = await engine.executeOn(snapshot, { pattern: 'point', request: priced }, 't');
        const score = context.matrix.byteColumn('score');
        assert.deepEqual([...score.float64()!], [0, 0, 0]);
        for (let row = 0; row < 3; row++) {
          assert.equal(score.isDefaulted(row), true);
          assert.match(
            context.matrix.rowError(row),
            new RegExp(
              `blend failed: numerix ${escapeRegExp(numerix.target)}: compute blend: ${answer.count} scores returned for 3 rows`,
            ),
          );
        }
      } finally {
        numerix.tamper = undefined;
        close();
      }
    });
  }
});

test('any other RemoteCompute answering the wrong count fails the component the same way', async () => {
  const remote: RemoteCompute = { compute: async () => new Float64Array([5, 6]) };
  const registry = testRegistry(
    new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-answer-counts-')) }),
    createComponentBuilder({ remoteCompute: remote }),
  );
  const snapshot = registry.build('m', '1', remoteBlend('numerix.example:9000'));
  const { context } = await new InferenceEngine(registry).executeOn(
    snapshot,
    { pattern: 'point', request: priced },
    't',
  );
  assert.deepEqual([...context.matrix.byteColumn('score').float64()!], [0, 0, 0]);
  for (let row = 0; row < 3; row++) {
    assert.match(
      context.matrix.rowError(row),
      /blend failed: numerix numerix.example:9000: compute blend: 2 scores returned for 3 rows/,
    );
  }
});

describe('a feature store answering a different number of rows or values than asked', () => {
  const f32 = (x: number) => fp32(x);
  /** key → [price, ctr]. */
  const stored: Record<string, Buffer[]> = {
    c1: [f32(10), f32(0.1)],
    c2: [f32(20), f32(0.2)],
    c3: [f32(30), f32(0.3)],
    c4: [f32(40), f32(0.4)],
  };
  /** Answers like the reference store: one row per key, in order, one value per requested feature. */
  const honest = (query: Query): Result => ({
    entityLabel: query.entityLabel,
    keysSchema: query.keysSchema,
    featureSchemas: [],
    rows: query.keys.map(({ cols }) => ({ keys: cols, columns: stored[cols[0]!] ?? [] })),
  });
  /** Rewrites the answer to calls whose keys include `c3` (the second batch of two). */
  let tamper: ((result: Result) => Result) | undefined;
  let server: TestServer;
  before(async () => {
    server = await startServer((s) =>
      s.addService(FeatureServiceService, {
        retrieveFeatures: (call: ServerUnaryCall<Query, Result>, callback: sendUnaryData<Result>) => {
          const result = honest(call.request);
          const hit = call.request.keys.some((k) => k.cols[0] === 'c3');
          callback(null, hit && tamper ? tamper(result) : result);
        },
      }),
    );
  });
  after(() => server.stop());

  const catalog = {
    model_config_id: 'm',
    target_id_column: 'catalog_id',
    component_dependency: { catalog_features: [] },
    feature_components: [
      {
        name: 'catalog_features',
        entity: 'catalog',
        fs_keys: [{ schema: ['catalog_id'], col: 'catalog_id' }],
        feature_groups: [{ label: 'stats', data_type: 'FP32', features: ['price', 'ctr'] }],
        batch_size: 2,
        deadline_ms: 5000,
      },
    ],
    response: { columns: ['catalog:stats:price', 'catalog:stats:ctr'] },
  };
  const request = targets(['c1', 'c2', 'c3', 'c4']);

  const answers: { name: string; tamper: (r: Result) => Result; count: RegExp }[] = [
    {
      name: 'too few rows',
      tamper: (r) => ({ ...r, rows: r.rows.slice(1) }),
      count: /1 rows returned for 2 keys/,
    },
    {
      name: 'too many rows',
      tamper: (r) => ({ ...r, rows: [...r.rows, { keys: [], columns: stored.c1! }] }),
      count: /3 rows returned for 2 keys/,
    },
    {
      name: 'a row with too few values',
      tamper: (r) => ({ ...r, rows: r.rows.map((row) => ({ ...row, columns: row.columns.slice(1) })) }),
      count: /row 0 \(key c3\) has 1 values for 2 requested features/,
    },
    {
      name: 'a row with too many values',
      tamper: (r) => ({
        ...r,
        rows: r.rows.map((row, i) => (i === 1 ? { ...row, columns: [f32(-1), ...row.columns] } : row)),
      }),
      count: /row 1 \(key c4\) has 3 values for 2 requested features/,
    },
  ];
  for (const answer of answers) {
    test(`${answer.name}: that batch's rows default and name the component, the endpoint and the counts`, async () => {
      const { registry, engine, close } = engineOn({ featureStoreTarget: server.target });
      tamper = answer.tamper;
      try {
        const snapshot = registry.build('m', '1', catalog);
        const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
        const price = context.matrix.byteColumn('catalog:stats:price');
        const ctr = context.matrix.byteColumn('catalog:stats:ctr');
        // The honest batch (c1, c2) is written; the other one (c3, c4) is defaults only, none shifted.
        assert.deepEqual([...price.float32()!], [10, 20, 0, 0]);
        assert.deepEqual([...ctr.float32()!], [Math.fround(0.1), Math.fround(0.2), 0, 0]);
        assert.equal(context.matrix.rowError(0), '');
        assert.equal(context.matrix.rowError(1), '');
        for (const row of [2, 3]) {
          assert.equal(price.isDefaulted(row), true);
          assert.equal(ctr.isDefaulted(row), true);
          const error = context.matrix.rowError(row);
          assert.match(error, /^catalog_features: feature store call failed: /);
          assert.match(error, new RegExp(`feature store ${escapeRegExp(server.target)}: entity catalog: `));
          assert.match(error, answer.count);
        }
      } finally {
        tamper = undefined;
        close();
      }
    });
  }

  test('any other fetcher answering the wrong shape fails that batch the same way', async () => {
    const fetcher = new FakeFeatureStore({
      catalog: Object.fromEntries(
        Object.entries(stored).map(([key, [price, ctr]]) => [
          key,
          { 'stats:price': price!, 'stats:ctr': ctr! },
        ]),
      ),
    });
    const honestRetrieve = fetcher.retrieve.bind(fetcher);
    const registry = testRegistry(
      new FileConfigStore({ dir: mkdtempSync(join(tmpdir(), 'lattice-answer-counts-')) }),
      createComponentBuilder({ featureFetcher: fetcher }),
    );
    const engine = new InferenceEngine(registry);
    const snapshot = registry.build('m', '1', catalog);
    const wrongShapes: {
      name: string;
      rows: (rows: Awaited<ReturnType<typeof honestRetrieve>>) => typeof rows;
      count: RegExp;
    }[] = [
      { name: 'a missing row', rows: (rows) => rows.slice(1), count: /1 rows returned for 2 keys/ },
      { name: 'an extra row', rows: (rows) => [...rows, rows[0]], count: /3 rows returned for 2 keys/ },
      {
        name: 'a short row',
        rows: (rows) => [rows[0]!.slice(1), rows[1]],
        count: /row 0 has 1 values for 2 requested features/,
      },
    ];
    for (const shape of wrongShapes) {
      fetcher.retrieve = async (query) => {
        const rows = await honestRetrieve(query);
        return query.keys.some((k) => k[0] === 'c3') ? shape.rows(rows) : rows;
      };
      const { context } = await engine.executeOn(snapshot, { pattern: 'point', request }, 't');
      const price = context.matrix.byteColumn('catalog:stats:price');
      assert.deepEqual([...price.float32()!], [10, 20, 0, 0], shape.name);
      assert.equal(price.isDefaulted(2), true, shape.name);
      assert.equal(context.matrix.byteColumn('catalog:stats:ctr').isDefaulted(3), true, shape.name);
      for (const row of [2, 3]) {
        assert.match(
          context.matrix.rowError(row),
          /^catalog_features: feature store call failed: entity catalog: /,
        );
        assert.match(context.matrix.rowError(row), shape.count, shape.name);
      }
    }
  });
});
