import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ModelConfigError, validateModelConfig } from '../../../src/orchestrator/config/index.js';
import { TopologyCache } from '../../../src/orchestrator/dag/index.js';
import { catalogRanker } from '../../support/model-configs.js';

const topologies = new TopologyCache();
// biome-ignore lint/suspicious/noExplicitAny: documents are mutated freely into invalid shapes
type Doc = Record<string, any>;

/** The design's example with a retrieval stage and a sorted, cut response. */
function retrieving(): Doc {
  const doc: Doc = catalogRanker();
  doc.retrieval = {
    retrievers: [
      {
        name: 'similar',
        target: '127.0.0.1:50060',
        entity: 'catalog',
        model: 'products',
        variant: 'all',
        query: { candidate_id_from: 'item_id' },
        k: 50,
        quota: 20,
        attributes: [
          { name: 'category', column: 'vss_category' },
          { name: 'price', data_type: 'FP32' },
        ],
        filters: [{ field: 'brand', op: 'in', values_from: 'brand' }],
      },
      {
        name: 'personal',
        target: 'dns:///vss.internal:50060',
        entity: 'catalog',
        model: 'products',
        variant: 'all',
        query: { entity_embedding: { entity: 'user', model: 'towers', id_from: 'user_id' } },
        k: 20,
        required: true,
      },
    ],
  };
  doc.response = {
    columns: [...doc.response.columns, 'similar_score'],
    sort_by: { column: 'final_score' },
    limit: 10,
  };
  return doc;
}

function problems(mutate: (doc: Doc) => void): { path: string; message: string }[] {
  const doc = retrieving();
  mutate(doc);
  try {
    validateModelConfig(doc, { topologies });
  } catch (err) {
    assert.ok(err instanceof ModelConfigError, String(err));
    return [...err.problems];
  }
  assert.fail('expected the document to be rejected');
}

function assertProblem(mutate: (doc: Doc) => void, path: string, message: RegExp): void {
  const found = problems(mutate);
  assert.ok(
    found.some((p) => p.path === path && message.test(p.message)),
    `expected ${path} ~ ${message}; got ${JSON.stringify(found)}`,
  );
}

describe('model config validation: retrieval, sort_by and limit', () => {
  test('a retrieval config is valid; its columns are request columns the DAG and response may read', () => {
    const model = validateModelConfig(retrieving(), { topologies });
    assert.equal(model.config.retrieval?.deadline_ms, 100);
    assert.equal(model.config.retrieval?.score_column, 'retrieval_score');
    assert.equal(model.config.response.sort_by?.order, 'desc');
    // The ranker may read a retrieval column like any request column.
    const doc = retrieving();
    doc.model_serving_components[0].inputs[0].features.push('similar_score', 'price');
    doc.model_serving_components[0].inputs[0].shape = [
      doc.model_serving_components[0].inputs[0].features.length,
    ];
    assert.ok(validateModelConfig(doc, { topologies }));
  });

  test('each invalid declaration is rejected at its JSON path', () => {
    assertProblem(
      (d) => (d.retrieval.retrievers[1].name = 'similar'),
      'retrieval.retrievers[1].name',
      /already defined/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].target = 'not an address'),
      'retrieval.retrievers[0].target',
      /not a gRPC address/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].target = 'vss.internal'),
      'retrieval.retrievers[0].target',
      /host:port/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].quota = 51),
      'retrieval.retrievers[0].quota',
      /more than the 50/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].query = {}),
      'retrieval.retrievers[0].query',
      /exactly one/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].query = { candidate_id_from: 'a', context_feature: 'v' }),
      'retrieval.retrievers[0].query',
      /exactly one/,
    );
    assertProblem((d) => (d.retrieval.retrievers[0].k = 0), 'retrieval.retrievers[0].k', /.+/);
    assertProblem(
      (d) => (d.retrieval.retrievers[0].attributes[1].data_type = 'FP33'),
      'retrieval.retrievers[0].attributes[1].data_type',
      /not a known/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].filters[0].op = 'like'),
      'retrieval.retrievers[0].filters[0].op',
      /.+/,
    );
    assertProblem(
      (d) => delete d.retrieval.retrievers[0].filters[0].values_from,
      'retrieval.retrievers[0].filters[0]',
      /needs values/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[1].score_column = 'similar_score'),
      'retrieval.retrievers[1].score_column',
      /already filled/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].attributes[0].column = 'ctr'),
      'model_serving_components[0].outputs[0].columns[0]',
      /also filled by retrieval/,
    );
    assertProblem(
      (d) => (d.retrieval.retrievers[0].surprise = 1),
      'retrieval.retrievers[0]',
      /unknown field surprise/,
    );
    assertProblem((d) => (d.retrieval.retrievers = []), 'retrieval.retrievers', /.+/);
    assertProblem((d) => (d.retrieval.deadline_ms = -1), 'retrieval.deadline_ms', /.+/);
  });

  test('a feature_store_vector query names <entity>:<group>:<feature> of its entity', () => {
    const fsVector = (column: string) => (d: Doc) => {
      d.retrieval.retrievers[1].query = {
        feature_store_vector: { entity: 'user', column, id_from: 'user_id' },
      };
    };
    const doc = retrieving();
    fsVector('user:profile:embedding')(doc);
    assert.ok(validateModelConfig(doc, { topologies }));
    for (const column of ['profile:embedding', 'catalog:profile:embedding', 'user::embedding'])
      assertProblem(
        fsVector(column),
        'retrieval.retrievers[1].query.feature_store_vector.column',
        /is not user:<group>:<feature>/,
      );
    assertProblem(
      (d) => {
        d.retrieval.retrievers[1].query.feature_store_vector = {
          entity: 'user',
          column: 'user:profile:embedding',
        };
      },
      'retrieval.retrievers[1].query.feature_store_vector.id_from',
      /.+/,
    );
    assertProblem(
      (d) => {
        d.retrieval.retrievers[1].query.feature_store_vector = {
          entity: 'user',
          column: 'user:profile:embedding',
          id_from: 'user_id',
        };
      },
      'retrieval.retrievers[1].query',
      /exactly one/,
    );
  });

  test("a feature_store_vector's data_type is a float vector type, FP32_VECTOR by default", () => {
    const typed = (data_type: string) => (d: Doc) => {
      d.retrieval.retrievers[1].query = {
        feature_store_vector: {
          entity: 'user',
          column: 'user:profile:embedding',
          id_from: 'user_id',
          data_type,
        },
      };
    };
    for (const type of ['FP16_VECTOR', 'FP64_VECTOR', 'fp8e4m3_vector']) {
      const doc = retrieving();
      typed(type)(doc);
      assert.ok(validateModelConfig(doc, { topologies }), type);
    }
    for (const type of ['FP32', 'INT8_VECTOR', 'STRING_VECTOR', 'FLOAT'])
      assertProblem(
        typed(type),
        'retrieval.retrievers[1].query.feature_store_vector.data_type',
        /is not a float vector type/,
      );
  });

  test('sort_by names a response column of scalar numbers; limit is positive', () => {
    assertProblem(
      (d) => (d.response.sort_by = { column: 'nope' }),
      'response.sort_by.column',
      /not one of response.columns/,
    );
    assertProblem(
      (d) => (d.response.sort_by = { column: 'final_score', order: 'up' }),
      'response.sort_by.order',
      /.+/,
    );
    assertProblem(
      (d) => {
        d.response.columns.push('vss_category');
        d.response.sort_by = { column: 'vss_category' };
      },
      'response.sort_by.column',
      /STRING values, not scalar numbers/,
    );
    assertProblem((d) => (d.response.limit = 0), 'response.limit', /.+/);
  });
});
