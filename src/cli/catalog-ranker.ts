/**
 * A worked example over the seeded demo data (src/featurestore/demo-data.ts): the design's catalog
 * ranker with chained entity resolution — catalog → its category → user × category — a logistic
 * ONNX model served by the reference model server, and a blend computed by the reference compute
 * server. PairWise and SlateWise requests are scored too, by a slate model on the same features
 * (one row per pair or slate). Used by `lattice up`, the end-to-end tests and the benchmarks.
 */

import { logisticRanker, slateScorer, writeModel } from '../modelserver/onnx-builder.js';
import type { ModelConfigInput } from '../orchestrator/config/index.js';

export const CATALOG_RANKER_ID = 'catalog_ranker';
export const CATALOG_RANKER_MODEL = 'catalog_ranker';
/** The slate model: the ranker's weights, one answer row per pair or slate (onnx-builder.ts, slateScorer). */
export const CATALOG_SLATE_MODEL = 'catalog_slate_ranker';
export const BLEND_COMPUTE_ID = 'catalog_blend';
export const BLEND_EXPRESSION = 'ctr 0.9 * popularity 0.1 * +';

/** The model's input, in order: the user's embedding and age, the item's price and ctr, its category's popularity, the user's clicks in that category. */
export const RANKER_FEATURES = [
  'user:profile:embedding',
  'user:profile:age',
  'catalog:stats:price',
  'catalog:stats:ctr_7d',
  'category:stats:popularity',
  'user_category:agg:clicks_30d',
] as const;

/** Weights per input value (the embedding contributes 8), chosen so scores spread over (0, 1). */
export const RANKER_WEIGHTS = [0.3, -0.2, 0.1, 0.05, -0.1, 0.2, -0.05, 0.15, 0.01, -0.002, 5, 1, 0.05];
export const RANKER_BIAS = -1;

/**
 * Writes the ranker and the slate model into a model repository; returns the ranker's weights as
 * actually stored (fp32), which the slate model shares.
 */
export function writeCatalogRankerModel(repository: string): { weights: Float32Array; bias: number } {
  const model = logisticRanker({
    features: RANKER_WEIGHTS.length,
    weights: RANKER_WEIGHTS,
    bias: RANKER_BIAS,
  });
  writeModel(repository, CATALOG_RANKER_MODEL, 1, model.bytes);
  const slate = slateScorer({ features: RANKER_WEIGHTS.length, weights: model.weights, bias: model.bias });
  writeModel(repository, CATALOG_SLATE_MODEL, 1, slate.bytes);
  return { weights: model.weights, bias: model.bias };
}

/** The one input of the ranker and the slate model: the features in RANKER_FEATURES order. */
function rankerInputs() {
  return [
    { name: 'features', data_type: 'FP32', shape: [RANKER_WEIGHTS.length], features: [...RANKER_FEATURES] },
  ];
}

/**
 * The model configuration, pointing at a model server and a compute server. Deadlines are 200 ms
 * per call (the default feature deadline of 50 ms is tight for a first call that also connects).
 */
export function catalogRankerConfig(targets: {
  modelServer: string;
  computeServer: string;
}): ModelConfigInput {
  return {
    model_config_id: CATALOG_RANKER_ID,
    target_id_column: 'catalog_id',
    component_dependency: {
      catalog_features: ['category_features', 'user_x_category', 'ranker', 'slate_ranker'],
      user_features: ['ranker', 'slate_ranker'],
      category_features: ['ranker', 'blend', 'slate_ranker'],
      user_x_category: ['ranker', 'slate_ranker'],
      ranker: ['blend'],
      blend: [],
      slate_ranker: [],
    },
    cache: { version: 1, ttl_seconds: 300 },
    feature_components: [
      {
        name: 'catalog_features',
        entity: 'catalog',
        deadline_ms: 200,
        fs_keys: [{ schema: ['catalog_id'], col: 'catalog_id' }],
        feature_groups: [
          { label: 'stats', data_type: 'FP32', features: ['price', 'ctr_7d'] },
          { label: 'attributes', data_type: 'INT32', features: ['category_id'] },
        ],
        cache: { enabled: true, ttl_seconds: 600 },
      },
      {
        name: 'user_features',
        entity: 'user',
        deadline_ms: 200,
        fs_keys: [{ schema: ['user_id'], col: 'user_id' }],
        feature_groups: [
          { label: 'profile', data_type: 'FP32', features: ['age'] },
          { label: 'profile', data_type: 'FP32_VECTOR', vector_dim: 8, features: ['embedding'] },
        ],
      },
      {
        name: 'category_features',
        entity: 'category',
        deadline_ms: 200,
        fs_keys: [{ schema: ['category_id'], col: 'catalog:attributes:category_id' }],
        feature_groups: [{ label: 'stats', data_type: 'FP32', features: ['popularity'] }],
      },
      {
        name: 'user_x_category',
        entity: 'user_category',
        deadline_ms: 200,
        fs_keys: [
          { schema: ['user_id'], col: 'user_id' },
          { schema: ['category_id'], col: 'catalog:attributes:category_id' },
        ],
        feature_groups: [{ label: 'agg', data_type: 'FP32', features: ['clicks_30d'] }],
      },
    ],
    model_serving_components: [
      {
        name: 'ranker',
        model_name: CATALOG_RANKER_MODEL,
        model_version: '1',
        batch_size: 64,
        deadline_ms: 200,
        endpoints: [{ target: targets.modelServer, percentage: 100 }],
        inputs: rankerInputs(),
        outputs: [{ name: 'score', data_type: 'FP32', columns: ['ctr'] }],
      },
      {
        // PairWise and SlateWise: one call per pair or slate over its targets' rows, one answer row.
        name: 'slate_ranker',
        model_name: CATALOG_SLATE_MODEL,
        model_version: '1',
        slate: true,
        deadline_ms: 200,
        endpoints: [{ target: targets.modelServer, percentage: 100 }],
        inputs: rankerInputs(),
        outputs: [
          { name: 'slate_score', data_type: 'FP32', columns: ['slate_ctr'] },
          { name: 'preference', data_type: 'FP32', columns: ['preference'] },
        ],
      },
    ],
    compute_components: [
      {
        name: 'blend',
        compute_id: BLEND_COMPUTE_ID,
        target: targets.computeServer,
        score_mapping: { ctr: 'ctr', popularity: 'category:stats:popularity' },
        output_column: 'final_score',
        data_type: 'FP32',
        deadline_ms: 200,
      },
    ],
    request_features: ['user_id'],
    // Point-wise rows answer ctr and final_score; pair and slate rows slate_ctr and preference.
    response: { columns: ['ctr', 'final_score', 'slate_ctr', 'preference'] },
  };
}

export const CATALOG_RECOMMENDER_ID = 'catalog_recommender';

/**
 * Retrieval and ranking in one call (docs/orchestrator.md "Retrieval"): candidates from the vss
 * demo's `catalog/products` (src/cli/vss-demo.ts; its product ids are the feature store's catalog
 * ids) like the item named by the context's `item_id` — the 100 nearest of all products (quota 40)
 * and the 20 nearest shoes (quota 10) — then the catalog ranker's features, model and blend; the
 * answer is the top 10 by `final_score`, with the ids, the retrieval score and the vss category.
 * A PointWise Predict with `user_id` and `item_id` in its context and no targets.
 */
export function catalogRecommenderConfig(targets: {
  modelServer: string;
  computeServer: string;
  /** The vss serving gRPC server, `host:port`. */
  vss: string;
}): ModelConfigInput {
  const ranker = catalogRankerConfig(targets);
  const retriever = (name: string, variant: string, k: number, quota: number) => ({
    name,
    target: targets.vss,
    entity: 'catalog',
    model: 'products',
    variant,
    query: { candidate_id_from: 'item_id' },
    k,
    quota,
    attributes: name === 'similar' ? [{ name: 'category', column: 'vss_category' }] : [],
  });
  return {
    ...ranker,
    model_config_id: CATALOG_RECOMMENDER_ID,
    // The point-wise part of the ranker: no slate model.
    component_dependency: {
      catalog_features: ['category_features', 'user_x_category', 'ranker'],
      user_features: ['ranker'],
      category_features: ['ranker', 'blend'],
      user_x_category: ['ranker'],
      ranker: ['blend'],
      blend: [],
    },
    model_serving_components: ranker.model_serving_components?.filter((m) => m.name === 'ranker'),
    request_features: ['user_id'],
    retrieval: {
      // Room for a first call that also connects, as the components' 200 ms.
      deadline_ms: 500,
      retrievers: [retriever('similar', 'all', 100, 40), retriever('similar_shoes', 'shoes', 20, 10)],
    },
    response: {
      columns: ['final_score', 'ctr', 'retrieval_score', 'vss_category'],
      sort_by: { column: 'final_score', order: 'desc' },
      limit: 10,
    },
  };
}
