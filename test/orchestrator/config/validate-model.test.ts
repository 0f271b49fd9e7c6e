import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DataType } from '../../../src/datatypes/data-type.js';
import { ModelConfigError, validateModelConfig } from '../../../src/orchestrator/config/index.js';
import { TopologyCache } from '../../../src/orchestrator/dag/index.js';
import { catalogRanker } from '../../support/model-configs.js';

const topologies = new TopologyCache();
const validate = (doc: unknown, expectedId?: string) => validateModelConfig(doc, { topologies, expectedId });

type Doc = ReturnType<typeof catalogRanker>;
function problemsOf(mutate: (doc: Doc) => void): { path: string; message: string }[] {
  const doc = catalogRanker();
  mutate(doc);
  try {
    validate(doc);
  } catch (err) {
    assert.ok(err instanceof ModelConfigError, String(err));
    assert.equal(err.code, 'INVALID_ARGUMENT');
    return [...err.problems];
  }
  assert.fail('expected the document to be rejected');
}
function assertProblem(mutate: (doc: Doc) => void, path: string, message: RegExp): void {
  const problems = problemsOf(mutate);
  assert.ok(
    problems.some((p) => p.path === path && message.test(p.message)),
    `expected ${path} ~ ${message}; got ${JSON.stringify(problems)}`,
  );
}

describe('model config validation', () => {
  test("the design's example is valid, with defaults filled and columns derived", () => {
    const model = validate(catalogRanker(), 'catalog_ranker');
    assert.equal(model.config.feature_components[1]!.batch_size, 100);
    assert.equal(model.config.feature_components[1]!.deadline_ms, 50);
    assert.equal(model.config.model_serving_components[0]!.required, true);
    assert.deepEqual(
      model.targetColumns.map((c) => [c.name, DataType[c.dataType]]),
      [
        ['catalog:stats:price', 'FP32'],
        ['catalog:stats:ctr_7d', 'FP32'],
        ['catalog:attributes:category_id', 'INT32'],
        ['user:profile:age', 'FP32'],
        ['user_category:agg:clicks_30d', 'FP32'],
        ['ctr', 'FP32'],
        ['final_score', 'FP32'],
      ],
    );
    assert.deepEqual(model.requestFeatures, ['user_id']);
    assert.deepEqual([...model.topology.nodes].sort(), [
      'blend',
      'catalog_features',
      'feature_init',
      'ranker',
      'user_features',
      'user_x_category',
    ]);
  });

  test('shape errors name the field', () => {
    assertProblem((d) => Object.assign(d, { model_config_id: 7 }), 'model_config_id', /string/);
    assertProblem((d) => Object.assign(d, { surprise: true }), '', /unknown field surprise/);
    assertProblem(
      (d) => Object.assign(d.feature_components![0]!, { batch_size: -1 }),
      'feature_components[0].batch_size',
      /./,
    );
    assertProblem((d) => Object.assign(d.logging!, { logging_perc: 101 }), 'logging.logging_perc', /100/);
  });

  test('the stored key and the id must agree', () => {
    assert.throws(
      () => validate(catalogRanker(), 'other'),
      /model_config_id: is "catalog_ranker" but the document is stored as models\/other/,
    );
  });

  test('a cycle is reported with its path', () => {
    assertProblem(
      (d) => {
        d.component_dependency = { ...d.component_dependency, blend: ['catalog_features'] };
      },
      'component_dependency.blend',
      /cycle.*blend → catalog_features → .*blend|cycle/,
    );
    const problems = problemsOf((d) => {
      d.component_dependency = { ...d.component_dependency, blend: ['catalog_features'] };
    });
    assert.match(problems.map((p) => p.message).join(' '), /→/);
  });

  test('unknown and unlisted components', () => {
    assertProblem(
      (d) => {
        d.component_dependency = { ...d.component_dependency, ranker: ['blend', 'reranker'] };
      },
      'component_dependency.ranker[1]',
      /no component named "reranker"/,
    );
    assertProblem(
      (d) => {
        const { blend: _blend, ...rest } = d.component_dependency;
        d.component_dependency = { ...rest, ranker: [] };
      },
      'compute_components[0].name',
      /not in component_dependency/,
    );
    assertProblem(
      (d) => {
        d.compute_components![0]!.name = 'ranker';
      },
      'compute_components[0].name',
      /defined more than once/,
    );
  });

  test('a column read but never produced', () => {
    assertProblem(
      (d) => {
        d.model_serving_components![0]!.inputs[0]!.features[3] = 'user_category:agg:clicks_90d';
      },
      'model_serving_components[0].inputs[0].features[3]',
      /"user_category:agg:clicks_90d", which no component produces/,
    );
    assertProblem(
      (d) => {
        d.response.columns.push('ctr_calibrated');
        d.request_features = ['user_id'];
      },
      'response.columns[2]',
      /no component produces and request_features does not list/,
    );
  });

  test('a column read before its producer runs', () => {
    assertProblem(
      (d) => {
        d.component_dependency = { ...d.component_dependency, catalog_features: ['ranker'] };
      },
      'feature_components[2].fs_keys[1].col',
      /produced by catalog_features, which does not run before user_x_category/,
    );
  });

  test('two producers of one column', () => {
    assertProblem(
      (d) => {
        d.compute_components![0]!.output_column = 'ctr';
      },
      'compute_components[0].output_column',
      /already produced by ranker/,
    );
  });

  test('percentages must sum to 100', () => {
    assertProblem(
      (d) => {
        d.model_serving_components![0]!.endpoints[1]!.percentage = 20;
      },
      'model_serving_components[0].endpoints',
      /sum to 110, not 100/,
    );
  });

  test('unknown data types', () => {
    assertProblem(
      (d) => {
        d.feature_components![0]!.feature_groups[1]!.data_type = 'INT33';
      },
      'feature_components[0].feature_groups[1].data_type',
      /unknown data type "INT33"/,
    );
    assertProblem(
      (d) => {
        d.model_serving_components![0]!.outputs[0]!.data_type = 'FLOAT';
      },
      'model_serving_components[0].outputs[0].data_type',
      /unknown data type "FLOAT"/,
    );
    // Accepted spellings: Triton's BYTES, DataTypeFP32, lower case.
    const doc = catalogRanker();
    doc.feature_components![1]!.feature_groups[0]!.data_type = 'DataTypeFP32';
    doc.model_serving_components![0]!.inputs[0]!.data_type = 'fp32';
    assert.ok(validate(doc));
  });

  test('bad expressions and unmapped variables', () => {
    assertProblem(
      (d) => {
        d.compute_components![0]!.expression = 'ctr 0.8 * +';
      },
      'compute_components[0].expression',
      /./,
    );
    assertProblem(
      (d) => {
        d.compute_components![0]!.expression = 'ctr bonus +';
      },
      'compute_components[0].score_mapping',
      /variable "bonus" has no mapping/,
    );
    assertProblem(
      (d) => {
        d.compute_components![0]!.compute_id = 'blend_v2';
      },
      'compute_components[0]',
      /exactly one of "expression".*"compute_id"/,
    );
  });

  test('isotonic calibration needs matching, increasing points', () => {
    assertProblem(
      (d) => {
        d.model_serving_components![0]!.calibration = {
          method: 'isotonic',
          x: [0, 0.5, 0.4],
          y: [0, 0.5, 1],
        };
      },
      'model_serving_components[0].calibration.x',
      /strictly increasing/,
    );
  });

  test('every problem is reported at once', () => {
    const problems = problemsOf((d) => {
      d.model_serving_components![0]!.endpoints[1]!.percentage = 20;
      d.feature_components![0]!.feature_groups[1]!.data_type = 'INT33';
    });
    assert.ok(problems.length >= 2, JSON.stringify(problems));
  });
});
